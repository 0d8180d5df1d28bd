"""Parsed states kept between merged writes, by the MD5 of their bytes.

A merged write parses the head, the lease's snapshot and the body (app/leases/merge.py):
three parses of a big state where a plain POST makes one. The head a merge leaves is the
next merge's head, and a lease's snapshot is often another's too (leases of one plan
round share their base, which is the head too until the first of them writes), so both
are kept, parsed, a few at a time, bounded by the size of their bytes. None is ever
changed: a merge shares the head's unchanged parts (app/leases/merge.py). So are the
bytes of a version the leases of a round read (their snapshot until they write), by
its id.
"""

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from uuid import UUID

from app.config import MIB

MAX_BYTES = 32 * MIB  # of JSON kept, parsed or not, heads, snapshots and bytes together

Document = dict[str, Any]
# a snapshot: the document, and its resources' JSON (app/leases/merge.py: encoded)
Snapshot = tuple[Document, Any]


class _Kept:
    """Used from the event loop and from worker threads."""

    def __init__(self) -> None:
        self.items: OrderedDict[tuple[str, bytes], tuple[int, Any]] = OrderedDict()
        self.size = 0
        self.lock = threading.Lock()

    def put(self, kind: str, md5: bytes, size: int, document: Any) -> None:
        if size > MAX_BYTES:
            return
        key = (kind, md5)
        gone = []  # freed out of the lock (a big document takes a while)
        with self.lock:
            if key in self.items:
                self.size -= self.items[key][0]
                gone.append(self.items.pop(key))
            self.items[key] = (size, document)
            self.size += size
            while self.size > MAX_BYTES:
                gone.append(self.items.popitem(last=False)[1])
                self.size -= gone[-1][0]
        del gone

    def get(self, kind: str, md5: bytes) -> Any:
        with self.lock:
            found = self.items.get((kind, md5))
            if found is None:
                return None
            self.items.move_to_end((kind, md5))
            return found[1]


_kept = _Kept()


def head(md5: bytes) -> Document | None:
    """The version whose bytes have this MD5, parsed, if kept (as a head or a snapshot):
    never to be changed by the caller."""
    found: Document | None = _kept.get("head", md5)
    if found is None and (snapshot := _kept.get("snapshot", md5)) is not None:
        found = snapshot[0]
    return found


def keep_head(md5: bytes, size: int, document: Document) -> None:
    """A merged version's document, by the MD5 and size of its bytes: the next merge's
    head, likely."""
    _kept.put("head", md5, size, document)


_guard = threading.Lock()
_parsing: dict[bytes, threading.Lock] = {}  # a lock per snapshot being parsed


def snapshot(data: bytes, parse: Callable[[bytes], Snapshot]) -> Snapshot:
    """A snapshot parsed (and its resources' JSON), never to be changed by the caller.
    Called from worker threads:
    several writes needing one snapshot at once (leases of one plan round writing
    together) wait for one parse of it."""
    md5 = hashlib.md5(data).digest()
    found: Snapshot | None = _kept.get("snapshot", md5)
    if found is not None:
        return found
    with _guard:
        lock = _parsing.setdefault(md5, threading.Lock())
    try:
        with lock:
            found = _kept.get("snapshot", md5)
            if found is None:
                found = parse(data)
                _kept.put("snapshot", md5, len(data), found)
            return found
    finally:
        with _guard:
            if _parsing.get(md5) is lock and not lock.locked():
                del _parsing[md5]


def keep_snapshot(md5: bytes, size: int, snapshot: Snapshot) -> None:
    """A body written under a lease, by the MD5 and size of its bytes: its next
    snapshot."""
    _kept.put("snapshot", md5, size, snapshot)


def version_bytes(version_id: UUID) -> bytes | None:
    """A version's bytes, if kept: what the leases of one plan round read (GET) first."""
    found: bytes | None = _kept.get("bytes", version_id.bytes)
    return found


def keep_version_bytes(version_id: UUID, data: bytes) -> None:
    _kept.put("bytes", version_id.bytes, len(data), data)
