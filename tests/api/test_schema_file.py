"""schema.graphql is the SDL the code serves."""

from app.api.export import SCHEMA_FILE, sdl


def test_schema_graphql_matches_the_code() -> None:
    assert SCHEMA_FILE.read_text() == sdl(), (
        "schema.graphql differs from the schema in the code: "
        "regenerate it with `uv run python -m app.api.export` and review the diff"
    )
