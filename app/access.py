"""Who may do what: the caller's role and the states and IaC scopes it may touch (pure).

Roles, each with everything of the one before:

    read   GraphQL reads of the states it may see (sensitive values masked); a GET of one
           of them answers its outputs alone, sensitive ones left out (app/readers.py)
    plan   the raw state (GET: init, plan, output, state pull) and a lock whose LockInfo
           says it is for a plan (LOCK, and UNLOCK of its own): never a POST or DELETE
    write  the HTTP backend (GET raw, POST, LOCK, UNLOCK of its own lock, DELETE), IaC
           plan/apply/release and catalog writes: in its states and scopes
    admin  everything: force-unlock, prune, export, policies, tokens, deleting a scope

A lock belongs to the token that took it (app/graph/locks.py): its ID grants nothing.

What a token touches: state-name globs (`team/prod/*`, app/globs.py's dialect: `*` any
run, `/` too; `?` one character; nothing else special) and IaC scope slugs. With
neither, everything; with either, exactly those: a token made for `team/*` touches no
IaC scope. IaC scope `s` holds the states
`iac:s/{system}`; a state glob never reaches an `iac:` name.

Enforcement is one place per interface:
  - HTTP backend: app/backend/routes.py `states` (`require_state`, per method);
  - GraphQL mutations: app/api/access.py, one rule per root Mutation field;
  - GraphQL reads: filtered in SQL, so pages and counts only ever hold what the caller
    may see. To filter a new query, give its SQL function the caller's `patterns`
    (`info.context.principal.patterns`; None: everything) and add to its WHERE
    `may_read(<state name column>, $n::text[])` (migration 0013). An object fetched by
    id or name is checked with `may_read(name)` and answered as absent (null);
  - IaC REST: app/api/iac/routes.py (`require_scope`).
"""

import enum
import re
from dataclasses import dataclass
from functools import cached_property

from app import globs
from app.errors import BadInput, Forbidden

IAC_PREFIX = "iac:"
_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]*")


class Role(enum.Enum):
    READ = "read"
    PLAN = "plan"
    WRITE = "write"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return list(Role).index(self)


def iac_pattern(slug: str) -> str:
    """The states of IaC scope `slug`, as a glob."""
    return f"{IAC_PREFIX}{slug}/*"


def checked_globs(globs: list[str]) -> list[str]:
    for glob in globs:
        if not glob:
            raise BadInput("a state glob is empty")
        if glob.startswith(IAC_PREFIX):
            raise BadInput(f"{glob!r}: IaC states are given by their scope (--scopes), not a glob")
    return globs


def checked_scopes(slugs: list[str]) -> list[str]:
    for slug in slugs:
        if not _SLUG.fullmatch(slug):
            raise BadInput(f"{slug!r} is not a scope slug (lowercase letters, digits, - and _)")
    return slugs


@dataclass(frozen=True)
class Principal:
    """Who is calling: a token's name, role, and what it touches (see the module)."""

    name: str
    role: Role
    state_globs: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    verified: bool = True  # False: UNVERIFIED, which touches nothing and has no role
    # an OIDC caller's verified claims (app.oidc.verify.AUDITED), which its events record
    claims: tuple[tuple[str, str], ...] = ()

    @property
    def everywhere(self) -> bool:
        return self.verified and not self.state_globs and not self.scopes

    @cached_property
    def patterns(self) -> list[str] | None:
        """What it may touch, as globs over state names (the SQL function may_read's
        argument); None: everything."""
        if self.everywhere:
            return None
        return [*self.state_globs, *(iac_pattern(slug) for slug in self.scopes)]

    @cached_property
    def _matchers(self) -> list[tuple[bool, re.Pattern[str]]]:
        """(whether it is for IaC states, its regex) of each pattern."""
        return [(p.startswith(IAC_PREFIX), globs.regex(p)) for p in self.patterns or ()]

    def may_read(self, name: str) -> bool:
        """Whether state `name` is one it touches: may_read of migration 0013, in Python."""
        if self.patterns is None:
            return True
        iac = name.startswith(IAC_PREFIX)
        return any(for_iac == iac and m.fullmatch(name) for for_iac, m in self._matchers)

    def may_touch_scope(self, slug: str) -> bool:
        return self.everywhere or slug in self.scopes

    def has(self, role: Role) -> bool:
        return self.verified and self.role.rank >= role.rank

    def may_plan(self, name: str) -> bool:
        """Whether it reads state `name` whole (the raw bytes Terraform plans from)."""
        return self.has(Role.PLAN) and self.may_read(name)

    def refusal(self, doing: str, why: str, **detail: str) -> Forbidden:
        """What a refusal says: who asked, what, and why."""
        return self._refuse(doing, why, **detail)

    def _refuse(self, doing: str, why: str, **detail: str) -> Forbidden:
        return Forbidden(
            f"token {self.name!r} ({self.role.value}) may not {doing}: {why}",
            {"token": self.name, "role": self.role.value, **detail},
        )

    def require(self, role: Role, doing: str) -> None:
        """Forbidden unless the role is at least `role`; `doing` says what was asked."""
        if not self.has(role):
            raise self._refuse(doing, f"it needs the {role.value} role", needs=role.value)

    def require_state(self, role: Role, name: str, doing: str) -> None:
        self.require(role, doing)
        if not self.may_read(name):
            where = ", ".join(self.patterns or ()) or "none"
            raise self._refuse(doing, f"state {name!r} is outside its states ({where})", state=name)

    def require_scope(self, role: Role, slug: str, doing: str) -> None:
        self.require(role, doing)
        if not self.may_touch_scope(slug):
            where = ", ".join(self.scopes) or "none"
            raise self._refuse(doing, f"scope {slug!r} is outside its scopes ({where})", scope=slug)


ANONYMOUS = Principal("anonymous", Role.ADMIN)  # everyone, on a server with no tokens
# A websocket that brought no Authorization header, until its connection_init payload
# shows a token (app.api.app); no token name holds a ":"
UNVERIFIED = Principal(":unverified", Role.READ, verified=False)


def bootstrap(name: str) -> Principal:
    """A token of INFRAGRAPH_API_TOKENS: admin, everywhere."""
    return Principal(name, Role.ADMIN)
