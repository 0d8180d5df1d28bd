"""Digests of output values: what a consumer read (`state_links.outputs`) is compared
with the producer's outputs (`outputs.value_digest`) without reading either value.

With INFRAGRAPH_ENCRYPTION_KEY set, a digest is an HMAC-SHA256 under a key derived from
it, written `k{key id}:{hex}`: a dump holds no hash that confirms a guessed secret, and
a digest made under another key (before `infragraph rotate-key` reached it) is told
apart. Without a key, it is the MD5 of the value (everything is in clear then anyway).
The value hashed is its JSONB text, computed by PostgreSQL on both sides, so equal
values give equal digests whatever their spelling in a document.

The HMAC is computed in SQL from the key's inner and outer pads, given as parameters
(`sha256()` is built in; no extension needed).
"""

import hashlib
import hmac
from typing import Any
from uuid import UUID

import asyncpg

from app import crypto
from app.jsonutil import dumps

_BLOCK = 64  # SHA-256's block size
_LABEL = b"output digest"


def _pads(ring: crypto.Keyring) -> tuple[bytes, bytes, str] | None:
    if ring.current is None:
        return None
    key = hmac.new(ring.current.mac_key, _LABEL, hashlib.sha256).digest().ljust(_BLOCK, b"\0")
    inner = bytes(b ^ 0x36 for b in key)
    outer = bytes(b ^ 0x5C for b in key)
    return inner, outer, f"k{ring.current.id.hex()}:"


def digest_sql(expr: str, first: int) -> str:
    """SQL: the digest of the JSONB text `expr`, under the keyring `digest_args` is given;
    it takes parameters ${first} to ${first + 2}."""
    inner, outer, prefix = (f"${first + i}" for i in range(3))
    return f"""CASE WHEN {prefix}::text = '' THEN md5({expr})
                    ELSE {prefix}::text || encode(sha256({outer}::bytea || sha256(
                         {inner}::bytea || convert_to({expr}, 'UTF8'))), 'hex') END"""


def digest_args(ring: crypto.Keyring | None = None) -> tuple[bytes, bytes, str]:
    """The parameters of `digest_sql` for `ring` (the process's by default)."""
    pads = _pads(ring or crypto.keyring())
    return pads if pads is not None else (b"", b"", "")


def current_form(ring: crypto.Keyring | None = None) -> str:
    """A LIKE pattern of digests made as `ring` makes them (its key id; or an MD5)."""
    pads = _pads(ring or crypto.keyring())
    return f"{pads[2]}%" if pads is not None else "________________________________"


def python_digest(jsonb_text: str, ring: crypto.Keyring | None = None) -> str:
    """The digest `digest_sql` computes, for the JSONB text of a value (tests, checks)."""
    pads = _pads(ring or crypto.keyring())
    data = jsonb_text.encode()
    if pads is None:
        return hashlib.md5(data, usedforsecurity=False).hexdigest()
    inner, outer, prefix = pads
    return prefix + hashlib.sha256(outer + hashlib.sha256(inner + data).digest()).hexdigest()


async def write_value_digests(
    conn: asyncpg.Connection, state_id: UUID, serial: int, values: list[tuple[str, Any]]
) -> None:
    """`outputs.value_digest` of the outputs a version (`serial`) added, by name: their
    values are given (a sensitive one's is sealed apart from its row)."""
    await conn.execute(
        f"""UPDATE outputs o SET value_digest = {digest_sql("v.value::jsonb::text", 5)}
            FROM unnest($3::text[], $4::text[]) AS v (name, value)
            WHERE o.state_id = $1 AND o.serial_from = $2 AND o.serial_to IS NULL
              AND o.name = v.name""",
        state_id,
        serial,
        [name for name, _ in values],
        [dumps(value).decode() for _, value in values],  # JSON text: lists stay values
        *digest_args(),
    )
