"""Encryption at rest: INFRAGRAPH_ENCRYPTION_KEY (README, "Secrets and encryption at rest").

With a key, what would give a secret away is sealed with AES-256-GCM (the
`cryptography` library) before it reaches the database: raw state chunks, the values
Terraform marks sensitive (and those secret by convention), sensitive outputs, a
version's MD5 and the database-kept IaC hash key. Hashes that could confirm a guess
(chunk dedup keys, content hashes of rows holding secrets) become keyed hashes.

A sealed value is `SEALED`, the key's id, a random nonce, then the ciphertext and its
tag. The key id lets `infragraph rotate-key` (app/rotate.py) tell values sealed under
the current key from older ones, and lets readers open either while a rotation runs
(INFRAGRAPH_ENCRYPTION_KEY_OLD). Every value is sealed with a context (the state's id,
or a fixed label) as associated data: a sealed value moved to another state or column
fails to open rather than being read as its neighbour's.

The server holds one keyring for the process (`use`, `keyring`): the graph layer reads
and writes through it without threading it through every call.
"""

import base64
import binascii
import contextlib
import hashlib
import hmac
import os
from collections.abc import Iterator

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from app.errors import AppError

KEY_BYTES = 32
KEY_ID_BYTES = 4
NONCE_BYTES = 12
# The first byte of a sealed value. No clear value stored where sealed ones may be
# starts with it: JSON starts with a printable character, a zstd frame with 0x28;
# fixed-size binary values (an MD5, the IaC key) are told apart by their length.
SEALED = b"\x01"
SEALED_HEAD = len(SEALED) + KEY_ID_BYTES


class KeyFormatError(ValueError):
    """A key setting that is not 32 bytes in base64 or hex; the message never holds it."""


class UnknownKey(AppError):
    """A value sealed under a key this process does not have (or damaged): the server
    is misconfigured, not the request; answered 503 with the reason."""

    code = "ENCRYPTION_KEY"
    status = 503


def parse_key(raw: str, name: str) -> bytes:
    """The 32 bytes of a key given as base64 (standard or URL-safe) or hex."""
    text = raw.strip()
    decoded: bytes | None = None
    if len(text) == 2 * KEY_BYTES:
        with contextlib.suppress(ValueError):
            decoded = bytes.fromhex(text)
    if decoded is None:
        with contextlib.suppress(binascii.Error, ValueError):
            decoded = base64.b64decode(
                text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4), validate=True
            )
    if decoded is None or len(decoded) != KEY_BYTES:
        raise KeyFormatError(
            f"{name} must be {KEY_BYTES} random bytes in base64 (44 characters) or hex "
            f"(64 characters), e.g. from `openssl rand -base64 32`; the value given is not"
        )
    return decoded


def _derive(secret: bytes, label: bytes) -> bytes:
    return hmac.new(secret, b"infragraph " + label, hashlib.sha256).digest()


class Key:
    """One key: its id, its cipher and the key of its keyed hashes (both derived)."""

    def __init__(self, secret: bytes) -> None:
        self.id = _derive(secret, b"key id")[:KEY_ID_BYTES]
        self.aead = AESGCM(secret)
        self.mac_key = _derive(secret, b"mac")

    def seal(self, plain: bytes, context: bytes) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return SEALED + self.id + nonce + self.aead.encrypt(nonce, plain, context)


class Keyring:
    """The current key (None: state is stored in clear) and the previous one, which
    only opens values (during a rotation)."""

    def __init__(self, current: bytes | None = None, old: bytes | None = None) -> None:
        self.current = Key(current) if current is not None else None
        keys = [k for k in (self.current, Key(old) if old is not None else None) if k]
        self._by_id = {k.id: k for k in keys}

    @property
    def encrypting(self) -> bool:
        return self.current is not None

    @property
    def prefix(self) -> bytes | None:
        """How values sealed under the current key begin; None without a key."""
        return SEALED + self.current.id if self.current else None

    def seal(self, plain: bytes, context: bytes) -> bytes:
        """`plain` sealed under the current key; `plain` itself without a key."""
        return self.current.seal(plain, context) if self.current else plain

    def open(self, stored: bytes, context: bytes) -> bytes:
        """The clear bytes of a value `seal` returned (sealed or not)."""
        if stored[:1] != SEALED:
            return stored
        return self._open(stored, context)

    def open_fixed(self, stored: bytes, size: int, context: bytes) -> bytes:
        """Like `open`, for a binary value of `size` bytes when clear (any first byte)."""
        return stored if len(stored) == size else self._open(stored, context)

    def _open(self, stored: bytes, context: bytes) -> bytes:
        key = self._by_id.get(stored[len(SEALED) : SEALED_HEAD])
        if key is None:
            raise UnknownKey(
                "a value is sealed under a key this server does not have: set "
                "INFRAGRAPH_ENCRYPTION_KEY (or INFRAGRAPH_ENCRYPTION_KEY_OLD while a rotation "
                "runs) to the key that sealed it"
            )
        nonce = stored[SEALED_HEAD : SEALED_HEAD + NONCE_BYTES]
        try:
            return key.aead.decrypt(nonce, stored[SEALED_HEAD + NONCE_BYTES :], context)
        except InvalidTag:
            raise UnknownKey(
                "a sealed value does not open: damaged, or moved from elsewhere"
            ) from None

    def mac(self, data: bytes | memoryview) -> bytes:
        """A hash of `data` that confirms no guess without the key: HMAC-SHA256 under the
        current key; plain SHA-256 without one (the data is then stored in clear anyway)."""
        if self.current is None:
            return hashlib.sha256(data).digest()
        return hmac.new(self.current.mac_key, data, hashlib.sha256).digest()


_keyring = Keyring()


def keyring() -> Keyring:
    return _keyring


def use(ring: Keyring) -> None:
    """Make `ring` the process's keyring (the server at start-up, the CLI, tests)."""
    global _keyring
    _keyring = ring


@contextlib.contextmanager
def using(ring: Keyring) -> Iterator[Keyring]:
    """`ring` as the process's keyring for a block, then the previous one again."""
    previous = _keyring
    use(ring)
    try:
        yield ring
    finally:
        use(previous)
