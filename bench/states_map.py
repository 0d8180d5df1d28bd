"""The states map case: the dashboard's `/ui/map` of 50 states reading each other's
outputs (terraform_remote_state, three link depths, 90 data sources), some consumers
stale, rendered by the server."""

from bench.cases import _HTML, BenchError, Env, _ok
from bench.harness import Result, alternate
from tests.helpers.links import estate, produced, remote
from tests.helpers.states import resource, state

MAP_STATES = 50
_PREFIX = "bench/map-"


def _linked(env: Env, name: str, reads: list[str], version: int = 1) -> bytes:
    """As tests/helpers/links.linked, its data sources' backend this server."""
    base = f"{env.http.base_url}/states/{_PREFIX}"
    return state(
        [resource("aws_ssm_parameter", "marker", attributes={"id": name})]
        + [remote(p.replace("/", "_"), base + p, produced(p)) for p in reads],
        serial=version,
        outputs={k: {"value": v, "type": "string"} for k, v in produced(name, version).items()},
    )


async def dashboard_map_case(env: Env) -> Result:
    reads = estate(MAP_STATES)
    for name, producers in reads.items():
        _ok(await env.http.post(f"/states/{_PREFIX}{name}", content=_linked(env, name, producers)))
    moved = _linked(env, "core/0", [], version=2)  # its readers are stale
    _ok(await env.http.post(f"/states/{_PREFIX}core/0", content=moved))
    html = b""

    async def candidate() -> None:
        nonlocal html
        html = _ok(await env.http.get("/ui/map", headers=_HTML)).content

    seconds, _ = await alternate(candidate, None, env.size.runs)
    drawn = html.count(b'<g class="node state')
    stale = html.count(b'<g class="node state stale"')
    readers = sum("core/0" in producers for producers in reads.values())
    if drawn != MAP_STATES or stale != readers:
        raise BenchError(f"states map: {drawn} states drawn, {stale} stale (not {readers})")
    links = sum(len(producers) for producers in reads.values())
    return Result(
        "dashboard states map",
        f"GET /ui/map (HTML) of {MAP_STATES} states, {links} data sources, {readers} stale",
        "(absolute)",
        seconds,
        None,
        "< 300 ms",
        seconds < 0.3,
        env.size.runs,
    )


MAP_GROUP = (dashboard_map_case,)
