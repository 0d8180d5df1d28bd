"""Who may do what, as a matrix: every route and root GraphQL field x every kind of
caller x a target inside or outside the caller's states and scopes.

Callers: no token, a bad one, an expired one, a revoked one (all 401, health aside);
`read`, `plan` and `write` tokens for states `team/*` and IaC scope `crm`; an `admin`
token for everything. Inside: state `team/...`, scope `crm`; outside: `other/...`,
scope `hr`.

What each operation needs (NEEDS below), and what each caller then gets (`plan` gets
what `read` gets, but for plan_place):

    need           read in/out      plan in/out    write in/out   admin   what it covers
    open           ok / ok          ok / ok        ok / ok        ok      health
    any            ok / ok          ok / ok        ok / ok        ok      /metrics, policies,
                                                                          GraphiQL, viewer,
                                                                          dashboard lists
                                                                          (filtered: tests/
                                                                          dashboard/test_access.py)
    seen           seen / hidden    seen / hidden  seen / hidden  seen    reads, a dashboard
                                                                          page of a state: the
                                                                          outside is absent
    read_place     ok / 403         ok / 403       ok / 403       ok      GET of an iac: state,
                                                                          GET of a state (read:
                                                                          its outputs alone)
    plan_place     403 / 403        ok / 403       ok / 403       ok      LOCK/UNLOCK for a plan
    write_place    403 / 403        403 / 403      ok / 403       ok      backend, IaC, catalog
                                                                          writes in a scope given
                                                                          by slug, output readers
    write_object   403 / 403        403 / 403      ok / hidden    ok      catalog writes on an
                                                                          object by ID: an outside
                                                                          one is absent (NOT_FOUND)
    write          403 / 403        403 / 403      ok / ok        ok      catalog writes by an
                                                                          absent ID
    admin          403 / 403        403 / 403      403 / 403      ok      prune, policies,
                                                                          tokens, force-unlock,
                                                                          webhooks
    iac_refused    403 / 403        403 / 403      403 / 403      403     POST/LOCK/DELETE of
                                                                          iac:*

`ok` is any answer but 401/403 and a 5xx (the live server fails the test on a 5xx):
the access check let it through, and the operation said what it says to anyone
(NOT_FOUND for an absent ID, BAD_INPUT for an empty input). `seen`/`hidden`: the
answer holds the target, or holds nothing of it (null, empty, not counted, NOT_FOUND
as for a name that does not exist). The test fails for an app route or a root field of
the schema with no row here: a new operation needs a row (and a rule in
app/api/access.py).
"""

import enum
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from graphql import GraphQLNamedType, get_named_type, is_composite_type
from starlette.routing import Mount, Route, WebSocketRoute

from app.api.schema import schema
from app.backend.routes import _HANDLERS
from app.config import Settings
from app.server import create_app
from tests.helpers.backend import lock_info, tf_state
from tests.helpers.iac import DOCUMENT
from tests.helpers.live_server import LiveServer, server_fixture
from tests.helpers.states import chain_graph

BOOT = "boot-secret"
server = server_fixture({"INFRAGRAPH_API_TOKENS": f"boot:{BOOT}"}, scope="module")
JSON_BODY = {"Content-Type": "application/json"}


class Need(enum.Enum):
    OPEN = "open"
    ANY = "any"
    SEEN = "seen"
    READ_PLACE = "read_place"
    PLAN_PLACE = "plan_place"
    WRITE_PLACE = "write_place"
    WRITE_OBJECT = "write_object"
    WRITE = "write"
    ADMIN = "admin"
    IAC_REFUSED = "iac_refused"


CALLERS = ("none", "bad", "expired", "revoked", "read", "plan", "write", "admin")
UNAUTHENTICATED = ("none", "bad", "expired", "revoked")


def expected(need: Need, caller: str, inside: bool) -> str:
    """The matrix of the module docstring: 401, 403, ok, seen or hidden."""
    if need is Need.OPEN:
        return "ok"
    if caller in UNAUTHENTICATED:
        return "401"
    admin = caller == "admin"
    match need:
        case Need.ANY:
            return "ok"
        case Need.SEEN:
            return "seen" if admin or inside else "hidden"
        case Need.READ_PLACE:
            return "ok" if admin or inside else "403"
        case Need.PLAN_PLACE:
            return "ok" if admin or (caller in ("plan", "write") and inside) else "403"
        case Need.WRITE_PLACE:
            return "ok" if admin or (caller == "write" and inside) else "403"
        case Need.WRITE_OBJECT:
            if caller not in ("write", "admin"):
                return "403"
            return "ok" if admin or inside else "hidden"
        case Need.WRITE:
            return "ok" if caller in ("write", "admin") else "403"
        case Need.ADMIN:
            return "ok" if admin else "403"
        case Need.IAC_REFUSED:
            return "403"
    raise AssertionError(need)


@dataclass(frozen=True)
class Place:
    """The targets on one side: a state, IaC scope, and catalog objects of that scope."""

    slug: str
    state: str  # a Terraform state with resources
    written: str  # a Terraform state the write operations use
    glob: str
    ids: dict[str, str]  # node ids and catalog ids


# --- requests -----------------------------------------------------------------------


def _graphql_call(field: str, variables: dict[str, Any], selection: str | None) -> str:
    """An operation calling root field `Type.field` with `variables` as its arguments."""
    type_name, name = field.split(".")
    root = schema._schema.get_type(type_name)
    definition = root.fields[name]  # type: ignore[union-attr]
    used = [a for a in definition.args if a in variables]
    declared = ", ".join(f"${a}: {definition.args[a].type}" for a in used)
    passed = ", ".join(f"{a}: ${a}" for a in used)
    named: GraphQLNamedType = get_named_type(definition.type)
    if selection is None:
        selection = "{ __typename }" if is_composite_type(named) else ""
    kind = "mutation" if type_name == "Mutation" else "query"
    return (
        f"{kind}{f'({declared})' if declared else ''} "
        f"{{ {name}{f'({passed})' if passed else ''} {selection} }}"
    )


@dataclass(frozen=True)
class Op:
    need: Need
    variables: Callable[[Place], dict[str, Any]] = lambda p: {}
    selection: str | None = None
    seen: Callable[[Any, Place], bool] | None = None  # Need.SEEN: whether the target shows


def _edges(field: str) -> Callable[[Any, Place], bool]:
    def seen(data: Any, place: Place) -> bool:
        return bool(data[field]["edges"]) and data[field]["totalCount"] > 0

    return seen


def _policy(p: Place) -> dict[str, Any]:
    return {"input": {"name": f"p-{uuid.uuid4().hex[:8]}", "resourceType": "x", "condition": "$.a"}}


ABSENT = str(uuid.uuid4())
_PLAN = b'{"format_version": "1.2", "resource_changes": []}'
# a plan with a configuration: a module call of "./m" (pushed to each place's state)
_CONFIGURED = {
    "format_version": "1.2",
    "resource_changes": [],
    "configuration": {"root_module": {"module_calls": {"m": {"source": "./m", "module": {}}}}},
}

QUERIES: dict[str, Op] = {
    "Query.node": Op(
        Need.SEEN,
        lambda p: {"id": p.ids["state"]},
        "{ id }",
        lambda d, p: d["node"] is not None,
    ),
    "Query.states": Op(
        Need.SEEN,
        lambda p: {"filter": {"namePrefix": p.state}, "first": 5},
        "{ totalCount edges { node { name } } }",
        _edges("states"),
    ),
    "Query.state": Op(
        Need.SEEN, lambda p: {"name": p.state}, "{ name }", lambda d, p: d["state"] is not None
    ),
    "Query.resources": Op(
        Need.SEEN,
        lambda p: {"filter": {"state": p.state}, "first": 5},
        "{ totalCount edges { node { address } } }",
        _edges("resources"),
    ),
    "Query.inventory": Op(
        Need.SEEN,
        lambda p: {"groupBy": "STATE"},
        "{ key count }",
        lambda d, p: p.state in [e["key"] for e in d["inventory"]],
    ),
    "Query.blastRadius": Op(
        Need.SEEN,
        lambda p: {"state": p.state, "address": "terraform_data.r", "first": 5},
        "{ totalCount }",
        lambda d, p: d["blastRadius"]["totalCount"] > 0,
    ),
    "Query.events": Op(
        Need.SEEN,
        lambda p: {"state": p.state, "first": 5},
        "{ totalCount edges { node { stateName actor } } }",
        _edges("events"),
    ),
    "Query.scopes": Op(
        Need.SEEN,
        selection="{ slug }",
        seen=lambda d, p: p.slug in [s["slug"] for s in d["scopes"]],
    ),
    "Query.scope": Op(
        Need.SEEN, lambda p: {"slug": p.slug}, "{ slug }", lambda d, p: d["scope"] is not None
    ),
    "Query.iacState": Op(
        Need.SEEN, lambda p: {"scope": p.slug}, "{ ref }", lambda d, p: bool(d["iacState"])
    ),
    "Query.export": Op(
        Need.SEEN, lambda p: {"scope": p.slug, "system": "crm"}, "", lambda d, p: bool(d["export"])
    ),
    "Query.policies": Op(Need.ANY, lambda p: {"first": 5}, "{ totalCount }"),
    "Query.violations": Op(
        Need.SEEN,
        lambda p: {"state": p.state, "first": 5},
        "{ totalCount edges { node { open } } }",
        _edges("violations"),
    ),
    "Query.tokens": Op(Need.ADMIN, selection="{ name }"),
    "Query.viewer": Op(Need.ANY, selection="{ name role }"),
    "Query.webhooks": Op(Need.ADMIN, selection="{ id }"),
    "Query.plans": Op(Need.ANY, lambda p: {"state": p.state}, "{ id }"),  # filtered
    "Query.terraformPlan": Op(Need.ANY, lambda p: {"id": ABSENT}, "{ id }"),
    # the matrix's states read no other: what links show is tests/api/test_across.py's
    "Query.statesGraph": Op(Need.ANY, selection="{ states { name } }"),
    "Query.staleConsumers": Op(Need.ANY, lambda p: {"state": p.state}, "{ consumer { name } }"),
    "Query.modules": Op(
        Need.SEEN,
        lambda p: {"source": "./m"},
        "{ state key }",
        lambda d, p: p.state in [m["state"] for m in d["modules"]],
    ),
}

_TABLE_CHILDREN = ("Column", "Rule", "Trigger", "View", "Grant", "PublicRead")
_ABSENT_KINDS = ("Rule", "Trigger", "Grant", "Command", "InsightSelection", "PublicRead")

MUTATIONS: dict[str, Op] = {
    "Mutation.prune": Op(Need.ADMIN, lambda p: {"states": p.glob, "keepLast": 5}, "{ state }"),
    "Mutation.exportState": Op(Need.WRITE_PLACE, lambda p: {"name": p.state}),
    "Mutation.createScope": Op(Need.WRITE_PLACE, lambda p: {"slug": p.slug, "name": "again"}),
    "Mutation.updateScope": Op(Need.WRITE_PLACE, lambda p: {"slug": p.slug, "input": {}}),
    "Mutation.deleteScope": Op(Need.ADMIN, lambda p: {"slug": "absent"}),
    "Mutation.createTable": Op(Need.WRITE_PLACE, lambda p: {"scope": p.slug, "input": {}}),
    "Mutation.updateTable": Op(Need.WRITE_OBJECT, lambda p: {"id": p.ids["table"], "input": {}}),
    "Mutation.deleteTable": Op(Need.WRITE, lambda p: {"id": ABSENT}),
    "Mutation.addTableTag": Op(Need.WRITE_OBJECT, lambda p: {"id": p.ids["table"], "tag": "t"}),
    "Mutation.removeTableTag": Op(Need.WRITE_OBJECT, lambda p: {"id": p.ids["table"], "tag": "t"}),
    **{
        f"Mutation.create{kind}": Op(
            Need.WRITE_OBJECT, lambda p: {"table": p.ids["table"], "input": {}}
        )
        for kind in _TABLE_CHILDREN
    },
    "Mutation.updateColumn": Op(Need.WRITE_OBJECT, lambda p: {"id": p.ids["column"], "input": {}}),
    "Mutation.deleteColumn": Op(Need.WRITE, lambda p: {"id": f"{ABSENT}:k"}),
    "Mutation.updateView": Op(Need.WRITE_OBJECT, lambda p: {"id": p.ids["view"], "input": {}}),
    "Mutation.deleteView": Op(Need.WRITE, lambda p: {"id": ABSENT}),
    **{
        f"Mutation.{verb}{kind}": Op(Need.WRITE, lambda p: {"id": ABSENT, "input": {}})
        for kind in _ABSENT_KINDS
        for verb in ("update", "delete")
    },
    "Mutation.setClientAccess": Op(
        Need.WRITE_OBJECT, lambda p: {"table": p.ids["table"], "input": {}}
    ),
    "Mutation.deleteClientAccess": Op(Need.WRITE, lambda p: {"id": ABSENT}),
    "Mutation.createCommand": Op(Need.WRITE_PLACE, lambda p: {"scope": p.slug, "input": {}}),
    "Mutation.createInsightSelection": Op(
        Need.WRITE_PLACE, lambda p: {"scope": p.slug, "input": {}}
    ),
    "Mutation.insertRecord": Op(
        Need.WRITE_OBJECT, lambda p: {"table": p.ids["table"], "values": {}}
    ),
    "Mutation.updateRecord": Op(Need.WRITE, lambda p: {"id": ABSENT, "values": {}}),
    "Mutation.deleteRecord": Op(Need.WRITE, lambda p: {"id": ABSENT}),
    "Mutation.plan": Op(Need.WRITE_PLACE, lambda p: {"scope": p.slug, "document": DOCUMENT}),
    "Mutation.apply": Op(
        Need.WRITE_PLACE, lambda p: {"scope": p.slug, "document": DOCUMENT, "hash": "stale"}
    ),
    "Mutation.release": Op(
        Need.WRITE_PLACE, lambda p: {"scope": p.slug, "system": "crm", "refs": ["absent"]}
    ),
    "Mutation.createPolicy": Op(Need.ADMIN, _policy),
    "Mutation.updatePolicy": Op(Need.ADMIN, lambda p: {"input": {"name": "absent"}}),
    "Mutation.deletePolicy": Op(Need.ADMIN, lambda p: {"name": "absent"}),
    "Mutation.createToken": Op(
        Need.ADMIN, lambda p: {"name": f"t-{uuid.uuid4().hex[:8]}", "role": "READ"}
    ),
    "Mutation.revokeToken": Op(Need.ADMIN, lambda p: {"name": "absent"}),
    "Mutation.setOutputReaders": Op(
        Need.WRITE_PLACE, lambda p: {"state": p.state, "states": []}, "{ tokens }"
    ),
    "Mutation.submitPlan": Op(
        Need.READ_PLACE, lambda p: {"state": p.state, "plan": json.loads(_PLAN)}, "{ id }"
    ),
    "Mutation.pushConfiguration": Op(
        Need.PLAN_PLACE, lambda p: {"state": p.state, "plan": _CONFIGURED}, "{ created }"
    ),
    "Mutation.acquireLease": Op(
        Need.WRITE_PLACE,
        lambda p: {"state": p.state, "plan": json.loads(_PLAN), "ttlSeconds": 1},
        "{ id }",
    ),
    "Mutation.releaseLease": Op(Need.WRITE, lambda p: {"id": ABSENT}, "{ id }"),
    # an address refused before any lookup: BAD_INPUT
    "Mutation.createWebhook": Op(
        Need.ADMIN,
        lambda p: {
            "input": {"url": "https://192.0.2.1/", "events": ["STATE_WRITTEN"], "secret": "s" * 16}
        },
        "{ id }",
    ),
    "Mutation.updateWebhook": Op(Need.ADMIN, lambda p: {"input": {"id": ABSENT}}, "{ id }"),
    "Mutation.deleteWebhook": Op(Need.ADMIN, lambda p: {"id": ABSENT}, "{ id }"),
    "Mutation.redeliverWebhook": Op(Need.ADMIN, lambda p: {"delivery": ABSENT}, "{ id }"),
}
GRAPHQL = {**QUERIES, **MUTATIONS}


@dataclass(frozen=True)
class Call:
    """One HTTP request of a route row."""

    method: str
    path: Callable[[Place], str]
    need: Need
    body: Callable[[Place], bytes] | None = None


def _lock(p: Place) -> bytes:
    return json.dumps(lock_info("held-by-someone")).encode()


def _plan_lock(p: Place) -> bytes:
    return json.dumps({**lock_info("held-for-a-plan"), "Operation": "OperationTypePlan"}).encode()


ROUTES: dict[str, Call] = {
    "GET /graphql": Call("GET", lambda p: "/graphql?query={__typename}", Need.ANY),
    "GET /livez": Call("GET", lambda p: "/livez", Need.OPEN),
    "GET /readyz": Call("GET", lambda p: "/readyz", Need.OPEN),
    "GET /healthz": Call("GET", lambda p: "/healthz", Need.OPEN),
    # the OIDC exchange: its JWT is its credential (no issuer is trusted here: 404)
    "POST /auth/oidc/token": Call("POST", lambda p: "/auth/oidc/token", Need.OPEN),
    "GET /metrics": Call("GET", lambda p: "/metrics", Need.ANY),
    "GET /states (terraform)": Call("GET", lambda p: f"/states/{p.state}", Need.READ_PLACE),
    "POST /states": Call(
        "POST", lambda p: f"/states/{p.written}", Need.WRITE_PLACE, lambda p: tf_state()
    ),
    "LOCK /states": Call("LOCK", lambda p: f"/states/{p.written}", Need.WRITE_PLACE, _lock),
    "UNLOCK /states (its own lock)": Call(
        "UNLOCK", lambda p: f"/states/{p.written}", Need.WRITE_PLACE, _lock
    ),
    "LOCK /states (for a plan)": Call(
        "LOCK", lambda p: f"/states/{p.written}", Need.PLAN_PLACE, _plan_lock
    ),
    "UNLOCK /states (its own plan lock)": Call(
        "UNLOCK", lambda p: f"/states/{p.written}", Need.PLAN_PLACE, _plan_lock
    ),
    "UNLOCK /states (force)": Call("UNLOCK", lambda p: f"/states/{p.written}", Need.ADMIN),
    "DELETE /states": Call("DELETE", lambda p: f"/states/{p.written}", Need.WRITE_PLACE),
    "POST /states/{name}/plans": Call(
        "POST", lambda p: f"/states/{p.state}/plans", Need.READ_PLACE, lambda p: _PLAN
    ),
    "POST /states/{name}/configurations": Call(
        "POST",
        lambda p: f"/states/{p.state}/configurations",
        Need.PLAN_PLACE,
        lambda p: json.dumps(_CONFIGURED).encode(),
    ),
    "GET /states (iac:)": Call("GET", lambda p: f"/states/iac:{p.slug}/crm", Need.READ_PLACE),
    "POST /states (iac:)": Call(
        "POST", lambda p: f"/states/iac:{p.slug}/crm", Need.IAC_REFUSED, lambda p: tf_state()
    ),
    "LOCK /states (iac:)": Call(
        "LOCK", lambda p: f"/states/iac:{p.slug}/crm", Need.IAC_REFUSED, _lock
    ),
    "DELETE /states (iac:)": Call(
        "DELETE", lambda p: f"/states/iac:{p.slug}/crm", Need.IAC_REFUSED
    ),
    "GET /scopes/{scope}/tables/iac/state": Call(
        "GET", lambda p: f"/scopes/{p.slug}/tables/iac/state", Need.SEEN
    ),
    "GET / (dashboard)": Call("GET", lambda p: "/", Need.ANY),
    "GET /ui/state": Call("GET", lambda p: f"/ui/state?name={p.state}", Need.SEEN),
    "GET /ui/resource": Call(
        "GET", lambda p: f"/ui/resource?state={p.state}&address=terraform_data.r", Need.SEEN
    ),
    "GET /ui/inventory": Call("GET", lambda p: "/ui/inventory", Need.ANY),
    "GET /ui/iac": Call("GET", lambda p: "/ui/iac", Need.ANY),
    "GET /ui/map": Call("GET", lambda p: "/ui/map", Need.ANY),
    "GET /ui/webhooks": Call("GET", lambda p: "/ui/webhooks", Need.ADMIN),
    "GET /ui/policies": Call("GET", lambda p: "/ui/policies", Need.ADMIN),
    "GET /ui/plan": Call("GET", lambda p: f"/ui/plan?id={ABSENT}", Need.ANY),
    "GET /ui/static": Call("GET", lambda p: "/ui/static/style.css", Need.ANY),
    "GET /favicon.ico": Call("GET", lambda p: "/favicon.ico", Need.ANY),
    "GET /graphiql": Call("GET", lambda p: "/graphiql/start.js", Need.ANY),
}
# Over a websocket, not in the matrix: where each is shown instead (the dashboard's
# lists: tests/dashboard/test_access.py)
WEBSOCKETS = {
    "/graphql": "tests/api/test_subscriptions.py (connection_init tokens)",
    # the same GraphQL app, under /ui/ where a browser sends the dashboard's login
    "/ui/live": "tests/dashboard/test_map_browser.py (a page's live updates)",
    "Subscription.events": "tests/api/test_subscriptions.py (a read token's events)",
}

# --- the world and the callers -------------------------------------------------------


def _gql(client: httpx.Client, query: str, variables: dict[str, Any] | None = None) -> Any:
    response = client.post("/graphql", json={"query": query, "variables": variables or {}})
    body = response.json()
    assert response.status_code == 200 and not body.get("errors"), response.text
    return body["data"]


PLAN_HASH = "mutation($s: String!, $d: String!) { plan(scope: $s, document: $d) { hash } }"
APPLY = """mutation($s: String!, $d: String!, $h: String!) {
  apply(scope: $s, document: $d, hash: $h) { stateName } }"""


def _place(client: httpx.Client, side: str, slug: str) -> Place:
    state = f"{side}/app"
    assert client.post(f"/states/{state}", content=chain_graph(), headers=JSON_BODY).is_success
    _gql(client, f'mutation {{ createScope(slug: "{slug}", name: "{slug}") {{ id }} }}')
    planned = _gql(client, PLAN_HASH, {"s": slug, "d": DOCUMENT})["plan"]["hash"]
    _gql(client, APPLY, {"s": slug, "d": DOCUMENT, "h": planned})
    rows = _gql(client, f'{{ iacState(scope: "{slug}") {{ resourceType ref resourceId }} }}')
    by_ref = {(r["resourceType"], r["ref"]): r["resourceId"] for r in rows["iacState"]}
    state_id = _gql(client, f'{{ state(name: "{state}") {{ id }} }}')["state"]["id"]
    push = "mutation($s: String!, $p: JSON!) { pushConfiguration(state: $s, plan: $p) { created } }"
    _gql(client, push, {"s": state, "p": _CONFIGURED})
    ids = {
        "state": state_id,
        "table": by_ref["table", "contacts"],
        "column": by_ref["column", "contacts.email"],
        "view": by_ref["view", "contacts.adults"],
    }
    return Place(slug=slug, state=state, written=f"{side}/written", glob=f"{side}/*", ids=ids)


CREATE = """mutation($name: String!, $role: Role!, $states: [String!], $scopes: [String!],
  $days: Float) { createToken(name: $name, role: $role, states: $states, scopes: $scopes,
  expiresDays: $days) { secret } }"""


@pytest.fixture(scope="module")
def world(server: LiveServer, database_url: str) -> Iterator[tuple[dict[str, Place], dict]]:
    """Both places, the policy that flags both, and a token of each kind of caller."""
    import asyncio

    import asyncpg

    from tests.helpers.databases import truncate_all

    async def empty() -> None:
        conn = await asyncpg.connect(database_url)
        try:
            await truncate_all(conn)
        finally:
            await conn.close()

    asyncio.run(empty())  # and again at the end: its tokens would close the next tests' servers
    boot = {"Authorization": f"Bearer {BOOT}"}
    with httpx.Client(base_url=server.url, headers=boot, timeout=60) as client:
        policy = '{name: "any", resourceType: "terraform_data", condition: "exists($.input)"}'
        _gql(client, f"mutation {{ createPolicy(input: {policy}) {{ name }} }}")
        places = {"inside": _place(client, "team", "crm"), "outside": _place(client, "other", "hr")}

        def token(name: str, role: str, days: float | None = None, **reach: list[str]) -> str:
            variables = {"name": name, "role": role, "days": days, **reach}
            secret: str = _gql(client, CREATE, variables)["createToken"]["secret"]
            return secret

        scoped = {"states": ["team/*"], "scopes": ["crm"]}
        secrets = {
            "read": token("dash", "READ", **scoped),
            "plan": token("pr", "PLAN", **scoped),
            "write": token("ci", "WRITE", **scoped),
            "admin": token("root", "ADMIN"),
            "expired": token("old", "ADMIN", 1e-9),
            "revoked": token("gone", "ADMIN"),
        }
        _gql(client, 'mutation { revokeToken(name: "gone") { revokedAt } }')
    headers = {caller: {"Authorization": f"Bearer {secret}"} for caller, secret in secrets.items()}
    headers["bad"] = {"Authorization": "Bearer igt_not-a-token"}
    headers["none"] = {}
    yield places, headers
    asyncio.run(empty())


def _outcome_http(response: httpx.Response, need: Need = Need.ANY) -> str:
    if response.status_code in (401, 403):
        return str(response.status_code)
    assert response.status_code < 500, response.text
    if need is Need.SEEN:  # a read by name: one it may not see is absent
        return {200: "seen", 404: "hidden"}[response.status_code]
    return "ok"


def _outcome_graphql(response: httpx.Response, op: Op, place: Place) -> str:
    if response.status_code != 200:
        return _outcome_http(response)
    body = response.json()
    codes = [e["extensions"]["code"] for e in body.get("errors") or ()]
    assert "INTERNAL_SERVER_ERROR" not in codes, body
    if "FORBIDDEN" in codes:
        return "403"
    if op.need is Need.WRITE_OBJECT and codes == ["NOT_FOUND"]:
        return "hidden"  # as for an ID that is not there
    if op.need is not Need.SEEN:
        return "ok"
    if codes == ["NOT_FOUND"]:
        return "hidden"  # as for a name that is not there
    assert not codes, body
    assert op.seen is not None
    return "seen" if op.seen(body["data"], place) else "hidden"


def _rows() -> Iterator[tuple[str, str, str]]:
    for name in [*ROUTES, *GRAPHQL]:
        for caller in CALLERS:
            for side in ("inside", "outside"):
                yield name, caller, side


def test_every_route_and_root_field_has_a_row() -> None:
    app = create_app(Settings())
    place = Place("s", "team/s", "team/w", "team/*", {})
    requested = [(call.method, call.path(place)) for call in ROUTES.values()]
    for route in app.routes:
        if isinstance(route, WebSocketRoute):
            assert route.path in WEBSOCKETS, f"websocket {route.path} has no row"
            continue
        assert isinstance(route, Route | Mount)
        methods = {m for m, path in requested if route.path_regex.match(path.partition("?")[0])}
        assert methods, f"{route.path} has no row in ROUTES"
        # /states (an ASGI app, every method) must have a row per method it handles
        needed = set(getattr(route, "methods", None) or ()) or (
            set(_HANDLERS) if "{name" in route.path else set()
        )
        assert needed - {"HEAD"} <= methods, f"{route.path}: methods without a row"
    fields = {
        f"{root.name}.{field}"
        for root in (
            schema._schema.query_type,
            schema._schema.mutation_type,
            schema._schema.subscription_type,
        )
        if root is not None
        for field in root.fields
    }
    rows = {*GRAPHQL, *(name for name in WEBSOCKETS if "." in name)}
    assert fields - rows == set(), "root fields without a row in QUERIES/MUTATIONS/WEBSOCKETS"
    assert rows - fields == set(), "rows of root fields the schema does not have"


@pytest.mark.slow
def test_the_matrix(server: LiveServer, world) -> None:
    places, headers = world
    got: dict[tuple[str, str, str], str] = {}
    want: dict[tuple[str, str, str], str] = {}
    with httpx.Client(base_url=server.url, timeout=60) as client:
        for name, caller, side in _rows():
            place = places[side]
            if name in ROUTES:
                call = ROUTES[name]
                body = call.body(place) if call.body else None
                response = client.request(
                    call.method,
                    call.path(place),
                    content=body,
                    headers={**headers[caller], **(JSON_BODY if body else {})},
                )
                need = call.need
                got[name, caller, side] = _outcome_http(response, need)
            else:
                op = GRAPHQL[name]
                query = _graphql_call(name, op.variables(place), op.selection)
                response = client.post(
                    "/graphql",
                    json={"query": query, "variables": op.variables(place)},
                    headers=headers[caller],
                )
                got[name, caller, side] = _outcome_graphql(response, op, place)
                need = op.need
            want[name, caller, side] = expected(need, caller, side == "inside")
    wrong = {cell: (got[cell], want[cell]) for cell in got if got[cell] != want[cell]}
    assert wrong == {}, "cells (operation, caller, side): (got, wanted)"
    # every event names the token that caused it
    with httpx.Client(base_url=server.url, headers=headers["admin"]) as client:
        found = _gql(client, EVENTS, {"state": places["inside"].written})["events"]["edges"]
    actors = {(e["node"]["action"], e["node"]["actor"]) for e in found}
    assert {("write", "ci"), ("lock", "ci"), ("unlock", "ci"), ("delete", "ci")} <= actors
    assert {("lock", "pr"), ("unlock", "pr")} <= actors  # a lock for a plan, and its release


EVENTS = """query($state: String!) {
  events(state: $state, first: 100) { edges { node { action actor } } } }"""
