"""Values Terraform marks sensitive are withheld from readers (shown as null).

`sensitive_attributes` is a list of cty paths, each a list of steps:
`{"type": "get_attr", "value": "password"}` or
`{"type": "index", "value": {"value": 0, "type": "number"}}`. A path here is
a tuple of keys: attribute names, and list indexes or map keys as strings.
"""

from typing import Any

Path = tuple[str, ...]
EVERYTHING: list[Path] = [()]


def sensitive_paths(raw: Any) -> list[Path]:
    """The paths of `sensitive_attributes`; a shape not understood withholds more, not less."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        return EVERYTHING
    paths = []
    for steps in raw:
        if not isinstance(steps, list):
            return EVERYTHING
        path: list[str] = []
        for step in steps:
            key = _step_key(step)
            if key is None:
                break  # an unknown step: withhold everything under the known part
            path.append(key)
        paths.append(tuple(path))
    return paths


def _step_key(step: Any) -> str | None:
    if not isinstance(step, dict):
        return None
    value = step.get("value")
    if step.get("type") == "get_attr" and isinstance(value, str):
        return value
    if step.get("type") == "index" and isinstance(value, dict):
        key = value.get("value")
        if isinstance(key, str):
            return key
        if isinstance(key, int | float) and not isinstance(key, bool) and key == int(key):
            return str(int(key))
    return None


def overlaps(path: Path, paths: list[Path]) -> bool:
    """True when `path` is inside a sensitive value or holds one."""
    return any(path[: len(s)] == s or s[: len(path)] == path for s in paths)


def withhold(value: Any, paths: list[Path], mask: Any = None) -> Any:
    """A copy of `value` with the value at each path replaced by `mask` (null)."""
    for path in paths:
        value = _replace(value, path, mask)
    return value


def _replace(value: Any, path: Path, mask: Any) -> Any:
    if not path:
        return mask
    head, rest = path[0], path[1:]
    if isinstance(value, dict) and head in value:
        return {**value, head: _replace(value[head], rest, mask)}
    if isinstance(value, list) and head.isdigit() and int(head) < len(value):
        copy = list(value)
        copy[int(head)] = _replace(copy[int(head)], rest, mask)
        return copy
    return value
