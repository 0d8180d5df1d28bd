"""Reading a Terraform plan's JSON (`terraform show -json tfplan`, format_version 1.x,
Terraform and OpenTofu): pure, no I/O.

Each resource instance change becomes a Change: its action (a delete and a create is a
REPLACE, in either order), whether it moves, imports or forgets, and the attribute paths
whose value differs, with values masked where Terraform marks them sensitive and
"(known after apply)" where it cannot know them yet.
"""

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from app.errors import BadInput

MASK = "(sensitive value)"
UNKNOWN = "(known after apply)"
# A plan's values past this many changed paths per instance are counted, not listed.
MAX_PATHS = 200


class Action(enum.Enum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    REPLACE = "replace"
    READ = "read"
    NO_OP = "no-op"
    FORGET = "forget"


# Terraform's action lists, to one action.
ACTIONS: dict[tuple[str, ...], Action] = {
    ("no-op",): Action.NO_OP,
    ("create",): Action.CREATE,
    ("read",): Action.READ,
    ("update",): Action.UPDATE,
    ("delete",): Action.DELETE,
    ("delete", "create"): Action.REPLACE,
    ("create", "delete"): Action.REPLACE,
    ("forget",): Action.FORGET,
    ("create", "forget"): Action.REPLACE,
    ("forget", "create"): Action.REPLACE,
}
# What a change does to what depends on it: these instances are the roots of the impact.
REACHING = frozenset({Action.UPDATE, Action.DELETE, Action.REPLACE})
# The actions whose planned values a write would store (policies evaluate them).
PLANNED = frozenset({Action.CREATE, Action.UPDATE, Action.REPLACE})


@dataclass(frozen=True)
class AttributeChange:
    path: str  # dotted, list indexes as numbers: "tags.env", "ingress.0.port"
    before: Any
    after: Any  # UNKNOWN when known only after apply
    sensitive: bool = False


# Not frozen: a plan of a large state makes tens of thousands, and a frozen dataclass
# costs three times as much to make (each field set through object.__setattr__).
@dataclass(slots=True)
class Change:
    address: str
    action: Action
    mode: str  # "managed" or "data"
    type: str
    provider: str = ""  # as a state names it: provider["registry/ns/name"]
    previous_address: str | None = None  # set when the instance moves
    importing: bool = False
    deposed: str | None = None
    reason: str | None = None
    attributes: list[AttributeChange] = field(default_factory=list)
    more_attributes: int = 0  # changed paths past MAX_PATHS
    after: Any = None  # the planned values, masked (policies read them)

    @property
    def moved(self) -> bool:
        return self.previous_address is not None and self.previous_address != self.address


@dataclass(frozen=True)
class OutputChange:
    name: str
    action: Action
    before: Any
    after: Any
    sensitive: bool


@dataclass(frozen=True)
class ParsedPlan:
    format_version: str
    terraform_version: str
    changes: list[Change]
    output_changes: list[OutputChange]
    drift: list[Change]
    prior: dict[str, Any]  # prior state instance address -> {"id": its id} (masked)

    def summary(self) -> dict[str, int]:
        """How many instances per action, and how many move, import."""
        counts: dict[str, int] = {}
        for change in self.changes:
            counts[change.action.name] = counts.get(change.action.name, 0) + 1
            if change.moved:
                counts["MOVE"] = counts.get("MOVE", 0) + 1
            if change.importing:
                counts["IMPORT"] = counts.get("IMPORT", 0) + 1
        return counts


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadInput(f"not a Terraform plan: {what} is not an object")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadInput(f"not a Terraform plan: {what} is not a list")
    return value


def _text(value: Any, what: str, *, optional: bool = False) -> str:
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        raise BadInput(f"not a Terraform plan: {what} is not a string")
    return value


def action_of(actions: Any, what: str) -> Action:
    listed = tuple(_list(actions, f"{what}.actions"))
    found = ACTIONS.get(listed) if all(isinstance(a, str) for a in listed) else None
    if found is None:
        raise BadInput(f"not a Terraform plan: {what} has unknown actions {list(listed)!r}")
    return found


def masked(value: Any, sensitive: Any) -> Any:
    """`value` with each part Terraform marks sensitive (a `true` at its place) masked."""
    if sensitive is True:
        return MASK
    if isinstance(value, dict) and isinstance(sensitive, dict):
        return {k: masked(v, sensitive.get(k)) for k, v in value.items()}
    if isinstance(value, list) and isinstance(sensitive, list):
        return [
            masked(v, sensitive[i] if i < len(sensitive) else None) for i, v in enumerate(value)
        ]
    return value


class _Absent:
    """No value at a path (a shorter list, a missing key): not the same as a null."""


_ABSENT = _Absent()


def _at(tree: Any, key: str | int, missing: Any = None) -> Any:
    if isinstance(tree, dict) and isinstance(key, str):
        return tree.get(key, missing)
    if isinstance(tree, list) and isinstance(key, int) and key < len(tree):
        return tree[key]
    return missing


def _shown(value: Any) -> Any:
    return None if value is _ABSENT else value


def _keys(before: Any, after: Any, unknown: Any) -> list[str | int] | None:
    """The keys to descend into, when before and after are both objects or both lists."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = set(before) | set(after)
        if isinstance(unknown, dict):
            keys |= set(unknown)
        return sorted(keys)
    if isinstance(before, list) and isinstance(after, list):
        size = max(len(before), len(after), len(unknown) if isinstance(unknown, list) else 0)
        return list(range(size))
    return None


def changed_paths(
    before: Any,
    after: Any,
    unknown: Any,
    before_sensitive: Any,
    after_sensitive: Any,
    path: tuple[str | int, ...] = (),
) -> Iterator[AttributeChange]:
    """Every leaf path whose value differs between `before` and `after` (or is unknown
    after apply), in order; values masked where either side is sensitive."""
    if unknown is True:
        sensitive = before_sensitive is True or after_sensitive is True
        before_shown = masked(_shown(before), before_sensitive)
        yield AttributeChange(_dotted(path), before_shown, UNKNOWN, sensitive)
        return
    keys = _keys(before, after, unknown)
    if keys is not None and before_sensitive is not True and after_sensitive is not True:
        for key in keys:
            b, a, u = _at(before, key, _ABSENT), _at(after, key, _ABSENT), _at(unknown, key)
            bs, as_ = _at(before_sensitive, key), _at(after_sensitive, key)
            # an equal subtree holds no change: one comparison instead of a walk
            if b == a and bs == as_ and not _holds_unknown(u):
                continue
            yield from changed_paths(b, a, u, bs, as_, (*path, key))
        return
    if before == after and before_sensitive == after_sensitive:
        return
    sensitive = before_sensitive not in (None, False) or after_sensitive not in (None, False)
    yield AttributeChange(
        _dotted(path),
        masked(_shown(before), before_sensitive),
        masked(_shown(after), after_sensitive),
        sensitive,
    )


def _holds_unknown(unknown: Any) -> bool:
    """Whether an `after_unknown` tree marks any value as known only after apply."""
    if unknown is True:
        return True
    if isinstance(unknown, dict):
        return any(_holds_unknown(v) for v in unknown.values())
    if isinstance(unknown, list):
        return any(_holds_unknown(v) for v in unknown)
    return False


def _dotted(path: tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in path)


def compared(
    action: Action,
    before: Any,
    after: Any,
    unknown: Any,
    before_sensitive: Any,
    after_sensitive: Any,
) -> tuple[list[AttributeChange], int, Any]:
    """What a change of `action` between those values is: the attribute paths it
    changes (at most MAX_PATHS), how many more, and its planned values (masked) when the
    action stores them (else None)."""
    attributes: list[AttributeChange] = []
    more = 0
    # most instances of a plan do not change: one comparison of their trees says so
    unchanged = (
        before == after and before_sensitive == after_sensitive and not _holds_unknown(unknown)
    )
    if not unchanged and (action not in (Action.NO_OP, Action.READ) or before is not None):
        for found in changed_paths(before, after, unknown, before_sensitive, after_sensitive):
            if len(attributes) < MAX_PATHS:
                attributes.append(found)
            else:
                more += 1
    # what policies read; only these actions leave planned values in the state
    planned = masked(after, after_sensitive) if action in PLANNED else None
    return attributes, more, planned


def state_provider(name: str) -> str:
    """A plan's provider_name as a state names the provider: provider["name"]."""
    return f'provider["{name}"]'


def _change(entry: Any, what: str) -> Change:
    entry = _object(entry, what)
    address = _text(entry.get("address"), f"{what}.address")
    change = _object(entry.get("change"), f"{address}.change")
    action = action_of(change.get("actions"), address)
    attributes, more, planned = compared(
        action,
        change.get("before"),
        change.get("after"),
        change.get("after_unknown"),
        change.get("before_sensitive"),
        change.get("after_sensitive"),
    )
    previous = entry.get("previous_address")
    deposed = entry.get("deposed")
    reason = entry.get("action_reason")
    return Change(
        address=address,
        action=action,
        mode=_text(entry.get("mode", "managed"), f"{address}.mode"),
        type=_text(entry.get("type", ""), f"{address}.type"),
        provider=state_provider(_text(entry.get("provider_name", ""), f"{address}.provider_name")),
        previous_address=previous if isinstance(previous, str) else None,
        importing=isinstance(change.get("importing"), dict),
        deposed=deposed if isinstance(deposed, str) else None,
        reason=reason if isinstance(reason, str) else None,
        attributes=attributes,
        more_attributes=more,
        after=planned,
    )


def _output(name: str, entry: Any) -> OutputChange:
    change = _object(entry, f"output {name!r}")
    action = action_of(change.get("actions"), f"output {name!r}")
    before_sensitive = change.get("before_sensitive")
    after_sensitive = change.get("after_sensitive")
    after: Any = UNKNOWN if change.get("after_unknown") is True else change.get("after")
    if after is not UNKNOWN:
        after = masked(after, after_sensitive)
    return OutputChange(
        name=name,
        action=action,
        before=masked(change.get("before"), before_sensitive),
        after=after,
        sensitive=before_sensitive is True or after_sensitive is True,
    )


def _prior(document: dict[str, Any]) -> dict[str, Any]:
    """The prior state's managed instances: address -> {"id": its id} (masked), what a
    plan is compared with the state's current version by."""
    prior = document.get("prior_state")
    if prior is None:
        return {}
    values = _object(prior, "prior_state").get("values") or {}
    found: dict[str, Any] = {}
    modules = [_object(values, "prior_state.values").get("root_module") or {}]
    while modules:
        module = _object(modules.pop(), "a prior_state module")
        for r in _list(module.get("resources"), "a module's resources"):
            r = _object(r, "a prior_state resource")
            if r.get("mode", "managed") == "managed" and isinstance(r.get("address"), str):
                values, sensitive = r.get("values"), r.get("sensitive_values")
                kept = {"id": values["id"]} if isinstance(values, dict) and "id" in values else {}
                found[r["address"]] = masked(kept, sensitive)
        modules.extend(_list(module.get("child_modules"), "child_modules"))
    return found


def checked_version(version: Any) -> str:
    """A plan's format_version, when it is one this server reads."""
    if not isinstance(version, str):
        raise BadInput("not a Terraform plan: no format_version (use `terraform show -json`)")
    if version.split(".")[0] != "1":
        raise BadInput(f"unsupported plan format_version {version!r}: 1.x is read")
    return version


def parse_plan(document: Any) -> ParsedPlan:
    """A plan's JSON document (already read: app.jsonutil.read), checked and summarised;
    BadInput says why it is not a plan this server reads. app.plans.document reads one
    from its bytes faster."""
    document = _object(document, "the document")
    version = checked_version(document.get("format_version"))
    if "resource_changes" not in document and "planned_values" not in document:
        raise BadInput("not a Terraform plan: no resource_changes or planned_values")
    changes = [
        _change(e, "resource_changes[]")
        for e in _list(document.get("resource_changes"), "resource_changes")
    ]
    drift = [
        _change(e, "resource_drift[]")
        for e in _list(document.get("resource_drift"), "resource_drift")
    ]
    return assembled(
        version,
        _text(document.get("terraform_version"), "terraform_version", optional=True),
        changes,
        outputs_of(document.get("output_changes")),
        drift,
        _prior(document),
    )


def outputs_of(output_changes: Any) -> list[OutputChange]:
    """A plan's `output_changes`, by name."""
    outputs = _object(output_changes or {}, "output_changes")
    return [_output(name, outputs[name]) for name in sorted(outputs)]


def assembled(
    version: str,
    terraform_version: str,
    changes: list[Change],
    outputs: list[OutputChange],
    drift: list[Change],
    prior: dict[str, Any],
) -> ParsedPlan:
    return ParsedPlan(
        format_version=version,
        terraform_version=terraform_version,
        changes=sorted(changes, key=lambda c: (c.address, c.deposed or "")),
        output_changes=outputs,
        drift=sorted(drift, key=lambda c: c.address),
        prior=prior,
    )
