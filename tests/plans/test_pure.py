"""The pure parts of a plan's analysis: which changed instances reach each member (against
a walk per root), and the Markdown's bounds."""

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from app.plans.impact import Member, reached_by
from app.plans.markdown import MAX_CHARS, render

nodes = st.integers(0, 11)
graphs = st.tuples(
    st.lists(nodes, max_size=5, unique=True),
    st.lists(st.tuples(nodes, nodes), max_size=30),
)


def _reach(root: int, hops: list[tuple[int, int]]) -> set[int]:
    """What one root reaches over one hop or more (itself only through a cycle)."""
    seen: set[int] = set()
    frontier = [b for a, b in hops if a == root]
    while frontier:
        node = frontier.pop()
        if node not in seen:
            seen.add(node)
            frontier.extend(b for a, b in hops if a == node)
    return seen


@given(graphs)
def test_reached_by_is_what_each_root_reaches(
    graph: tuple[list[int], list[tuple[int, int]]],
) -> None:
    roots, hops = graph
    found = reached_by(roots, hops)
    expected: dict[int, int] = {}
    for i, root in enumerate(roots):
        for node in _reach(root, hops):
            expected[node] = expected.get(node, 0) | 1 << i
    assert {n: bits for n, bits in found.items() if bits} == expected


def _analysis(changes: int) -> dict[str, Any]:
    return {
        "summary": {"REPLACE": changes},
        "changes": [
            {"address": f"aws_instance.web[{i}]", "action": "REPLACE"} for i in range(changes)
        ],
        "findings": [],
    }


def test_the_markdown_is_bounded_and_says_how_much_more() -> None:
    members = [
        Member(f"team/s{i % 300}", f"aws_instance.a{'x' * 200}{i}", 1 + i % 7, [], [], ["r"])
        for i in range(5000)
    ]
    text = render(_analysis(3000), state="team/net", stale=True, members=members, consumers=[])
    assert len(text) <= MAX_CHARS
    assert "- and 2950 more" in text  # the replaced list, cut at 50
    assert "- and 4950 more" in text  # the members
    assert "- and 250 more" in text  # the states
    assert text == render(
        _analysis(3000), state="team/net", stale=True, members=members, consumers=[]
    )
    # past 60,000 characters whatever the lists: the text is cut with what it leaves out
    huge = [Member("s", "a" * 5000 + str(i), 1, [], [], ["r"]) for i in range(60)]
    cut = render(_analysis(1), state="team/net", stale=False, members=huge, consumers=[])
    assert len(cut) <= MAX_CHARS and cut.endswith("more characters)")
