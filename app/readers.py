"""Who reads a state's outputs, and how a token reads a state over the HTTP backend (pure).

A state may name its output readers (set by an admin or by its writers): token names,
and globs of consumer states. A token counts as a consumer state when it plans or
writes (the plan role or above) some state such a glob matches: the glob `apps/*` lets
in the token of `apps/web`, whose job runs `terraform_remote_state` on this state.

How a GET of state `name` is answered (Read):

    WHOLE            the raw bytes: a token of the plan role or above, in its states
    OUTPUTS          a v4 state of the outputs alone, sensitive ones too: a named reader
    PUBLIC_OUTPUTS   the same without the sensitive outputs: any other token in its states
    NONE             403

A reduced answer keeps the serial and lineage and holds no resource: all that
`terraform_remote_state` reads.
"""

import enum
from dataclasses import dataclass

from app.access import IAC_PREFIX, Principal, Role, checked_globs
from app.errors import BadInput


@dataclass(frozen=True)
class OutputReaders:
    """Who a state names as readers of its outputs."""

    tokens: tuple[str, ...] = ()
    states: tuple[str, ...] = ()  # globs of consumer states


def checked_readers(tokens: list[str], states: list[str]) -> OutputReaders:
    """Readers as given, each once; BadInput for an empty name or an `iac:` glob."""
    if any(not name for name in tokens):
        raise BadInput("a token name is empty")
    checked_globs(states)
    return OutputReaders(tuple(dict.fromkeys(tokens)), tuple(dict.fromkeys(states)))


class Read(enum.Enum):
    WHOLE = "whole"
    OUTPUTS = "outputs"
    PUBLIC_OUTPUTS = "public outputs"
    NONE = "none"

    @property
    def reduced(self) -> bool:
        return self in (Read.OUTPUTS, Read.PUBLIC_OUTPUTS)


def globs_overlap(a: str, b: str) -> bool:
    """Whether some name matches both globs (`*` any run, `?` one character)."""
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    while todo:
        i, j = todo.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] == "*":
            todo.append((i + 1, j))  # the star matches nothing
        if j < len(b) and b[j] == "*":
            todo.append((i, j + 1))
        if i < len(a) and j < len(b):
            x, y = a[i], b[j]
            if x in "*?" or y in "*?" or x == y:  # one character both take
                todo.append((i if x == "*" else i + 1, j if y == "*" else j + 1))
    return False


def is_named_reader(who: Principal, readers: OutputReaders) -> bool:
    """Whether the state names `who`: by its token name, or as a consumer state a glob
    matches that it plans or writes."""
    if not who.verified:
        return False
    if who.name in readers.tokens:
        return True
    if not who.has(Role.PLAN) or not readers.states:
        return False
    if who.patterns is None:
        return True
    own = [p for p in who.patterns if not p.startswith(IAC_PREFIX)]
    return any(globs_overlap(mine, glob) for mine in own for glob in readers.states)


def state_read(who: Principal, name: str, readers: OutputReaders) -> Read:
    """How a GET of state `name` (not an `iac:` one) is answered to `who`."""
    if who.may_plan(name):
        return Read.WHOLE
    if is_named_reader(who, readers):
        return Read.OUTPUTS
    if who.has(Role.READ) and who.may_read(name):
        return Read.PUBLIC_OUTPUTS
    return Read.NONE


@dataclass(frozen=True)
class Abilities:
    """What a token may do on one state, for a person (`infragraph whoami --state`)."""

    read: bool  # GraphQL reads, sensitive values masked
    outputs: bool  # a GET answers its outputs (reduced), at least the public ones
    sensitive_outputs: bool
    raw_state: bool  # a GET answers the whole state: init, plan, output, state pull
    plan_lock: bool  # LOCK for a plan, and UNLOCK of its own plan lock
    write: bool  # POST, DELETE, any LOCK, UNLOCK of its own lock
    force_unlock: bool
    set_output_readers: bool

    def names(self) -> list[str]:
        return [field for field, on in vars(self).items() if on]


def abilities(who: Principal, name: str, readers: OutputReaders) -> Abilities:
    iac = name.startswith(IAC_PREFIX)
    read = state_read(who, name, readers) if not iac else Read.NONE
    place = who.verified and who.may_read(name)
    writes = who.has(Role.WRITE) and place
    return Abilities(
        read=who.has(Role.READ) and place,
        outputs=read is not Read.NONE or (iac and place),
        sensitive_outputs=read in (Read.WHOLE, Read.OUTPUTS) or (iac and place),
        raw_state=read is Read.WHOLE or (iac and place),
        plan_lock=who.has(Role.PLAN) and place and not iac,
        write=writes and not iac,
        force_unlock=who.has(Role.ADMIN),
        set_output_readers=writes,
    )
