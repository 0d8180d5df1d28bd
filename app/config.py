"""Settings, read once from the environment."""

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

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


def _positive(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) <= 0:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}")
    return int(raw)


def _keep_last(raw: str) -> int | None:
    if not raw.strip():
        return None
    keep_last = int(raw)
    if keep_last < 1:
        raise ValueError(f"INFRAGRAPH_PRUNE_KEEP_LAST: at least 1 (the current version): {raw!r}")
    return keep_last


@dataclass(frozen=True)
class Settings:
    database_url: str | None = None
    home: Path = Path(".infragraph")
    max_state_bytes: int = 256 * MIB
    max_document_bytes: int = 64 * MIB
    api_tokens: dict[str, str] = field(default_factory=dict)
    public_schema: bool = True
    statement_timeout_ms: int = 30_000
    secret_key: str | None = None  # IaC's key for hashes of secrets; None: the database's
    prune_keep_last: int | None = None  # None: keep every version
    # kept blast-radius walks (app/graph/edges.py): rows in all, and age
    blast_cache_rows: int = 5_000_000
    blast_cache_seconds: int = 3600

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
            public_schema=env.get("INFRAGRAPH_PUBLIC_SCHEMA", "1") not in ("0", "false", "no"),
            statement_timeout_ms=int(env.get("INFRAGRAPH_STATEMENT_TIMEOUT_MS", 30_000)),
            secret_key=env.get("INFRAGRAPH_SECRET_KEY") or None,
            prune_keep_last=_keep_last(env.get("INFRAGRAPH_PRUNE_KEEP_LAST", "")),
            blast_cache_rows=int(env.get("INFRAGRAPH_BLAST_CACHE_ROWS", 5_000_000)),
            blast_cache_seconds=int(env.get("INFRAGRAPH_BLAST_CACHE_SECONDS", 3600)),
        )
