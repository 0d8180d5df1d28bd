"""Write the SDL to schema.graphql: `uv run python -m app.api.export` (a test checks it)."""

from pathlib import Path

from app.api.schema import schema

SCHEMA_FILE = Path(__file__).resolve().parent.parent.parent / "schema.graphql"


def sdl() -> str:
    return schema.as_str() + "\n"


def main() -> None:
    SCHEMA_FILE.write_text(sdl())
    print(f"wrote {SCHEMA_FILE}")


if __name__ == "__main__":
    main()
