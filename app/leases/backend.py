"""Terraform's http backend under a lease (`/states/NAME?lease=ID`).

    GET     the lease's snapshot: the version its plan was made from until it writes,
            then what it last wrote (so a saved plan's staleness check passes while
            other leases write)
    LOCK    Terraform's lock, kept on the lease: beside other live leases; 409 with the
            writer's LockInfo while the state is locked whole
    POST    merged (app/leases/merge.py): what it changes against the snapshot, applied
            to the current version as the next one; 409 LEASE_CONFLICT with the
            addresses another writer changed since, nothing written
    UNLOCK  ends the lease

Each request renews the lease for its TTL; a request on a lease that ended (or another
token's) is refused. The write, like a whole-state one, holds the state's row
(FOR UPDATE) from reading which version is the head to storing the merged version:
merged writes of several leases follow one another, each on the head the previous one
left. What can be worked out before (the diff against the snapshot, and the merge on
a head that is still the head under the row) is. A change of instances where they are
is written from the head's rows and the changed instances alone
(app/graph/write/patch.py); the merged version's bytes are the merged document,
compact.
"""

import asyncio
import hashlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg
import zstandard

from app import crypto, jsonutil
from app.access import Principal
from app.errors import BadInput, Conflict, LeaseConflict, Locked, NotFound
from app.graph import raw
from app.graph.events import append_event
from app.graph.raw import Body
from app.graph.write import patch
from app.graph.write.version import Written, write_version
from app.leases import merge, parsed
from app.leases.store import (
    CONFLICT,
    LEASE_COLUMNS,
    MERGED,
    Lease,
    hold_state,
    not_the_holder,
    release,
)
from app.process import gc_paused
from app.tfstate import ScannedState
from app.tfstate.remote import Server
from app.tfstate.scan import ScannedInstance, scan_document


def lease_id_of(text: str) -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise BadInput(f"not a lease ID: {text!r}") from None


def _context(lease_id: UUID) -> bytes:
    return b"lease-snapshot:" + lease_id.bytes


async def renewed(conn: asyncpg.Connection, name: str, lease_id: UUID, who: Principal) -> Lease:
    """The live lease `lease_id` of state `name`, held by `who`, renewed for its TTL.
    Each statement names the state (on Citus, its shard), whose id is found first; the
    new expiry is worked out before the update (Citus evaluates now() only without
    column references in an UPDATE)."""
    record = None
    state_id = await conn.fetchval("SELECT id FROM states WHERE name = $1", name)
    ttl = await conn.fetchval(
        """SELECT ttl_seconds FROM leases
           WHERE id = $1 AND state_id = $2 AND expires_at > now() AND holder = $3""",
        lease_id,
        state_id,
        who.name,
    )
    if ttl is not None:
        record = await conn.fetchrow(
            f"""WITH renewed AS (
                    UPDATE leases l SET expires_at = now() + make_interval(secs => $4)
                    WHERE l.id = $1 AND l.state_id = $2 AND l.expires_at > now()
                      AND l.holder = $3
                    RETURNING l.*
                )
                SELECT {LEASE_COLUMNS} FROM renewed l JOIN states s ON s.id = l.state_id""",
            lease_id,
            state_id,
            who.name,
            float(ttl),
        )
    if record is not None:
        return Lease.of(record)
    other = await conn.fetchrow(
        f"""SELECT {LEASE_COLUMNS} FROM leases l JOIN states s ON s.id = l.state_id
            WHERE l.id = $1 AND s.name = $2 AND l.expires_at > now()""",
        lease_id,
        name,
    )
    if other is not None:
        raise not_the_holder(who, Lease.of(other), "use")
    raise Conflict(
        f"lease {lease_id} of state {name!r} has ended (released, unlocked or expired): "
        "take a new one from a new plan",
        {"state": name, "lease": str(lease_id)},
    )


async def snapshot(conn: asyncpg.Connection, lease: Lease) -> bytes:
    """What the lease's Terraform reads (GET)."""
    stored = await conn.fetchval(
        "SELECT snapshot FROM leases WHERE id = $1 AND state_id = $2", lease.id, lease.state_id
    )
    if stored is not None:
        return zstandard.decompress(crypto.keyring().open(stored, _context(lease.id)))
    return await _version_bytes(conn, lease.state_name, lease.base_serial)


async def _version_bytes(conn: asyncpg.Connection, name: str, serial: int | None) -> bytes:
    """A version's bytes: the leases of one plan round read the same base, kept
    (app/leases/parsed.py: version_bytes) after the first read."""
    version = await raw.raw_version(conn, name, serial, read=False)
    if version is None:
        raise NotFound(f"state {name!r} has no version {serial}: pruned while leased?")
    data = parsed.version_bytes(version.version_id)
    if data is None:
        data = await raw.whole_raw(conn, version)
        parsed.keep_version_bytes(version.version_id, data)
    return data


async def lock(conn: asyncpg.Connection, lease: Lease, info: dict[str, Any]) -> None:
    """Keep Terraform's lock `info` on the lease; Locked while the state is locked whole
    or another lock (another Terraform) holds the lease."""
    async with conn.transaction():
        state_id = await hold_state(conn, lease.state_name)
        writer = await conn.fetchrow(
            "SELECT lock_id, info FROM state_locks WHERE state_id = $1", state_id
        )
        if writer is not None:
            raise Locked(
                f"state {lease.state_name!r} is locked whole (ID {writer['lock_id']})",
                writer["info"],
            )
        held = await conn.fetchrow(
            "SELECT lock_id, lock_info FROM leases WHERE id = $1 AND state_id = $2 FOR UPDATE",
            lease.id,
            state_id,
        )
        if held is not None and held["lock_id"] not in (None, info["ID"]):
            raise Locked(
                f"lease {lease.id} is locked by another run (ID {held['lock_id']})",
                held["lock_info"],
            )
        await conn.execute(
            "UPDATE leases SET lock_id = $2, lock_info = $3 WHERE id = $1 AND state_id = $4",
            lease.id,
            info["ID"],
            info,
            state_id,
        )


async def unlock(
    conn: asyncpg.Connection, lease: Lease, lock_id: str | None, who: Principal
) -> None:
    """Terraform's UNLOCK under a lease ends it."""
    if lease.lock_id is not None and lock_id is not None and lock_id != lease.lock_id:
        raise Locked(
            f"lease {lease.id} is locked under another ID ({lease.lock_id})",
            lease.lock_info or {"ID": lease.lock_id},
        )
    await release(conn, lease.id, who=who, how="unlock")


@dataclass(frozen=True)
class MergedWrite:
    written: Written | None  # None: the body changed nothing against the snapshot
    serial: int
    changed: list[str]
    outside: list[str]  # changed, outside the lease's footprint


def _document(document: Any, what: str) -> dict[str, Any]:
    if not isinstance(document, dict) or document.get("version") != 4:
        raise BadInput(f"{what} is not a Terraform v4 state: leases merge plain v4 states")
    return document


def _stored(data: bytes, what: str) -> dict[str, Any]:
    """A version or snapshot this server stored (read strictly when it was POSTed)."""
    try:
        document = jsonutil.loads(data)
    except ValueError as exc:
        raise BadInput(f"{what} is not JSON: {exc}") from None
    return _document(document, what)


@dataclass(frozen=True)
class _Prepared:
    """What a write changes against its snapshot, worked out before the head is held."""

    snapshot: dict[str, Any]
    written: dict[str, Any]
    encoded: merge.Encoded  # the written document's resources' JSON (its next diff's)
    changes: merge.Changes
    sealed: bytes  # the body as the lease's next snapshot, compressed and sealed
    md5: bytes  # the body's


def _parsed_snapshot(data: bytes) -> parsed.Snapshot:
    document = _stored(data, "the lease's snapshot")
    return document, merge.encoded(document)


def _prepare(lease_id: UUID, snap: bytes, body: bytes, md5: bytes | None) -> _Prepared:
    """CPU-bound (off the event loop): parse the body (as strictly as any POSTed state)
    and the snapshot (one kept parsed is not parsed again: app/leases/parsed.py) and
    diff them."""
    # millions of objects that form no cycle: no collection walks them (as a POST's parse)
    with gc_paused():
        try:
            written = _document(jsonutil.read(body), "the body")
        except jsonutil.JsonInputError as exc:
            raise BadInput(f"the body is not JSON: {exc}") from None
        snapshot, known = parsed.snapshot(snap, _parsed_snapshot)
        encoded = merge.encoded(written)
        found = merge.changes(snapshot, written, (known, encoded))
    # compressed here (fast), stored as is: the TOAST's own compression is slow for MBs
    sealed = crypto.keyring().seal(zstandard.compress(body, 1), _context(lease_id))
    md5 = hashlib.md5(body).digest() if md5 is None else md5
    return _Prepared(snapshot, written, encoded, found, sealed, md5)


class _Hashed(ScannedState):
    """A scanned document whose instances were hashed already (before the state's row is
    held, where the write would hash them): each pass gives them again."""

    def __init__(self, state: ScannedState) -> None:
        self._hashed = list(state.instances())
        super().__init__(state.head, lambda: iter(()))

    def instances(self) -> Iterator[ScannedInstance]:
        return iter(self._hashed)


# Merged writes of each state under way in this process: while another is, the head
# will likely have moved by the time this one holds the state's row
_merging: Counter[str] = Counter()


@dataclass(frozen=True)
class _Attempt:
    """The prepared changes merged into one head version: the merged document, its bytes
    and its scan (what the write reads), unless it conflicts or changes nothing; and,
    when the change is of instances where they are, those alone (the write reads no
    other)."""

    head: raw.RawVersion
    merged: merge.Merged
    rendered: Body | None
    state: ScannedState | None
    in_place: patch.InPlace | None = None


def _merge(version: raw.RawVersion, head: bytes | dict[str, Any], ready: _Prepared) -> _Attempt:
    """CPU-bound: the prepared changes applied to the head, its bytes or kept parsed
    (off the event loop). The merged document is scanned as it is (the write's raw
    hashes are of its resources as parsed, which rendering and parsing again would give
    back): never parsed from its bytes. A change in place is scanned alone; any other,
    all of it (hashed here, before the state's row is held, when it can be)."""
    with gc_paused():
        if isinstance(head, dict):
            document = head
        else:
            document = _stored(head, "the current version")
            parsed.keep_head(version.md5, len(head), document)
        merged = merge.merge(document, ready.snapshot, ready.written, ready.changes)
        if merged.document is None:
            return _Attempt(version, merged, None, None)
        rendered = Body.of(jsonutil.dumps(merged.document))  # its MD5 too
        state = scan_document(merged.document)
        if merged.in_place is not None:
            changed = patch.in_place(
                state, version.version_id, merged.in_place, merged.changes.instances
            )
            if changed is not None:
                return _Attempt(version, merged, rendered, state, changed)
        return _Attempt(version, merged, rendered, _Hashed(state))


async def _attempt(
    conn: asyncpg.Connection, name: str, ready: _Prepared, held: _Attempt | None = None
) -> _Attempt:
    """The merge into the current version: `held`, when made on that version already."""
    version = await raw.raw_version(conn, name, read=False)
    if version is None:
        raise NotFound(f"state {name!r} has no version")
    if held is not None and held.head.version_id == version.version_id:
        return held
    kept = parsed.head(version.md5)
    head = kept if kept is not None else await raw.whole_raw(conn, version)
    return await asyncio.to_thread(_merge, version, head, ready)


async def merged_write(
    conn: asyncpg.Connection,
    lease: Lease,
    body: bytes | Body,
    *,
    who: Principal,
    keep_last: int | None = None,
    servers: Sequence[Server] = (),
) -> MergedWrite:
    """POST under `lease`: `body`'s changes against the snapshot, as the next version
    (a Body as received: its MD5 is known).

    LeaseConflict (recorded `lease-conflict`, nothing written) when another writer
    changed, since the snapshot, an instance or output `body` changes."""
    name = lease.state_name
    _merging[name] += 1
    try:
        return await _merged_write(conn, lease, body, who, keep_last, servers)
    finally:
        _merging[name] -= 1
        if not _merging[name]:
            del _merging[name]


async def _merged_write(
    conn: asyncpg.Connection,
    lease: Lease,
    body: bytes | Body,
    who: Principal,
    keep_last: int | None,
    servers: Sequence[Server],
) -> MergedWrite:
    # What the body changes is the lease's own business, and, when no other merged
    # write of the state is under way, the merge into the head is made on the head as
    # it is now: both before the state's row is held, so that merged writes of several
    # leases wait for one another the least. Under the row, the merge is made (again)
    # only if the head moved meanwhile, on the head the last merge kept parsed.
    data, md5 = (body.whole(), body.md5) if isinstance(body, Body) else (body, None)
    ready = await asyncio.to_thread(_prepare, lease.id, await snapshot(conn, lease), data, md5)
    alone = _merging[lease.state_name] == 1
    early = await _attempt(conn, lease.state_name, ready) if alone else None
    async with conn.transaction():
        state_id = await hold_state(conn, lease.state_name)
        attempt = await _attempt(conn, lease.state_name, ready, early)
        merged = attempt.merged
        changed = merged.changes.addresses()
        keys = {*lease.addresses, *(merge.OUTPUT_PREFIX + o for o in lease.outputs)}
        outside = [a for a in changed if a not in keys]
        if not merged.conflicts:
            return await _store(
                conn,
                lease,
                state_id,
                data,
                ready,
                attempt,
                changed,
                outside,
                who=who,
                keep_last=keep_last,
                servers=servers,
            )
    detail = {
        "at": "write",
        "lease": str(lease.id),
        "holder": lease.holder,
        "addresses": merged.conflicts,
    }
    await append_event(
        conn,
        state_name=lease.state_name,
        action=CONFLICT,
        actor=who.name,
        state_id=lease.state_id,
        detail=detail,
    )
    raise LeaseConflict(
        f"another writer changed {', '.join(merged.conflicts)} of state "
        f"{lease.state_name!r} since lease {lease.id} read it: nothing was written",
        {"state": lease.state_name, **detail},
    )


async def _store(
    conn: asyncpg.Connection,
    lease: Lease,
    state_id: UUID,
    body: bytes,
    ready: _Prepared,
    attempt: _Attempt,
    changed: list[str],
    outside: list[str],
    *,
    who: Principal,
    keep_last: int | None,
    servers: Sequence[Server],
) -> MergedWrite:
    await conn.execute(
        "UPDATE leases SET snapshot = $2, writes = writes + 1 WHERE id = $1 AND state_id = $3",
        lease.id,
        ready.sealed,
        lease.state_id,
    )
    if attempt.rendered is None or attempt.state is None:  # nothing changed (a retried POST)
        serial = await conn.fetchval(
            "SELECT max(serial) FROM state_versions WHERE state_id = $1", state_id
        )
        return MergedWrite(None, int(serial), [], [])
    detail = {"lease": str(lease.id), "merged": changed, "outside": outside}
    written = await write_version(
        conn,
        lease.state_name,
        attempt.rendered,
        actor=who.name,
        state=attempt.state,
        detail=detail,
        keep_last=keep_last,
        servers=servers,
        in_place=attempt.in_place,
    )
    await append_event(
        conn,
        state_name=lease.state_name,
        action=MERGED,
        actor=who.name,
        state_id=state_id,
        serial=written.serial,
        detail={**detail, "holder": lease.holder},
    )
    # the next merge's head, likely, and this lease's next snapshot
    assert attempt.merged.document is not None  # rendered from it
    parsed.keep_head(attempt.rendered.md5, attempt.rendered.size, attempt.merged.document)
    parsed.keep_snapshot(ready.md5, len(body), (ready.written, ready.encoded))
    return MergedWrite(written, written.serial, changed, outside)
