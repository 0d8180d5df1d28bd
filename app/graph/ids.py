"""Time-ordered UUIDs (the UUIDv7 layout) for rows written in bulk.

Random v4 keys scatter a 100,000-row COPY across every page of the primary
key and edge indexes; keys that grow in write order append instead (twice as
fast to load here). The ids stay unguessable enough: 62+ random bits.

They are asyncpg's UUIDs (a subclass of uuid.UUID, what it reads back): made from
their bytes in C, 72 bytes each where a uuid.UUID and its int take 100, and faster to
make; a big write holds one for every instance it writes.
"""

import secrets
import time
import uuid

from asyncpg.pgproto.pgproto import UUID as _StoredUUID

_VERSION_7 = 0x7 << 76
_VARIANT = 0b10 << 62
_LOW_62 = (1 << 62) - 1


def time_ordered_ids(count: int) -> list[uuid.UUID]:
    """`count` UUIDs in increasing order: a ms timestamp, then a random start plus a counter."""
    head = (time.time_ns() // 1_000_000) << 80 | _VERSION_7 | _VARIANT
    start = secrets.randbits(64)  # leaves room for 2^10 * 2^64 ids below the 74-bit limit
    return [
        _StoredUUID((head | (counter >> 62) << 64 | (counter & _LOW_62)).to_bytes(16, "big"))
        for counter in range(start, start + count)
    ]
