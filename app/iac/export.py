"""Export: one system's share of a scope as an IaC document (iac.md, "Export").

`export_document` is pure (live snapshot, state rows and records in, JSONL bytes out);
`export_scope` reads those three in one REPEATABLE READ, read-only transaction and calls
it. Export writes nothing and creates no state rows. The document carries refs, never
IDs, so it plans into another scope as well as back into this one.

Decisions where the spec is silent:

- What is exported: every live resource that no other system claims (no state row of
  another system names its ID), whose table is exported, and whose references all
  resolve to exported resources (a reference column's target table, a view's columns,
  a public read's view, each table of an insight selection). Anything else would
  reach into another system's resources or fail to plan; left out, it is merely
  "missing from the document", which changes nothing. Also left out, as the document
  cannot express them: a grant whose principal is not a document principal (the
  catalog refuses those now; rows written before may hold one).
- Refs: a resource keeps the ref of its state row in this system while that row still
  reads as this kind under the table's current ref. Any other resource gets a generated
  ref: the slug of its name (accents folded, lowercase, each run of other characters
  one `_`, trimmed), with `{first letter of the kind}_` prepended when it does not start
  with a letter; the kind itself when nothing is left or the kind has no name (rule,
  trigger, a view without one); a public read's own `ref` stands for its name. On
  collision `_2`, `_3`, ... Generated refs never take a ref of this system's state,
  orphaned ones included (reusing one would bind the resource to a dead ID), nor the
  reserved `client_access`, nor the live ref of a public read of the same table (its
  identity, by which plan adopts it: the other kinds step aside). They are given in
  snapshot order: kinds in catalog order (tables, columns, rules, triggers, views, ...),
  each kind in creation order.
- Fields: each resource's authored fields (`fields.authored_live`), without null ones
  and without values the document cannot hold (e.g. a view filter that is a number;
  column options other than a select's `values` or a reference's `target`); `system:*`
  tags are reserved and dropped. A left-out field is unmanaged, never reset.
- Line order: the header; per table (creation order) the table, then its sub-resources
  in kind order; commands; insight selections; then the records, table by table, each
  table's in creation order (seq).
- Record `key`: the record's values of the table's `unique` columns when it has any
  non-null one, else all its values; only scalar values of non-reference columns count
  (a key holds scalars, and a record ID is not portable). A record with nothing to key
  on, or with the key of an earlier record of its table (the document could not tell
  them apart), is left out. `values` holds every value by column ref (the key's too).
- A reference value (a record ID of the source scope) is written as the referenced
  record's `key` object, e.g. `{"name": "Acme"}`; apply resolves it in the target
  table. A reference to a record that is not exported is left out.
"""

import functools
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import asyncpg

from app.catalog.kinds import SYSTEM_TAG_PREFIX
from app.catalog.records import list_records_by_key
from app.catalog.schema import PRINCIPAL, REF, Problems
from app.catalog.snapshot import load_scope_snapshot
from app.errors import BadInput
from app.iac.exactjson import canonical
from app.iac.fields import RefIndex, authored_live
from app.iac.model import TABLE_SPACE_KINDS, qualify
from app.iac.rules import COMMAND_REF, SPEC_FIELDS, SYSTEM
from app.iac.state import StateRow, rows_of, state_map
from app.jsonutil import dumps

VERSION: Final = 1
# The options key a document allows per column type; every other key is left out.
_OPTION_OF_TYPE: Final = {"select": "values", "reference": "target"}
_SCALARS: Final = (str, int, float, bool)
_SCOPE_KINDS: Final = ("command", "insight_selection")
MaybeLine = dict[str, Any] | None  # a document line, or None: the resource is left out


def _slug(name: str) -> str:
    """Lowercase [a-z0-9_]: accents folded, each run of anything else one `_`, trimmed."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    out: list[str] = []
    for char in folded:
        if char.isalnum():
            out.append(char)
        elif out and out[-1] != "_":
            out.append("_")
    return "".join(out).strip("_")


def generated_ref(kind: str, resource: Mapping[str, Any]) -> str:
    """The base ref of an unmanaged resource (before `_2`, `_3`... on collision)."""
    name = resource.get("ref" if kind == "public_read" else "name")
    slug = _slug(name) if isinstance(name, str) else ""
    if not slug:
        return kind
    return slug if slug[0].isalpha() else f"{kind[0]}_{slug}"


def _claims(rows: Iterable[StateRow]) -> dict[str, str]:
    """Live resource ID -> the system whose state names it."""
    return {row.resource_id: row.system for row in rows}


def exported_tables(
    system: str, snapshot: Iterable[Mapping[str, Any]], rows: Iterable[StateRow]
) -> list[str]:
    """IDs of the tables no other system claims, in snapshot order."""
    claims = _claims(rows)
    return [
        r["id"] for r in snapshot if r["kind"] == "table" and claims.get(r["id"], system) == system
    ]


def _spec(kind: str, live: Mapping[str, Any], refs: RefIndex, system: str) -> dict[str, Any]:
    """A resource's authored fields that a document can hold (see the module docstring)."""
    authored = authored_live(kind, live, refs, system)
    if kind == "table":
        authored["tags"] = [t for t in authored["tags"] if not t.startswith(SYSTEM_TAG_PREFIX)]
    elif kind == "column":
        allowed = _OPTION_OF_TYPE.get(live["type"])
        authored["options"] = {k: v for k, v in authored["options"].items() if k == allowed}
    fields = SPEC_FIELDS[kind]
    spec = {}
    for name, value in authored.items():
        problems = Problems(collect=True)
        if value is not None:
            fields[name].check(value, name, problems)
            if not problems.messages:
                spec[name] = value
    return spec


def _record_key(
    columns: Sequence[tuple[Mapping[str, Any], str]], values: Mapping[str, Any]
) -> dict[str, Any]:
    """The key of a record (module docstring): unique columns' scalars, else all scalars."""
    scalars = [
        (column["unique"], ref, value)
        for column, ref in columns
        if column["type"] != "reference" and type(value := values.get(column["key"])) in _SCALARS
    ]
    unique = [entry for entry in scalars if entry[0]]
    return {ref: value for _, ref, value in unique or scalars}


class _Export:
    """One pass over the snapshot in kind order: a resource is exported once everything
    it refers to is (all of those come earlier), and only then gets its ref."""

    def __init__(self, system: str, rows: Sequence[StateRow]) -> None:
        self.system = system
        self.claims = _claims(rows)
        own = [row for row in rows if row.system == system]
        survivors, _ = state_map(own)
        self.state = {row.resource_id: row for row in survivors.values()}
        self.taken = {row.ref for row in own}  # qualified refs generated ones must avoid
        # table ID -> its public reads' own refs: their identity (plan adopts a public read
        # by its ref), so other kinds of the table never take them
        self.reserved: dict[str, set[str]] = {}
        self.refs = RefIndex()
        self.table_lines: dict[str, list[dict[str, Any]]] = {}  # table ID -> its lines
        self.scope_lines: list[dict[str, Any]] = []
        # table ID -> its exported columns with their refs, in creation order
        self.columns: dict[str, list[tuple[Mapping[str, Any], str]]] = {}

    def add(self, resource: Mapping[str, Any]) -> None:
        kind = resource["kind"]
        if self.claims.get(resource["id"], self.system) != self.system:
            return  # another system's
        if not self._resolves(resource):
            return
        if kind == "table":
            self._table(resource)
            return
        if kind in _SCOPE_KINDS:
            table, group = None, self.scope_lines
        elif resource["table_id"] in self.table_lines:
            table, group = (
                self.refs.tables[resource["table_id"]],
                self.table_lines[resource["table_id"]],
            )
        else:
            return  # its table is not exported
        line = _LINES[kind](self, resource, table)
        if line is not None:
            group.append(line)

    def _resolves(self, resource: Mapping[str, Any]) -> bool:
        """Whether every resource it refers to by ID is exported (those come earlier)."""
        match resource["kind"]:
            case "column" if resource["type"] == "reference":
                return resource["options"].get("table") in self.refs.tables
            case "view":
                return all(c in self.refs.columns for c in resource["columns"])
            case "insight_selection":
                return all(t in self.refs.tables for t in resource["tables"])
            case "public_read":
                return resource["view"] is None or resource["view"] in self.refs.views
        return True

    def _ref(self, kind: str, resource: Mapping[str, Any], table: str | None = None) -> str:
        """The resource's ref in this system's state, or a fresh generated one."""
        qualified: Callable[[str], str] = functools.partial(qualify, kind, table=table)
        pattern = COMMAND_REF if kind == "command" else REF
        row = self.state.get(resource["id"])
        if row is not None and row.resource_type == kind:
            prefix = qualified("")
            local = row.ref[len(prefix) :]
            if row.ref.startswith(prefix) and pattern.fullmatch(local):
                return local
        base = generated_ref(kind, resource)
        reserved = (
            self.reserved.get(resource["table_id"], set()) if kind != "public_read" else set()
        )
        ref, count = base, 1
        while (
            qualified(ref) in self.taken
            or ref in reserved
            or (kind in TABLE_SPACE_KINDS and ref == "client_access")
        ):
            count += 1
            ref = f"{base}_{count}"
        self.taken.add(qualified(ref))
        return ref

    def _spec(self, kind: str, resource: Mapping[str, Any]) -> dict[str, Any]:
        return _spec(kind, resource, self.refs, self.system)

    def _table(self, table: Mapping[str, Any]) -> None:
        """A table opens its group of lines (its sub-resources follow it)."""
        ref = self._ref("table", table)
        self.refs.tables[table["id"]] = ref
        self.columns[table["id"]] = []
        spec = self._spec("table", table)
        self.table_lines[table["id"]] = [{"kind": "table", "ref": ref, "spec": spec}]

    # --- one line per resource of the other kinds, or None when it is left out ---------
    # (`table`: the parent table's ref; None for command and insight_selection)

    def _with_ref(self, resource: Mapping[str, Any], table: str | None) -> MaybeLine:
        """Column, rule, trigger, view, command: ref and spec."""
        kind = resource["kind"]
        ref = self._ref(kind, resource, table)
        if kind == "column":
            self.refs.columns[resource["id"]] = ref
            self.columns[resource["table_id"]].append((resource, ref))
        elif kind == "view":
            self.refs.views[resource["id"]] = ref
        parent = {} if table is None else {"table": table}
        return {"kind": kind, **parent, "ref": ref, "spec": self._spec(kind, resource)}

    def _grant(self, grant: Mapping[str, Any], table: str | None) -> MaybeLine:
        principal = grant["principal"]
        if not PRINCIPAL.fullmatch(principal):
            return None
        spec = self._spec("grant", grant)
        return {"kind": "grant", "table": table, "principal": principal, "spec": spec}

    def _client_access(self, access: Mapping[str, Any], table: str | None) -> MaybeLine:
        return {
            "kind": "client_access",
            "table": table,
            "spec": self._spec("client_access", access),
        }

    def _insight_selection(self, selection: Mapping[str, Any], table: str | None) -> MaybeLine:
        authored = authored_live("insight_selection", selection, self.refs, self.system)
        return {"kind": "insight_selection", "chatroom": selection["chatroom"], **authored}

    def _public_read(self, public_read: Mapping[str, Any], table: str | None) -> MaybeLine:
        ref = self._ref("public_read", public_read, table)
        view = authored_live("public_read", public_read, self.refs, self.system)["view"]
        line = {"kind": "public_read", "table": table, "ref": ref}
        return line if view is None else {**line, "view": view}

    # --- records --------------------------------------------------------------------------

    def records(self, records: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
        """Record lines of the exported tables; reference values as the target's key."""
        kept: list[tuple[str, str, Mapping[str, Any], dict[str, Any]]] = []
        key_of: dict[str, dict[str, Any]] = {}  # record ID -> its key
        for table_id, table_ref in self.refs.tables.items():
            seen: set[bytes] = set()
            for record in records.get(table_id, ()):
                key = _record_key(self.columns[table_id], record["values"])
                identity = canonical(key)
                if key and identity not in seen:
                    seen.add(identity)
                    key_of[str(record["id"])] = key
                    kept.append((table_id, table_ref, record["values"], key))
        lines = []
        for table_id, table_ref, stored, key in kept:
            values = {}
            for column, ref in self.columns[table_id]:
                value = stored.get(column["key"])
                if value is not None and column["type"] == "reference":
                    value = key_of.get(value)
                if value is not None:
                    values[ref] = value
            lines.append({"kind": "record", "table": table_ref, "key": key, "values": values})
        return lines


_LINES: Final[dict[str, Callable[[_Export, Mapping[str, Any], str | None], MaybeLine]]] = {
    "column": _Export._with_ref,
    "rule": _Export._with_ref,
    "trigger": _Export._with_ref,
    "view": _Export._with_ref,
    "grant": _Export._grant,
    "client_access": _Export._client_access,
    "command": _Export._with_ref,
    "insight_selection": _Export._insight_selection,
    "public_read": _Export._public_read,
}


def export_document(
    system: str,
    snapshot: Sequence[Mapping[str, Any]],
    rows: Sequence[StateRow],
    records: Mapping[str, Sequence[Mapping[str, Any]]],
) -> bytes:
    """The document of `system` (pure; same inputs, same bytes).

    `snapshot`: load_scope_snapshot's dicts (kinds in catalog order, each in creation
    order); `rows`: the scope's state rows of every system; `records`: table ID -> its
    records ({"id", "values" by column key}) in creation order, for the exported tables
    (list_records_by_key). Raises BadInput for a system name a document cannot carry."""
    if not SYSTEM.fullmatch(system):
        raise BadInput(f"system {system!r} must match {SYSTEM.pattern}", {"system": system})
    export = _Export(system, rows)
    for resource in snapshot:
        if resource["kind"] == "public_read" and REF.fullmatch(resource["ref"]):
            export.reserved.setdefault(resource["table_id"], set()).add(resource["ref"])
    for resource in snapshot:
        export.add(resource)
    lines: list[dict[str, Any]] = [{"kind": "header", "system": system, "version": VERSION}]
    for group in export.table_lines.values():
        lines += group
    lines += export.scope_lines
    lines += export.records(records)
    return b"".join(dumps(line) + b"\n" for line in lines)


async def export_scope(conn: asyncpg.Connection, scope_id: Any, system: str) -> bytes:
    """Export `system` from a scope, read in one consistent snapshot; writes nothing.
    `conn` must not be inside a transaction of another isolation level."""
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        snapshot = await load_scope_snapshot(conn, scope_id)
        rows = await rows_of(conn, scope_id, None)
        records = await list_records_by_key(conn, exported_tables(system, snapshot, rows))
    return export_document(system, snapshot, rows, records)
