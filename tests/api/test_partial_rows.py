"""A resource built from a row its page read without some columns (a blast radius page
whose query shows none of them): a field reading a column the page did not load fails
loudly, an internal error naming the column, rather than answering null."""

from typing import Any

import strawberry
from strawberry.types import ExecutionResult

from app.access import Principal, Role
from app.api.context import Context
from app.api.graph.columns import UnloadedColumn
from app.api.graph.loaders import GraphLoaders
from app.api.graph.resource import Resource
from app.api.graph.rows import resource_of, resources_of
from app.api.runtime.execution import PlainFieldsExecutionContext
from app.config import Settings
from app.graph import edges
from app.graph.resources import find_resource
from app.graph.write.version import write_version
from tests.helpers.states import PASSWORD, chain_graph, resource, state

# a counted instance with a sensitive attribute, in the blast radius of the VPC
DB = resource("aws_db_instance", "db", keys=[0], sensitive=PASSWORD, depends_on=["aws_vpc.main"])
DB["instances"][0]["attributes"] = {"password": "p", "port": 5432}
KEYED = state([resource("aws_vpc", "main"), DB])


async def _page_rows(conn, *, json: bool, attributes: bool) -> list[Any]:
    """The rows of the radius of aws_vpc.main as a blast radius page reads them."""
    root = await find_resource(conn, "k", "aws_vpc.main")
    key = (root["id"], root["version_id"])
    limits = edges.WalkLimits(rows=1000, seconds=60)
    pages = await edges.blast_radius(
        conn, [key], limits=limits, first=10, json=json, attributes=attributes
    )
    [at_root] = resources_of([root])
    return resources_of(pages[key].rows, at_root.version)


async def _serve(app, shown: Resource, query: str) -> ExecutionResult:
    """`query` on a schema serving `shown`, executed as the API executes (plain fields read
    as attributes), with the API's loaders."""

    @strawberry.type
    class Query:
        @strawberry.field
        def resource(self) -> Resource:
            return shown

    settings = Settings()
    pool = app.state.pool
    reader = Principal("test", Role.READ)
    context = Context(None, None, pool, settings, reader, GraphLoaders(pool, settings), None, None)  # type: ignore[arg-type]
    schema = strawberry.Schema(query=Query, execution_context_class=PlainFieldsExecutionContext)
    return await schema.execute(query, context_value=context)


def _unloaded(result: ExecutionResult) -> dict[str, str]:
    """By field, the messages of the errors that are UnloadedColumn (every error is)."""
    assert result.errors, result
    assert all(isinstance(e.original_error, UnloadedColumn) for e in result.errors), result
    return {".".join(map(str, e.path or ())): str(e.original_error) for e in result.errors}


async def test_a_column_the_page_did_not_load_fails_the_field(app, conn) -> None:
    await write_version(conn, "k", KEYED, actor="test")
    [bare] = await _page_rows(conn, json=False, attributes=False)
    for field, column in (
        ("indexKey", "index_key"),
        ("sensitiveAttributes", "sensitive_attributes"),
    ):
        result = await _serve(app, bare, f"{{ resource {{ address {field} }} }}")
        assert result.data == {"resource": {"address": "aws_db_instance.db[0]", field: None}}
        [(path, message)] = _unloaded(result).items()
        assert path == f"resource.{field}" and repr(column) in message
    # what the page read is there
    assert (await _serve(app, bare, "{ resource { address } }")).data == {
        "resource": {"address": "aws_db_instance.db[0]"}
    }

    [keyed] = await _page_rows(conn, json=True, attributes=False)
    result = await _serve(app, keyed, "{ resource { indexKey sensitiveAttributes } }")
    assert result.errors is None
    assert result.data == {"resource": {"indexKey": 0, "sensitiveAttributes": PASSWORD}}


async def test_attributes_read_without_the_sensitive_paths_fail_rather_than_withhold(
    app, conn
) -> None:
    """The attributes are loaded when the page did not read them, but the paths that mask
    them must have been: without them the field fails (it would otherwise withhold every
    value, a null where the value is not secret)."""
    await write_version(conn, "k", KEYED, actor="test")
    [bare] = await _page_rows(conn, json=False, attributes=False)
    result = await _serve(app, bare, '{ resource { port: attributes(path: ["port"]) } }')
    assert result.data == {"resource": {"port": None}}
    [(path, message)] = _unloaded(result).items()
    assert path == "resource.port" and "'sensitive_attributes'" in message

    [masked] = await _page_rows(conn, json=True, attributes=False)
    result = await _serve(app, masked, "{ resource { attributes } }")
    assert result.errors is None
    assert result.data == {"resource": {"attributes": {"password": None, "port": 5432}}}


async def test_a_whole_row_reads_every_column(app, conn) -> None:
    """A row of a list of resources (RESOURCE_COLUMNS) misses none."""
    await write_version(conn, "k", KEYED, actor="test")
    whole = resource_of(await find_resource(conn, "k", "aws_db_instance.db[0]"))
    result = await _serve(app, whole, "{ resource { indexKey sensitiveAttributes attributes } }")
    assert result.errors is None
    assert result.data == {
        "resource": {
            "indexKey": 0,
            "sensitiveAttributes": PASSWORD,
            "attributes": {"password": None, "port": 5432},
        }
    }


async def test_a_resource_read_without_attributes_loads_them_when_asked(app, conn) -> None:
    """A resource built from a row read without attributes (as a page reads it when its
    query selects none) loads them when a query asks anyway."""
    await write_version(conn, "g", chain_graph(), actor="test")
    row = dict(await find_resource(conn, "g", "terraform_data.b"))
    del row["attributes"]
    [read] = resources_of([row])
    query = '{ resource { input: attributes(path: ["input"]) attributes } }'
    result = await _serve(app, read, query)
    assert result.errors is None
    assert result.data == {"resource": {"input": "b", "attributes": {"input": "b"}}}
