"""OpenTofu's state encryption, as its `pbkdf2` key provider and `aes_gcm` method lay
it out (opentofu internal/encryption: base.go, state.go, keyprovider/pbkdf2,
method/aesgcm), to make the bodies an encrypting OpenTofu sends.

    {"serial": 3, "lineage": "…",
     "meta": {"key_provider.pbkdf2.<name>": base64(JSON of salt, iterations, hash, key length)},
     "encrypted_data": base64(nonce || AES-GCM ciphertext and tag of the plain state),
     "encryption_version": "v0"}

`[]byte` values are base64 (Go's encoding/json), the document is compact JSON.
OpenTofu derives the key once per run and seals every write with a fresh nonce.
"""

import base64
import functools
import json
import os
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA512
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

NONCE_BYTES = 12  # Go's cipher.NewGCM nonce size
KEY_BYTES = 32  # pbkdf2's default key length: AES-256
SALT_BYTES = 32  # pbkdf2's default salt length
ITERATIONS = 600_000  # pbkdf2's default


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class TofuEncryption:
    """`key_provider "pbkdf2" "<name>" { passphrase = ... }` + `method "aes_gcm"`."""

    def __init__(self, passphrase: str, name: str = "main") -> None:
        salt = os.urandom(SALT_BYTES)
        kdf = PBKDF2HMAC(algorithm=SHA512(), length=KEY_BYTES, salt=salt, iterations=ITERATIONS)
        self.cipher = AESGCM(kdf.derive(passphrase.encode()))
        self.meta_key = f"key_provider.pbkdf2.{name}"
        self.meta = {
            "salt": _b64(salt),
            "iterations": ITERATIONS,
            "hash_function": "sha512",
            "key_length": KEY_BYTES,
        }

    def envelope(self, plain: bytes) -> dict[str, Any]:
        """The document OpenTofu writes for the plain state `plain`, parsed."""
        passthrough = json.loads(plain)
        nonce = os.urandom(NONCE_BYTES)
        return {
            "serial": passthrough.get("serial"),
            "lineage": passthrough.get("lineage", ""),
            "meta": {self.meta_key: _b64(_compact(self.meta))},
            "encrypted_data": _b64(nonce + self.cipher.encrypt(nonce, plain, None)),
            "encryption_version": "v0",
        }

    def encrypt(self, plain: bytes) -> bytes:
        """The body OpenTofu sends for the plain state `plain`."""
        return _compact(self.envelope(plain))

    def decrypt(self, body: bytes) -> bytes:
        """The plain state inside an envelope this key sealed."""
        envelope = json.loads(body)
        meta = json.loads(base64.b64decode(envelope["meta"][self.meta_key]))
        assert meta == self.meta
        data = base64.b64decode(envelope["encrypted_data"])
        return self.cipher.decrypt(data[:NONCE_BYTES], data[NONCE_BYTES:], None)


@functools.cache
def tofu() -> TofuEncryption:
    """One key for the whole test session (deriving it takes a while, by design)."""
    return TofuEncryption("correct horse battery staple")


def altered(envelope: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`envelope` with keys replaced; a value of `...` removes the key."""
    kept = {key: value for key, value in envelope.items() if key not in changes}
    return kept | {key: value for key, value in changes.items() if value is not ...}
