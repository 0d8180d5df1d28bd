"""The dashboard: server-rendered pages over the domain modules (app/dashboard/pages.py),
Jinja2 templates, a little JavaScript, every asset served from here (`/ui/static`).

    GET /                      the overview (for a browser: Accept text/html; else 404)
    GET /ui/state?name=[&from=&to=&q=&after=&before=]
                               a state: versions, diff, outputs, resources, lock
    GET /ui/resource?state=&address=[&serial=&direction=&depth=&expand=]
    GET /ui/inventory[?q=&type=]
    GET /ui/iac
    GET /ui/webhooks           webhooks and their last deliveries (admins)
    GET /ui/policies           policies and their open violations by state (admins)
    GET /ui/map                the states map: who reads whose outputs, stale consumers
    GET /ui/plan?state= | ?id= a state's Terraform plans, or one with its analysis

Pages sit behind the API tokens like every route (a browser asks for Basic auth), and
show what the token may read (app/dashboard/pages.py); force-unlock is for admins.
An expected error is a page with its status, not JSON.
"""

from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from app import db, jsonutil
from app.auth import principal
from app.dashboard import pages
from app.dashboard.layout import (
    BOX_HEIGHT,
    BOX_WIDTH,
    bundle_reasons,
    bundled_edges,
    grouped_layers,
    layout,
    shorten,
)
from app.dashboard.map_page import map_page
from app.dashboard.policies import policies_page
from app.dashboard.webhooks import webhooks_page
from app.errors import AppError, BadInput, NotFound
from app.graph import edges
from app.plans import store as plans
from app.plans.report import plan_report
from app.tfstate.human_order import address_order

HERE = Path(__file__).resolve().parent
EXPANDED = 20  # groups a picture may expand at once (each a parameter of its URL)
templates = Jinja2Templates(directory=HERE / "templates")


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if value else ""


def _ago(value: datetime | None) -> str:
    if value is None:
        return ""
    seconds = int((datetime.now(UTC) - value).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def _url(path: str, **params: Any) -> str:
    # a list or tuple value: the parameter once per item
    query = urlencode({k: v for k, v in params.items() if v is not None and v != ""}, doseq=True)
    return f"{path}?{query}" if query else path


def _json(value: Any) -> str:
    return jsonutil.dumps(value, indent=True).decode()


def _terraform_order(items: Iterable[Any], attribute: str | None = None) -> list[Any]:
    """A page's addresses as Terraform lists them (the pages hold at most a page)."""
    if attribute is None:
        return sorted(items, key=address_order)

    def address(item: Any) -> str:  # a row (asyncpg.Record) or a dataclass
        return str(item.get(attribute) if hasattr(item, "get") else getattr(item, attribute))

    return sorted(items, key=lambda item: address_order(address(item)))


templates.env.filters.update(
    when=_when, ago=_ago, json=_json, shorten=shorten, terraform_order=_terraform_order
)
templates.env.globals.update(url=_url, box={"width": BOX_WIDTH, "height": BOX_HEIGHT})


def _int(request: Request, name: str, default: int | None = None) -> int | None:
    raw = request.query_params.get(name, "")
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise BadInput(f"{name} must be an integer, got {raw!r}") from None


def _required(request: Request, name: str) -> str:
    value = request.query_params.get(name, "")
    if not value:
        raise BadInput(f"the page needs ?{name}=")
    return value


Page = Callable[[Request], Awaitable[tuple[str, dict[str, Any]]]]


def _html(page: Page) -> Callable[[Request], Awaitable[Response]]:
    """A page handler: its template with the data it loaded, or the error page."""

    async def handler(request: Request) -> Response:
        try:
            template, context = await page(request)
        except AppError as exc:
            return templates.TemplateResponse(
                request, "error.html", {"error": exc}, status_code=exc.status
            )
        return templates.TemplateResponse(request, template, context)

    return handler


async def _overview(request: Request) -> tuple[str, dict[str, Any]]:
    async with db.connection(request.app.state.pool) as conn:
        data = await pages.overview(
            conn, principal(request), after=request.query_params.get("after") or None
        )
    return "overview.html", {"page": data}


async def home(request: Request) -> Response:
    """The overview for a browser; anything else asking for `/` finds nothing, as before."""
    if "text/html" not in request.headers.get("accept", ""):
        raise NotFound("no route / (the dashboard is for browsers: Accept text/html)")
    return await _html(_overview)(request)


async def _state(request: Request) -> tuple[str, dict[str, Any]]:
    name = _required(request, "name")
    older, newer = _int(request, "from"), _int(request, "to")
    compare = (older, newer) if older is not None and newer is not None else None
    async with db.connection(request.app.state.pool) as conn:
        data = await pages.state_page(
            conn,
            principal(request),
            name,
            compare=compare,
            search=request.query_params.get("q", ""),
            after=request.query_params.get("after") or None,
            before=_int(request, "before"),
        )
    return "state.html", {"page": data}


async def _resource(request: Request) -> tuple[str, dict[str, Any]]:
    try:
        direction = edges.Direction(request.query_params.get("direction", "dependents"))
    except ValueError:
        raise BadInput("direction is dependents or dependencies") from None
    settings = request.app.state.settings
    async with db.connection(request.app.state.pool) as conn:
        data = await pages.resource_page(
            conn,
            principal(request),
            _required(request, "state"),
            _required(request, "address"),
            serial=_int(request, "serial"),
            direction=direction,
            max_depth=_int(request, "depth", pages.PICTURE_DEPTH) or pages.PICTURE_DEPTH,
            limits=edges.WalkLimits(settings.blast_cache_rows, settings.blast_cache_seconds),
            expanded=tuple(dict.fromkeys(request.query_params.getlist("expand")))[:EXPANDED],
        )
    resource = data.resource
    layers, boxes = grouped_layers(data.boxes.sizes, pages.DRAWN_PER_LAYER, address_order)
    weights = bundled_edges([edge[:4] for edge in data.boxes.edges])
    root = (0, resource["address"])
    picture = layout(
        (root, resource["address"]),
        layers,
        list(weights),
        beyond=data.radius.beyond,
        weights=weights,
        reasons=bundle_reasons(data.boxes.edges),
    )
    return "resource.html", {"page": data, "picture": picture, "boxes": boxes}


async def _inventory(request: Request) -> tuple[str, dict[str, Any]]:
    async with db.connection(request.app.state.pool) as conn:
        params = request.query_params
        data = await pages.inventory_page(
            conn, principal(request), query=params.get("q", ""), rtype=params.get("type", "")
        )
    return "inventory.html", {"page": data}


async def _iac(request: Request) -> tuple[str, dict[str, Any]]:
    async with db.connection(request.app.state.pool) as conn:
        scopes = await pages.iac_page(conn, principal(request))
    return "iac.html", {"scopes": scopes}


async def _webhooks(request: Request) -> tuple[str, dict[str, Any]]:
    async with db.connection(request.app.state.pool) as conn:
        entries = await webhooks_page(conn, principal(request))
    return "webhooks.html", {"entries": entries}


async def _policies(request: Request) -> tuple[str, dict[str, Any]]:
    async with db.connection(request.app.state.pool) as conn:
        found = await policies_page(conn, principal(request))
    return "policies.html", {"page": found}


async def _map(request: Request) -> tuple[str, dict[str, Any]]:
    async with db.connection(request.app.state.pool) as conn:
        found = await map_page(conn, principal(request))
    return "map.html", {"page": found}


async def favicon(request: Request) -> Response:
    """Browsers ask for /favicon.ico on a first load, whatever the page links."""
    return FileResponse(HERE / "static" / "favicon.svg", media_type="image/svg+xml")


async def _plan(request: Request) -> tuple[str, dict[str, Any]]:
    """A plan (?id=) with its analysis, or a state's plans (?state=)."""
    caller = principal(request)
    async with db.connection(request.app.state.pool) as conn:
        plan_id = request.query_params.get("id")
        if plan_id:
            try:
                key = UUID(plan_id)
            except ValueError:
                raise BadInput(f"invalid plan id {plan_id!r}") from None
            row = await plans.get_plan(conn, key, readable=caller.patterns)
            report = await plan_report(conn, row, readable=caller.patterns)
            return "plan.html", {"report": report, "state": row["state_name"]}
        state = _required(request, "state")
        found = await plans.list_plans(conn, state, limit=100, readable=caller.patterns)
    return "plan.html", {"report": None, "state": state, "plans": found}


def routes() -> list[BaseRoute]:
    return [
        Route("/", home),
        Route("/favicon.ico", favicon),
        Route("/ui/state", _html(_state)),
        Route("/ui/resource", _html(_resource)),
        Route("/ui/inventory", _html(_inventory)),
        Route("/ui/iac", _html(_iac)),
        Route("/ui/webhooks", _html(_webhooks)),
        Route("/ui/policies", _html(_policies)),
        Route("/ui/map", _html(_map)),
        Route("/ui/plan", _html(_plan)),
        Mount("/ui/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
