"""IaC documents of any size, for the plan case."""

from typing import Any

from app.jsonutil import dumps

COLUMN_TYPES = ("text", "number", "boolean", "date", "datetime", "json")
# per table: the table, 12 columns, 2 views, 2 grants, client access, a rule, a public read
RESOURCES_PER_TABLE = 20


def generate_document(tables: int, system: str = "bench") -> bytes:
    """A document declaring `tables` x 20 resources, with two records per table."""
    lines: list[dict[str, Any]] = [{"kind": "header", "system": system, "version": 1}]
    for t in range(tables):
        table = f"t{t:05d}"
        lines.append(
            {
                "kind": "table",
                "ref": table,
                "spec": {
                    "name": f"Table {t}",
                    "description": f"generated table {t}",
                    "settings": {"color": "blue", "page_size": 50},
                    "tags": ["bench"],
                },
            }
        )
        columns = [f"c{c:02d}" for c in range(12)]
        for c, ref in enumerate(columns):
            spec: dict[str, Any] = {"name": f"Column {c}", "type": COLUMN_TYPES[c % 6]}
            if c == 0:
                spec |= {"type": "text", "required": True, "unique": True}
            lines.append({"kind": "column", "table": table, "ref": ref, "spec": spec})
        for v in range(2):
            view = {"name": f"View {v}", "columns": columns[v::2], "sort": columns[0]}
            lines.append({"kind": "view", "table": table, "ref": f"v{v}", "spec": view})
        for principal in ("sales", "ops"):
            grant = {"permissions": ["read", "write"] if principal == "ops" else ["read"]}
            lines.append({"kind": "grant", "table": table, "principal": principal, "spec": grant})
        lines.append({"kind": "client_access", "table": table, "spec": {"enabled": True}})
        lines.append(
            {"kind": "rule", "table": table, "ref": "r0", "spec": {"expression": "c00 != ''"}}
        )
        lines.append({"kind": "public_read", "table": table, "ref": "pub", "view": "v0"})
        for r in range(2):
            key = {"c00": f"row-{t}-{r}"}
            lines.append({"kind": "record", "table": table, "key": key, "values": {"c01": r}})
    return b"\n".join(dumps(line) for line in lines) + b"\n"
