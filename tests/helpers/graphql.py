"""GraphQL requests to the in-process app (the `app` and `client` fixtures of
tests/conftest.py)."""

from typing import Any

import httpx


async def post(
    client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The GraphQL response body (HTTP 200 required: errors travel in the body)."""
    response = await client.post("/graphql", json={"query": query, "variables": variables or {}})
    assert response.status_code == 200, response.text
    return response.json()


async def gql(
    client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The data of a query that must succeed."""
    body = await post(client, query, variables)
    assert "errors" not in body, body["errors"]
    return body["data"]


async def error_codes(
    client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None
) -> list[str]:
    body = await post(client, query, variables)
    assert body.get("errors"), body
    return [error["extensions"]["code"] for error in body["errors"]]
