"""Naming the hook that moved: a compat test's failure says which internal of which
library the code relies on, so an upgrade fails here, in one place, by name."""

import importlib
import inspect
from typing import Any


class HookMoved(AssertionError):
    pass


def require(condition: object, hook: str, why: str) -> None:
    if not condition:
        raise HookMoved(f"{hook} moved: {why}")


def attribute(dotted: str) -> Any:
    """`package.module:Name.attr`, imported; HookMoved naming it when it is gone."""
    module_name, _, path = dotted.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in filter(None, path.split(".")):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise HookMoved(f"{dotted} moved: {exc}") from exc
    return found


def parameters(dotted: str, expected: list[str]) -> None:
    """The function's parameters (self excluded) are `expected`, in order."""
    found = [p for p in inspect.signature(attribute(dotted)).parameters if p != "self"]
    require(found == expected, dotted, f"its parameters are {found}, the code passes {expected}")
