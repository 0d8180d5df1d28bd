"""How many resources a skimmed state read (app/tfstate/skim.py): the skim's and the
write memory's tests count them."""

from typing import Any

import pytest

from app.tfstate import skim


def resources_read(monkeypatch: pytest.MonkeyPatch) -> list[None]:
    """A list that gets an item each time a skimmed state parses one of its resources."""
    read: list[None] = []
    parse = skim._read

    def counted(raw: Any, *, level: int) -> Any:
        if level == 3:  # a resource (2: a member of the document)
            read.append(None)
        return parse(raw, level=level)

    monkeypatch.setattr(skim, "_read", counted)
    return read
