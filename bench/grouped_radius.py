"""The dashboard's resource page of a root whose radius is 500 resources in four
counted groups (each instance depending on every instance of the group before it, as
`depends_on` on a counted resource makes): drawn grouped, rendered by the server."""

import re
import urllib.parse

from bench.cases import _HTML, BenchError, Env, _ok
from bench.harness import Result, alternate
from tests.helpers.states import grouped_radius

_STATE = "bench/grouped-radius"
_GROUPS = [
    ("aws_subnet.a", 100),
    ("aws_subnet.b", 100),
    ("aws_instance.web", 150),
    ("aws_eip.ip", 150),
]


async def dashboard_grouped_radius_case(env: Env) -> Result:
    document = grouped_radius()
    _ok(await env.http.post(f"/states/{_STATE}", content=document))
    path = "/ui/resource?" + urllib.parse.urlencode({"state": _STATE, "address": "aws_vpc.main"})
    _ok(await env.http.get(path, headers=_HTML))  # the first view walks the radius and keeps it
    html = ""

    async def candidate() -> None:
        nonlocal html
        html = _ok(await env.http.get(path, headers=_HTML)).text

    seconds, _ = await alternate(candidate, None, env.size.runs)
    groups = [
        (g, int(n)) for g, n in re.findall(r'data-group="([^"]+)" data-members="(\d+)"', html)
    ]
    if groups != _GROUPS:
        raise BenchError(f"grouped radius: {groups}, not {_GROUPS}")
    return Result(
        "dashboard grouped radius",
        "GET /ui/resource (HTML) of a root with 500 dependents in 4 counted groups, kept",
        "(absolute)",
        seconds,
        None,
        "< 300 ms",
        seconds < 0.3,
        env.size.runs,
    )
