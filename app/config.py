"""Settings, read once from the environment."""

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from app.crypto import parse_key
from app.tfstate.remote import Server
from app.webhooks.settings import WebhookSettings

MIB = 1024 * 1024


def _tokens(raw: str) -> dict[str, str]:
    """Parse `name:token,name2:token2` into {token: name}."""
    tokens: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        name, sep, token = item.partition(":")
        if not sep or not name or not token:
            raise ValueError(f"INFRAGRAPH_API_TOKENS: expected name:token, got {item!r}")
        tokens[token] = name
    return tokens


_ORIGIN = re.compile(r"https?://[^/\s*]+")


def _origins(raw: str) -> tuple[str, ...]:
    """Parse `https://a.example,http://localhost:3000`: browser origins, no path, no `*`
    (credentials are allowed, so any origin would let any page use them)."""
    origins = tuple(filter(None, (part.strip().rstrip("/") for part in raw.split(","))))
    for origin in origins:
        if not _ORIGIN.fullmatch(origin):
            raise ValueError(
                f"INFRAGRAPH_CORS_ORIGINS: expected origins such as https://dash.example, "
                f"got {origin!r}"
            )
    return origins


def _log_format(raw: str) -> str:
    if raw not in ("text", "json"):
        raise ValueError(f"INFRAGRAPH_LOG_FORMAT: expected text or json, got {raw!r}")
    return raw


def _positive(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or int(raw) <= 0:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}")
    return int(raw)


def _servers(raw: str) -> tuple[Server, ...]:
    try:
        return tuple(Server.parse(url) for url in raw.split(",") if url.strip())
    except ValueError as error:
        raise ValueError(f"INFRAGRAPH_PUBLIC_URLS: {error}") from None


def _keep_last(raw: str) -> int | None:
    if not raw.strip():
        return None
    keep_last = int(raw)
    if keep_last < 1:
        raise ValueError(f"INFRAGRAPH_PRUNE_KEEP_LAST: at least 1 (the current version): {raw!r}")
    return keep_last


def _key(env: Mapping[str, str], name: str) -> bytes | None:
    raw = env.get(name, "").strip()
    return parse_key(raw, name) if raw else None


@dataclass(frozen=True)
class Settings:
    database_url: str | None = None
    home: Path = Path(".infragraph")
    max_state_bytes: int = 256 * MIB
    max_document_bytes: int = 64 * MIB
    api_tokens: dict[str, str] = field(default_factory=dict)
    # pages on these origins may call the API from a browser (CORS); () = none
    cors_origins: tuple[str, ...] = ()
    public_schema: bool = True
    # how long a database token, once looked up, is taken as it was (app/auth.py)
    token_cache_seconds: float = 10.0
    # trusted OIDC issuers and their rules (app/oidc/config.py); None: none
    oidc_config: Path | None = None
    statement_timeout_ms: int = 30_000
    pool_size: int = 10
    # A request waiting longer for a database connection gets 503 UNAVAILABLE.
    pool_timeout_s: float = 5.0
    # A /graphql body: an IaC document travels inside one, JSON-escaped.
    max_graphql_bytes: int = 80 * MIB
    # State POSTs over large_write_bytes (or without a Content-Length) run at most
    # max_large_writes at once; one more gets 503 with Retry-After.
    large_write_bytes: int = 8 * MIB
    max_large_writes: int = 2
    max_header_bytes: int = 64 * 1024
    # The Authorization header's own allowance, beside the other headers': a credential
    # this long is refused with its reason (401) rather than the headers' 431.
    max_authorization_bytes: int = 256 * 1024
    max_headers: int = 100
    header_timeout_s: float = 10.0  # to receive a request's headers, from its first byte
    body_timeout_s: float = 30.0  # the longest pause while a body streams in
    keepalive_s: float = 5.0  # an idle kept-alive connection is closed after it
    shutdown_timeout_s: float = 30.0  # draining in-flight requests on SIGTERM
    log_format: str = "text"
    # /livez, /readyz and /healthz also on this port, served by a thread of their own
    health_port: int | None = None
    secret_key: str | None = None  # IaC's key for hashes of secrets; None: the database's
    prune_keep_last: int | None = None  # None: keep every version
    # What one GraphQL operation may cost (app/api/cost.py): estimated nodes, and bytes of
    # answer (estimated before, metered while it runs); and what a token may spend, in cost
    # units (a node or a KiB), refilled over token_budget_seconds (0: no budget).
    max_query_nodes: int = 25_000
    max_answer_bytes: int = 64 * MIB  # a state export of 9,000 instances is 19 MiB
    token_budget: int = 2_000_000
    token_budget_seconds: float = 60.0
    # connections of the pool one GraphQL request holds at once (app/api/rationed.py)
    request_connections: int = 4
    # kept blast-radius walks (app/graph/edges.py): rows in all, and age
    blast_cache_rows: int = 5_000_000
    blast_cache_seconds: int = 3600
    # AES-256-GCM key of state at rest (app/crypto.py); None: stored in clear. The old
    # key only opens what is not yet re-sealed by `infragraph rotate-key`.
    encryption_key: bytes | None = field(default=None, repr=False)
    encryption_key_old: bytes | None = field(default=None, repr=False)
    # base URLs this server is also reached at (behind a proxy): a terraform_remote_state
    # address under one of them, or the listen address, links to the state it names
    public_urls: tuple[Server, ...] = ()
    webhooks: WebhookSettings = field(default_factory=WebhookSettings)
    # migrate creates the citus extension and shards the graph by state (app/citus.py)
    citus: bool = False

    @classmethod
    def from_env(cls) -> "Settings":
        env = os.environ
        return cls(
            database_url=env.get("DATABASE_URL") or None,
            home=Path(env.get("INFRAGRAPH_HOME", ".infragraph")),
            max_state_bytes=_positive(env, "INFRAGRAPH_MAX_STATE_BYTES", cls.max_state_bytes),
            max_document_bytes=_positive(
                env, "INFRAGRAPH_MAX_DOCUMENT_BYTES", cls.max_document_bytes
            ),
            api_tokens=_tokens(env.get("INFRAGRAPH_API_TOKENS", "")),
            cors_origins=_origins(env.get("INFRAGRAPH_CORS_ORIGINS", "")),
            oidc_config=Path(env["INFRAGRAPH_OIDC_CONFIG"])
            if env.get("INFRAGRAPH_OIDC_CONFIG")
            else None,
            token_cache_seconds=float(env.get("INFRAGRAPH_TOKEN_CACHE_SECONDS", 10.0)),
            public_schema=env.get("INFRAGRAPH_PUBLIC_SCHEMA", "1") not in ("0", "false", "no"),
            statement_timeout_ms=int(env.get("INFRAGRAPH_STATEMENT_TIMEOUT_MS", 30_000)),
            pool_size=int(env.get("INFRAGRAPH_POOL_SIZE", 10)),
            pool_timeout_s=float(env.get("INFRAGRAPH_POOL_TIMEOUT_S", 5.0)),
            max_graphql_bytes=int(env.get("INFRAGRAPH_MAX_GRAPHQL_BYTES", 80 * MIB)),
            large_write_bytes=int(env.get("INFRAGRAPH_LARGE_WRITE_BYTES", 8 * MIB)),
            max_large_writes=int(env.get("INFRAGRAPH_MAX_LARGE_WRITES", 2)),
            max_header_bytes=int(env.get("INFRAGRAPH_MAX_HEADER_BYTES", 64 * 1024)),
            max_authorization_bytes=int(env.get("INFRAGRAPH_MAX_AUTHORIZATION_BYTES", 256 * 1024)),
            max_headers=int(env.get("INFRAGRAPH_MAX_HEADERS", 100)),
            header_timeout_s=float(env.get("INFRAGRAPH_HEADER_TIMEOUT_S", 10.0)),
            body_timeout_s=float(env.get("INFRAGRAPH_BODY_TIMEOUT_S", 30.0)),
            keepalive_s=float(env.get("INFRAGRAPH_KEEPALIVE_S", 5.0)),
            shutdown_timeout_s=float(env.get("INFRAGRAPH_SHUTDOWN_TIMEOUT_S", 30.0)),
            log_format=_log_format(env.get("INFRAGRAPH_LOG_FORMAT", "text")),
            health_port=int(env["INFRAGRAPH_HEALTH_PORT"])
            if env.get("INFRAGRAPH_HEALTH_PORT")
            else None,
            secret_key=env.get("INFRAGRAPH_SECRET_KEY") or None,
            prune_keep_last=_keep_last(env.get("INFRAGRAPH_PRUNE_KEEP_LAST", "")),
            max_query_nodes=_positive(env, "INFRAGRAPH_MAX_QUERY_NODES", cls.max_query_nodes),
            max_answer_bytes=_positive(env, "INFRAGRAPH_MAX_ANSWER_BYTES", cls.max_answer_bytes),
            token_budget=int(env.get("INFRAGRAPH_TOKEN_BUDGET", cls.token_budget)),
            token_budget_seconds=float(
                env.get("INFRAGRAPH_TOKEN_BUDGET_SECONDS", cls.token_budget_seconds)
            ),
            request_connections=_positive(
                env, "INFRAGRAPH_REQUEST_CONNECTIONS", cls.request_connections
            ),
            blast_cache_rows=int(env.get("INFRAGRAPH_BLAST_CACHE_ROWS", 5_000_000)),
            blast_cache_seconds=int(env.get("INFRAGRAPH_BLAST_CACHE_SECONDS", 3600)),
            encryption_key=_key(env, "INFRAGRAPH_ENCRYPTION_KEY"),
            citus=env.get("INFRAGRAPH_CITUS", "0") not in ("0", "false", "no", ""),
            encryption_key_old=_key(env, "INFRAGRAPH_ENCRYPTION_KEY_OLD"),
            public_urls=_servers(env.get("INFRAGRAPH_PUBLIC_URLS", "")),
            webhooks=WebhookSettings.from_env(env),
        )
