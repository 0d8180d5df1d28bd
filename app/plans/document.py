"""A plan's JSON read from its bytes, parsing only what is read of it: pure, no I/O.

`terraform show -json` of a large state is tens of megabytes, most of it values read
for nothing: `planned_values` (the planned state again), the prior state's values (of
which only each instance's `id` says whether the plan is stale), and the before and
after values of the many instances a plan leaves as they are. Parsed whole into Python
objects, that costs more than the rest of a plan's analysis. So `read_plan` parses the
bytes once, with msgspec, against the shape of a plan: what is not read is checked as
JSON and skipped, no object made for it; a change's values are held as their bytes, and
parsed (by app.jsonutil.read, with its limits) only when they are read:

- a change whose before and after (and their sensitivity) are the same bytes, with no
  value known only after apply, changes no attribute: of its values only the planned
  ones are parsed, when its action stores them (policies read them);
- a change whose bytes differ is parsed whole, as are the outputs and the configuration.

The result is what parse_plan (app/plans/parse.py) and configuration_of
(app/configuration/parse.py) make of the whole document, through the same functions. A
body not of that shape (not JSON, a field of another type, a number past what msgspec
reads exactly, unknown actions, an escaped U+0000, invalid UTF-8, deep nesting) is read
whole by app.jsonutil.read and parse_plan instead, which refuse it, or read it, as they
always do, with their reasons. Parts skipped are not held to read's depth limit, which
bounds what is kept.
"""

from typing import Any

import msgspec

from app.configuration.parse import Configuration, configuration_of
from app.jsonutil import JsonInputError, check_value, read
from app.plans.parse import (
    ACTIONS,
    PLANNED,
    Change,
    ParsedPlan,
    assembled,
    checked_version,
    compared,
    masked,
    outputs_of,
    parse_plan,
    state_provider,
)
from app.process import gc_paused

_NONE = msgspec.Raw()  # a field absent from the document: no bytes at all
_UNSET: Any = msgspec.UNSET
_EMPTY = msgspec.Raw(b"{}")


class _Change(msgspec.Struct):
    actions: list[str]
    before: msgspec.Raw = _NONE
    after: msgspec.Raw = _NONE
    after_unknown: msgspec.Raw = _NONE
    before_sensitive: msgspec.Raw = _NONE
    after_sensitive: msgspec.Raw = _NONE
    importing: Any = None


class _Entry(msgspec.Struct):
    address: str
    change: _Change
    mode: str = "managed"
    type: str = ""
    provider_name: str = ""
    previous_address: Any = None
    deposed: Any = None
    action_reason: Any = None


class _Values(msgspec.Struct):
    id: Any = _UNSET


class _PriorResource(msgspec.Struct):
    address: Any = None
    mode: Any = "managed"
    values: _Values | None = None
    sensitive_values: Any = None


class _Module(msgspec.Struct):
    resources: list[_PriorResource] | None = None
    child_modules: "list[_Module] | None" = None


class _PriorValues(msgspec.Struct):
    root_module: _Module | None = None


class _PriorState(msgspec.Struct):
    values: _PriorValues | None = None


class _Plan(msgspec.Struct):
    format_version: Any = None
    terraform_version: str | None = None
    planned_values: msgspec.Raw = _NONE  # only whether it is there
    resource_changes: list[_Entry] | None = _UNSET  # null and absent differ (parse_plan)
    resource_drift: list[_Entry] | None = None
    output_changes: msgspec.Raw = _NONE
    prior_state: _PriorState | None = None
    configuration: msgspec.Raw = _NONE


_DECODER = msgspec.json.Decoder(_Plan)
# Depths in the document (1: the document), as app.jsonutil.read counts them: a change's
# values (document, resource_changes, the entry, its change, the value), a section, and
# a prior instance's id (document, prior_state, values, root_module, resources, the
# resource, values, id: in a child module deeper, held to the same limit).
_VALUE_LEVEL = 5
_SECTION_LEVEL = 2
_ID_LEVEL = 8


class _Whole(Exception):
    """The body is to be read whole (app.jsonutil.read, parse_plan)."""


def _value(raw: msgspec.Raw, level: int = _VALUE_LEVEL) -> Any:
    if raw is _NONE:
        return None
    try:
        return read(bytes(raw), level=level)
    except JsonInputError:
        raise _Whole from None  # refused, as where in the whole document it says


def _kept(value: Any) -> Any:
    """A value msgspec parsed that is kept (an id, its sensitivity: mostly a string, {}
    or true), held to read's depth limit."""
    if isinstance(value, dict | list) and value:
        try:
            check_value(value, level=_ID_LEVEL, strings=False)
        except JsonInputError:
            raise _Whole from None
    return value


def _change(entry: _Entry) -> Change:
    change = entry.change
    action = ACTIONS.get(tuple(change.actions))
    if action is None:
        raise _Whole  # parse_plan says what is wrong with them
    unknown = change.after_unknown
    if (
        change.before == change.after
        and change.before_sensitive == change.after_sensitive
        and (unknown is _NONE or unknown == _EMPTY or b"true" not in bytes(unknown))
    ):
        # the same values on both sides, none unknown: no attribute changes, so of the
        # values only the planned ones are read (one parse stands for both sides)
        if action in PLANNED:
            after, sensitive = _value(change.after), _value(change.after_sensitive)
            attributes, more, planned = compared(action, after, after, None, sensitive, sensitive)
        else:  # what compared() makes of no values
            attributes, more, planned = [], 0, None
    else:
        attributes, more, planned = compared(
            action,
            _value(change.before),
            _value(change.after),
            _value(unknown),
            _value(change.before_sensitive),
            _value(change.after_sensitive),
        )
    previous, deposed, reason = entry.previous_address, entry.deposed, entry.action_reason
    return Change(
        address=entry.address,
        action=action,
        mode=entry.mode,
        type=entry.type,
        provider=state_provider(entry.provider_name),
        previous_address=previous if isinstance(previous, str) else None,
        importing=isinstance(change.importing, dict),
        deposed=deposed if isinstance(deposed, str) else None,
        reason=reason if isinstance(reason, str) else None,
        attributes=attributes,
        more_attributes=more,
        after=planned,
    )


def _prior(prior: _PriorState | None) -> dict[str, Any]:
    """As parse_plan reads a prior state: managed instance address -> {"id": its id}
    (masked)."""
    found: dict[str, Any] = {}
    if prior is None or prior.values is None or prior.values.root_module is None:
        return found
    modules = [prior.values.root_module]
    while modules:
        module = modules.pop()
        for r in module.resources or ():
            if r.mode == "managed" and isinstance(r.address, str):
                values = r.values
                kept = {} if values is None or values.id is _UNSET else {"id": _kept(values.id)}
                sensitive = _kept(r.sensitive_values)
                found[r.address] = masked(kept, sensitive) if sensitive else kept
        modules.extend(module.child_modules or ())
    return found


def _parsed(plan: _Plan) -> tuple[ParsedPlan, Configuration | None]:
    version = checked_version(plan.format_version)
    if plan.resource_changes is _UNSET and plan.planned_values is _NONE:
        raise _Whole  # parse_plan says it is not a plan
    changes = [_change(e) for e in plan.resource_changes or ()]
    drift = [_change(e) for e in plan.resource_drift or ()]
    parsed = assembled(
        version,
        plan.terraform_version or "",
        changes,
        outputs_of(_value(plan.output_changes, _SECTION_LEVEL)),
        drift,
        _prior(plan.prior_state),
    )
    configuration = _value(plan.configuration, _SECTION_LEVEL)
    found = configuration_of({"configuration": configuration, **_version(plan)})
    return parsed, found


def _version(plan: _Plan) -> dict[str, Any]:
    return {} if plan.terraform_version is None else {"terraform_version": plan.terraform_version}


def read_plan(raw: bytes) -> tuple[ParsedPlan, Configuration | None]:
    """A plan's JSON `raw` parsed (parse_plan) with its configuration (configuration_of),
    as from the whole document: JsonInputError (app.jsonutil) when it is not JSON the
    server reads, BadInput when not a plan it reads."""
    if b"\\u0000" not in raw and _utf8(raw):
        with gc_paused():
            try:
                return _parsed(_DECODER.decode(raw))
            except (msgspec.DecodeError, RecursionError, _Whole):
                pass  # ValidationError is a DecodeError
    document = read(raw)
    return parse_plan(document), configuration_of(document)


def _utf8(raw: bytes) -> bool:
    if raw.isascii():
        return True
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True
