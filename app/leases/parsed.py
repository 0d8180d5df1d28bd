"""Parsed states kept between merged writes, by the MD5 of their bytes.

A merged write parses the head, the lease's snapshot and the body (app/leases/merge.py):
three parses of a big state where a plain POST makes one. The head a merge leaves is the
next merge's head, and a lease's snapshot is often another's too (leases of one plan
round share their base), so both are kept, parsed, a few at a time, bounded by the size
of their bytes. A head is handed out once (the merge patches it in place); a snapshot
is never changed, so it stays.
"""

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from app.config import MIB

MAX_BYTES = 32 * MIB  # of JSON kept parsed, heads and snapshots together

Document = dict[str, Any]


class _Kept:
    def __init__(self) -> None:
        self.items: OrderedDict[tuple[str, bytes], tuple[int, Document]] = OrderedDict()
        self.size = 0

    def put(self, kind: str, md5: bytes, size: int, document: Document) -> None:
        if size > MAX_BYTES:
            return
        key = (kind, md5)
        if key in self.items:
            self.size -= self.items.pop(key)[0]
        self.items[key] = (size, document)
        self.size += size
        while self.size > MAX_BYTES:
            self.size -= self.items.popitem(last=False)[1][0]

    def take(self, kind: str, md5: bytes) -> Document | None:
        found = self.items.pop((kind, md5), None)
        if found is None:
            return None
        self.size -= found[0]
        return found[1]

    def get(self, kind: str, md5: bytes) -> Document | None:
        found = self.items.get((kind, md5))
        if found is None:
            return None
        self.items.move_to_end((kind, md5))
        return found[1]


_kept = _Kept()


def take_head(md5: bytes) -> Document | None:
    """The head whose bytes have this MD5, parsed, if kept: the caller's to change
    (taken out of what is kept)."""
    return _kept.take("head", md5)


def keep_head(md5: bytes, size: int, document: Document) -> None:
    """A merged version's document, by the MD5 and size of its bytes: the next merge's
    head, likely."""
    _kept.put("head", md5, size, document)


def snapshot(data: bytes, parse: Callable[[bytes], Document]) -> Document:
    """A snapshot parsed, never to be changed by the caller."""
    md5 = hashlib.md5(data).digest()
    found = _kept.get("snapshot", md5)
    if found is None:
        found = parse(data)
        _kept.put("snapshot", md5, len(data), found)
    return found


def keep_snapshot(md5: bytes, size: int, document: Document) -> None:
    """A body written under a lease, by the MD5 and size of its bytes: its next
    snapshot."""
    _kept.put("snapshot", md5, size, document)
