"""Settings, read once from the environment."""

import os
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


@dataclass(frozen=True)
class Settings:
    database_url: str | None = None
    home: Path = Path(".infragraph")
    max_state_bytes: int = 256 * MIB
    max_document_bytes: int = 64 * MIB
    api_tokens: dict[str, str] = field(default_factory=dict)
    public_schema: bool = True
    statement_timeout_ms: int = 30_000
    # kept blast-radius walks (app/graph/edges.py): rows in all, and age
    blast_cache_rows: int = 5_000_000
    blast_cache_seconds: int = 3600

    @classmethod
    def from_env(cls) -> "Settings":
        env = os.environ
        return cls(
            database_url=env.get("DATABASE_URL") or None,
            home=Path(env.get("INFRAGRAPH_HOME", ".infragraph")),
            max_state_bytes=int(env.get("INFRAGRAPH_MAX_STATE_BYTES", 256 * MIB)),
            max_document_bytes=int(env.get("INFRAGRAPH_MAX_DOCUMENT_BYTES", 64 * MIB)),
            api_tokens=_tokens(env.get("INFRAGRAPH_API_TOKENS", "")),
            public_schema=env.get("INFRAGRAPH_PUBLIC_SCHEMA", "1") not in ("0", "false", "no"),
            statement_timeout_ms=int(env.get("INFRAGRAPH_STATEMENT_TIMEOUT_MS", 30_000)),
            blast_cache_rows=int(env.get("INFRAGRAPH_BLAST_CACHE_ROWS", 5_000_000)),
            blast_cache_seconds=int(env.get("INFRAGRAPH_BLAST_CACHE_SECONDS", 3600)),
        )
