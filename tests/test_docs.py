"""The documentation holds: every GraphQL example in README.md and docs/ validates
against the schema, every relative link names a file (and heading) that exists, and
nothing points outside the repository."""

import re
from pathlib import Path

import pytest
from graphql import parse, validate

from app.api.schema import schema
from tests.helpers.live_server import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"```graphql\n(.*?)```", re.DOTALL)
_LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)")


def _operations(text: str) -> list[str]:
    """Each top-level operation of each graphql block (a block may hold several, and
    comment lines)."""
    found = []
    for block in _BLOCK.findall(text):
        depth, start = 0, 0
        lines = "\n".join(line for line in block.splitlines() if not line.startswith("#"))
        for index, char in enumerate(lines):
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    found.append(lines[start : index + 1].strip())
                    start = index + 1
    return found


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_graphql_examples_validate(page: Path) -> None:
    core = schema._schema
    for operation in _operations(page.read_text()):
        errors = validate(core, parse(operation))
        assert not errors, f"{page.name}: {operation}\n{errors}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_resolve_within_the_repository(page: Path) -> None:
    text = page.read_text()
    for target, anchor in _LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path = (page.parent / target).resolve() if target else page
        assert path.exists(), f"{page.name} links to {target}, which does not exist"
        assert ROOT in path.parents or path == ROOT, f"{page.name} links outside: {target}"
        if anchor and path.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", path.read_text(), re.MULTILINE)
            anchors = {_anchor(h) for h in headings}
            assert anchor in anchors, f"{page.name}: no heading #{anchor} in {target or page}"


def test_the_readme_is_a_front_door() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300
