"""OpenTofu's client-side state encryption: the envelope it sends instead of a state.

With `terraform { encryption { state { method = ... } } }` (OpenTofu 1.7+),
OpenTofu encrypts the whole v4 state and writes this JSON in its place
(opentofu internal/encryption, base.go and state.go):

    {"serial": 3, "lineage": "…",                    in the clear since OpenTofu 1.7.0
     "meta": {"key_provider.pbkdf2.main": "<base64>"},  per key provider, what derives the
                                                         key again (pbkdf2: salt, iterations)
     "encrypted_data": "<base64>",                     the method's output (aes_gcm: nonce,
                                                         ciphertext, tag)
     "encryption_version": "v0"}

The server cannot read the state inside and does not try. Only that exact
shape is an envelope; a body carrying an envelope's marks without its shape
is refused with the reason, and anything else is read as a v4 state.
"""

import binascii
from dataclasses import dataclass
from typing import Any

from app.process import gc_paused
from app.tfstate.parse import (
    NormalizedState,
    StateError,
    check_serial,
    json_type,
    load_document,
)
from app.tfstate.scan import ScannedState, scan_document

# The one envelope version OpenTofu writes (and reads)
ENCRYPTION_VERSION = "v0"
ENVELOPE_KEYS = ("serial", "lineage", "meta", "encrypted_data", "encryption_version")
# Keys only an envelope has: a body with either (and no v4 `version`) means to be one
_MARKS = ("encryption_version", "encrypted_data")


class EnvelopeError(StateError):
    """The body has an encrypted state's marks but not its shape; the message says why."""


@dataclass(frozen=True)
class EncryptedState:
    """What the server can know of an encrypted state: the envelope's clear fields."""

    serial: int | None  # None when the envelope has none (OpenTofu 1.7.0 pre-releases)
    lineage: str | None

    def as_version(
        self, current_serial: int | None, current_lineage: str | None, *, same_bytes: bool
    ) -> NormalizedState:
        """The version this envelope is stored as, after the state's current one (None:
        no version yet; `same_bytes`: the current one has these very bytes).

        Its serial and lineage are the envelope's. Without them it is numbered by
        arrival (the current serial + 1, or 1 for a first version; the current one
        again for the same bytes, so a retry stays one version) and keeps the
        state's lineage: the serial and lineage checks cannot apply to it.
        """
        serial = self.serial
        if serial is None:
            if current_serial is None:
                serial = 1
            else:
                serial = current_serial if same_bytes else current_serial + 1
        return NormalizedState(
            serial=serial,
            lineage=self.lineage or current_lineage or "",
            terraform_version=None,
            instances=[],
            outputs=[],
            encrypted=True,
        )


def parse_body(body: bytes | str) -> ScannedState | EncryptedState:
    """A state as POSTed: a v4 state (scanned: its instances are normalized by the write
    that needs them, app/tfstate/scan.py), or an OpenTofu encrypted state's envelope.
    Raises StateError (EnvelopeError for a malformed envelope) with the reason."""
    with gc_paused():
        doc = load_document(body)
        if "version" not in doc and any(mark in doc for mark in _MARKS):
            return parse_envelope(doc)
        return scan_document(doc)


def parse_envelope(doc: dict[str, Any]) -> EncryptedState:
    """Validate an envelope's exact shape and read its clear fields."""
    unexpected = [key for key in doc if key not in ENVELOPE_KEYS]
    if unexpected:
        raise EnvelopeError(
            f"unexpected key {unexpected[0]!r}: an encrypted state has only "
            + ", ".join(repr(k) for k in ENVELOPE_KEYS)
        )
    version = _required(doc, "encryption_version", "the encryption version")
    if not isinstance(version, str):
        raise EnvelopeError(f"'encryption_version' must be a string, got {json_type(version)}")
    if version != ENCRYPTION_VERSION:
        raise EnvelopeError(
            f"unsupported 'encryption_version' {version!r}: only {ENCRYPTION_VERSION!r} exists"
        )
    if not _base64(_required(doc, "encrypted_data", "the ciphertext"), "'encrypted_data'"):
        raise EnvelopeError("'encrypted_data' (the ciphertext) is empty")
    meta = _required(doc, "meta", "the key providers' metadata")
    if not isinstance(meta, dict):
        raise EnvelopeError(f"'meta' must be an object, got {json_type(meta)}")
    for key, value in meta.items():
        _base64(value, f"'meta' {key!r}")
    serial = doc.get("serial")
    if serial is not None:
        if not isinstance(serial, int) or isinstance(serial, bool):
            raise EnvelopeError(f"'serial' must be an integer or null, got {json_type(serial)}")
        check_serial(serial, "encrypted state", EnvelopeError)
    lineage = doc.get("lineage")
    if lineage is not None and not isinstance(lineage, str):
        raise EnvelopeError(f"'lineage' must be a string, got {json_type(lineage)}")
    return EncryptedState(serial=serial, lineage=lineage or None)


def _required(doc: dict[str, Any], key: str, what: str) -> Any:
    if key not in doc:
        raise EnvelopeError(f"missing {key!r} ({what})")
    return doc[key]


def _base64(value: Any, what: str) -> bytes:
    """The bytes of a base64 string as Go's encoding/json writes []byte (standard
    alphabet, padded)."""
    if not isinstance(value, str):
        raise EnvelopeError(f"{what} must be a base64 string, got {json_type(value)}")
    try:
        return binascii.a2b_base64(value.encode("ascii"), strict_mode=True)
    except (UnicodeEncodeError, binascii.Error):
        raise EnvelopeError(f"{what} is not base64 (standard alphabet, padded)") from None
