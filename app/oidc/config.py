"""Trusted OIDC issuers, read from INFRAGRAPH_OIDC_CONFIG (a YAML or JSON file), and
their rules: which verified claims get which role, state globs and IaC scopes. Pure:
no I/O but reading the file.

    issuers:
      - name: github                       # principals are named oidc:github:<sub>
        issuer: https://token.actions.githubusercontent.com
        audience: https://infragraph.example.com   # required: no default is accepted
        algorithms: [RS256]                # asymmetric only: none and HS* are refused
        clockSkewSeconds: 60
        maxTtlSeconds: 7200                # the longest an exchanged token lives
        rules:                             # the first rule that matches wins
          - match: {repository_id: "892345671", ref: refs/heads/main}
            role: write
            states: ["prod/*"]
          - match: {repository_id: "892345671"}
            role: read
            states: ["prod/*"]

A rule's `match` maps claim names to a string or a list of strings (any of them); a
string may hold `*` (any run) and `?` (one character). A claim that is absent never
matches; numbers and booleans are compared as their JSON text.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from app import globs
from app.access import Role, checked_globs, checked_scopes
from app.errors import BadInput

ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
DEFAULT_MAX_TTL_S = 7200.0
DEFAULT_SKEW_S = 60.0
DEFAULT_JWKS_CACHE_S = 3600.0
DEFAULT_REFETCH_S = 30.0


@dataclass(frozen=True)
class Rule:
    match: tuple[tuple[str, tuple[str, ...]], ...]
    role: Role
    states: tuple[str, ...]
    scopes: tuple[str, ...]

    def matches(self, claims: dict[str, Any]) -> bool:
        return all(
            name in claims and any(globs.matches(p, claim_text(claims[name])) for p in ps)
            for name, ps in self.match
        )

    def describe(self) -> str:
        return ", ".join(f"{name}={'|'.join(ps)}" for name, ps in self.match) or "(any)"


@dataclass(frozen=True)
class Issuer:
    name: str
    issuer: str
    audience: str
    algorithms: tuple[str, ...] = ("RS256",)
    clock_skew_s: float = DEFAULT_SKEW_S
    max_ttl_s: float = DEFAULT_MAX_TTL_S
    jwks_cache_s: float = DEFAULT_JWKS_CACHE_S
    min_refetch_s: float = DEFAULT_REFETCH_S  # unknown-kid refetches, at most one per this
    rules: tuple[Rule, ...] = field(default_factory=tuple)

    def first_rule(self, claims: dict[str, Any]) -> Rule | None:
        return next((r for r in self.rules if r.matches(claims)), None)


def claim_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(i, str | int | bool) for i in items):
        raise BadInput(f"{where}: give a string or a list of strings")
    return tuple(claim_text(i) for i in items)


def _rule(raw: Any, where: str) -> Rule:
    if not isinstance(raw, dict) or not isinstance(raw.get("match", {}), dict):
        raise BadInput(f"{where}: a rule is a mapping with `match`, `role`, `states`, `scopes`")
    try:
        role = Role(raw.get("role"))
    except ValueError:
        raise BadInput(f"{where}: role is one of {[r.value for r in Role]}") from None
    match = tuple((str(k), _strings(v, f"{where}.match.{k}")) for k, v in raw["match"].items())
    states = checked_globs([str(g) for g in raw.get("states") or []])
    scopes = checked_scopes([str(s) for s in raw.get("scopes") or []])
    if not states and not scopes:
        raise BadInput(f"{where}: give `states` or `scopes` (a rule never reaches everything)")
    return Rule(match, role, tuple(states), tuple(scopes))


def _issuer(raw: Any, where: str) -> Issuer:
    if not isinstance(raw, dict):
        raise BadInput(f"{where}: an issuer is a mapping")
    url, audience = raw.get("issuer"), raw.get("audience")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        raise BadInput(f"{where}: `issuer` is the issuer's URL")
    if not isinstance(audience, str) or not audience:
        raise BadInput(f"{where}: `audience` is required (no default audience is accepted)")
    algorithms = tuple(raw.get("algorithms") or ["RS256"])
    if refused := [a for a in algorithms if a not in ASYMMETRIC]:
        raise BadInput(f"{where}: algorithms {refused} refused: asymmetric ones only")
    rules = raw.get("rules")
    if not isinstance(rules, list) or not rules:
        raise BadInput(f"{where}: give `rules` (a list)")
    return Issuer(
        name=str(raw.get("name") or url),
        issuer=url.rstrip("/"),
        audience=audience,
        algorithms=algorithms,
        clock_skew_s=float(raw.get("clockSkewSeconds", DEFAULT_SKEW_S)),
        max_ttl_s=float(raw.get("maxTtlSeconds", DEFAULT_MAX_TTL_S)),
        jwks_cache_s=float(raw.get("jwksCacheSeconds", DEFAULT_JWKS_CACHE_S)),
        min_refetch_s=float(raw.get("jwksMinRefetchSeconds", DEFAULT_REFETCH_S)),
        rules=tuple(_rule(r, f"{where}.rules[{i}]") for i, r in enumerate(rules)),
    )


def parse(text: str, where: str = "OIDC config") -> tuple[Issuer, ...]:
    """The issuers of a YAML or JSON document (JSON is YAML)."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BadInput(f"{where}: not YAML or JSON ({exc})") from None
    issuers = raw.get("issuers") if isinstance(raw, dict) else None
    if not isinstance(issuers, list):
        raise BadInput(f"{where}: give `issuers` (a list)")
    found = tuple(_issuer(r, f"{where}: issuers[{i}]") for i, r in enumerate(issuers))
    if len({i.issuer for i in found}) != len(found):
        raise BadInput(f"{where}: an issuer is listed twice")
    return found


def load(path: Path) -> tuple[Issuer, ...]:
    return parse(path.read_text(), str(path))
