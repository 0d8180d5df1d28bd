"""The exported GraphQL schema for schemathesis, with a strategy for its JSON scalar
(filters, settings, record values) as GraphQL literals: every module that generates
operations from it imports `graphql_schema` from here."""

from typing import Any

import graphql
import schemathesis
from hypothesis import strategies as st
from schemathesis.graphql import nodes

from tests.helpers.live_server import ROOT


def _object(fields: dict[str, graphql.ValueNode]) -> graphql.ObjectValueNode:
    return nodes.Object(
        [
            graphql.ObjectFieldNode(name=graphql.NameNode(value=k), value=v)
            for k, v in fields.items()
        ]
    )


# The JSON scalar (filters, settings, record values) as GraphQL literals
schemathesis.graphql.scalar(
    "JSON",
    st.recursive(
        st.text(max_size=12).map(nodes.String)
        | st.integers(-(2**40), 2**40).map(nodes.Int)
        | st.booleans().map(nodes.Boolean)
        | st.just(graphql.NullValueNode()),
        lambda inner: (
            st.lists(inner, max_size=3).map(nodes.List)
            | st.dictionaries(
                st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), inner, max_size=3
            ).map(_object)
        ),
        max_leaves=8,
    ),
)


def graphql_schema() -> Any:
    """schema.graphql (which a test keeps equal to the served schema), JSON registered."""
    return schemathesis.graphql.from_file((ROOT / "schema.graphql").read_text())
