"""The JSON Schema of one document line, from the same rules the parser checks
(rules.py, itself from the catalog's kinds), so editors can check documents as they
are written. `uv run python -m app.iac.jsonschema` writes it to iac.schema.json (a test
checks the file is current).

It says what each line's fields may hold. What needs more than one line (references
between lines, duplicates, record values against their column) or more than one field
(no spec with state absent, a column's options against its type) is the parser's.
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.catalog import schema as s
from app.iac.rules import HEADER_FIELDS, LINE_RULES, RECORD_FIELDS, LineRule

SCHEMA_FILE = Path(__file__).resolve().parent.parent.parent / "iac.schema.json"


def _object(kind: str, fields: Mapping[str, s.Type], required: tuple[str, ...]) -> dict[str, Any]:
    properties = {name: t.schema for name, t in fields.items()}
    properties["kind"] = {"const": kind}
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _line(kind: str, rule: LineRule) -> dict[str, Any]:
    line = _object(kind, rule.fields, rule.required)
    if rule.spec is not None:
        line["properties"]["spec"] = rule.spec.schema
    else:
        del line["properties"]["spec"]
    return line


def document_line_schema() -> dict[str, Any]:
    """The schema every line of a document (JSONL) satisfies."""
    lines = [
        _object("header", HEADER_FIELDS, ("kind", "system", "version")),
        *(_line(kind, rule) for kind, rule in LINE_RULES.items()),
        _object("record", RECORD_FIELDS, ("kind", "table", "key")),
    ]
    lines[0]["properties"]["version"] = {"const": 1}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "infragraph IaC document line",
        "oneOf": lines,
    }


def schema_text() -> str:
    return json.dumps(document_line_schema(), indent=2) + "\n"


def main() -> None:
    SCHEMA_FILE.write_text(schema_text())
    print(f"wrote {SCHEMA_FILE}")


if __name__ == "__main__":
    main()
