"""Terraform's order for addresses as a person reads them: module path step by step
(name, then key), then data before managed, type, name, then the index key: numbers
numerically (`count`), text as text (`for_each`), no key first. Pure, no I/O.

Keyset pagination keeps the store's text order (stable cursors); this key is for
lists that hold at most a page and for the picture's boxes."""

import json
import re

# `module.a["x"]`, `data.t.n[3]`: a name, then an optional `[number]` or `["text"]`.
_STEP = re.compile(r'\.?([^.\[\s]+)(?:\[(?:([0-9]+)|("(?:[^"\\]|\\.)*"))\])?')
_DEPOSED = re.compile(r" \(deposed object (.*)\)$")

# A key sorts as (kind, number, text): no key < numbers < text, never int against str.
Key = tuple[int, int, str]
AddressKey = tuple[tuple[tuple[str, Key], ...], int, str, str, Key, str, str]

_NO_KEY: Key = (0, 0, "")


def _key(number: str | None, text: str | None) -> Key:
    if number is not None:
        return (1, int(number), "")
    if text is not None:
        try:
            return (2, 0, str(json.loads(text, strict=False)))
        except ValueError:
            return (2, 0, text)
    return _NO_KEY


def address_order(address: str) -> AddressKey:
    """The sort key of a resource instance address (`module.m[1].aws_instance.web["a"]`).
    A string that is not an address still gets a key (after the parsed part, as text),
    so sorting never fails."""
    deposed = _DEPOSED.search(address)
    body = address[: deposed.start()] if deposed else address
    steps: list[tuple[str, Key]] = []
    position = 0
    while position < len(body):
        match = _STEP.match(body, position)
        if match is None or match.end() == position:
            break
        steps.append((match.group(1), _key(match.group(2), match.group(3))))
        position = match.end()
    rest = body[position:]
    modules: list[tuple[str, Key]] = []
    while len(steps) >= 2 and steps[0][0] == "module" and steps[0][1] == _NO_KEY:
        modules.append((steps[1][0], steps[1][1]))
        steps = steps[2:]
    mode = 1
    if steps and steps[0][0] == "data" and steps[0][1] == _NO_KEY and len(steps) >= 3:
        mode, steps = 0, steps[1:]
    rtype = steps[0][0] if steps else ""
    name = steps[1][0] if len(steps) > 1 else ""
    index = steps[1][1] if len(steps) > 1 else (steps[0][1] if steps else _NO_KEY)
    leftover = ".".join(step for step, _ in steps[2:]) + rest
    return (tuple(modules), mode, rtype, name, index, leftover, deposed.group(1) if deposed else "")


def in_terraform_order(addresses: list[str]) -> list[str]:
    return sorted(addresses, key=address_order)
