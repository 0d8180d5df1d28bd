"""The states map's layout (pure): every state once, columns by link depth (every line
left to right outside a cycle), no two boxes on each other, one line a producer-consumer
pair, and stale consumers marked."""

import random

from hypothesis import given
from hypothesis import strategies as st

from app.dashboard.layout import BOX_HEIGHT, BOX_WIDTH, ROW_HEIGHT
from app.dashboard.map_layout import (
    COLUMN_WIDTH,
    LABEL_CHARS,
    LABEL_LINE,
    STACKED,
    Link,
    columns,
    states_map,
)

NAMES = [f"team/s{i:02}" for i in range(12)]


def links(*, acyclic: bool) -> st.SearchStrategy[list[Link]]:
    def link(pair: tuple[int, int], outputs: list[str], stale: bool, source: int) -> Link:
        i, j = sorted(pair) if acyclic else pair
        address = f"data.terraform_remote_state.r{source}"
        return Link(NAMES[i], NAMES[j], address, tuple(sorted(set(outputs))), stale)

    index = st.integers(0, len(NAMES) - 1)
    pairs = st.tuples(index, index).filter(lambda p: not acyclic or p[0] != p[1])
    return st.lists(
        st.builds(
            link,
            pairs,
            st.lists(st.sampled_from(["vpc_id", "subnet_ids", "zone", "role_arn"]), min_size=1),
            st.booleans(),
            st.integers(0, 2),
        ),
        max_size=30,
    )


def _check_boxes(names: list[str], found: list[Link]) -> None:
    drawn = states_map(names, found)
    by_name = {node.name: node for node in drawn.nodes}
    expected = set(names) | {k.producer for k in found} | {k.consumer for k in found}
    assert len(by_name) == len(drawn.nodes) and set(by_name) == expected
    for node in drawn.nodes:
        assert node.x == 10 + node.column * COLUMN_WIDTH
        assert node.x + BOX_WIDTH <= drawn.width and node.y + BOX_HEIGHT <= drawn.height
        assert node.stale == any(k.stale for k in found if k.consumer == node.name)
    # no two boxes of a column closer than a row
    for a in drawn.nodes:
        for b in drawn.nodes:
            if a is not b and a.column == b.column:
                assert abs(a.y - b.y) >= ROW_HEIGHT
    pairs = {(k.producer, k.consumer) for k in found}
    assert [(line.producer, line.consumer) for line in drawn.lines] == sorted(pairs)
    for line in drawn.lines:
        bundled = [k for k in found if (k.producer, k.consumer) == (line.producer, line.consumer)]
        assert set(line.outputs) == {o for k in bundled for o in k.outputs}
        assert line.stale == any(k.stale for k in bundled)
        assert len(line.label) <= LABEL_CHARS
        producer, consumer = by_name[line.producer], by_name[line.consumer]
        assert line.back == (consumer.column <= producer.column)
        assert (line.y1, line.y2) == (producer.y + BOX_HEIGHT // 2, consumer.y + BOX_HEIGHT // 2)
        if not line.back:
            assert (line.x1, line.x2) == (producer.x + BOX_WIDTH, consumer.x)


@given(st.lists(st.sampled_from(NAMES), unique=True), links(acyclic=True))
def test_without_cycles_every_line_runs_left_to_right_by_link_depth(
    names: list[str], found: list[Link]
) -> None:
    _check_boxes(names, found)
    column = columns(names, [(k.producer, k.consumer) for k in found])
    for name, depth in column.items():
        producers = [column[k.producer] for k in found if k.consumer == name]
        assert depth == 1 + max(producers, default=-1)  # the longest path to it
    assert not any(line.back for line in states_map(names, found).lines)


@given(st.lists(st.sampled_from(NAMES), unique=True), links(acyclic=False))
def test_cycles_and_states_reading_themselves_are_drawn(
    names: list[str], found: list[Link]
) -> None:
    _check_boxes(names, found)


@given(links(acyclic=False), st.randoms(use_true_random=False))
def test_the_map_does_not_depend_on_the_order_links_come_in(
    found: list[Link], rng: random.Random
) -> None:
    shuffled = list(found)
    rng.shuffle(shuffled)
    assert states_map([], shuffled) == states_map([], found)


def test_a_cycle_is_broken_at_its_state_with_fewest_producers() -> None:
    pairs = [("a", "b"), ("b", "c"), ("c", "a"), ("x", "b")]
    assert columns([], pairs) == {"x": 0, "a": 0, "b": 1, "c": 2}


def test_a_producer_sits_in_the_middle_of_its_consumers() -> None:
    consumers = [f"app/{i:02}" for i in range(9)]
    drawn = states_map([], [Link("net", c, "data.x", ("vpc_id",), False) for c in consumers])
    nodes = {node.name: node for node in drawn.nodes}
    assert [nodes[c].y for c in consumers] == [10 + ROW_HEIGHT * i for i in range(9)]
    assert nodes["net"].y == nodes["app/04"].y


def test_fifty_states_are_all_laid_out() -> None:
    rng = random.Random(50)
    names = [f"prod/{i:02}" for i in range(50)]
    found = [
        Link(names[i], names[j], f"data.terraform_remote_state.s{i}", ("vpc_id",), j % 7 == 0)
        for j in range(1, 50)
        for i in rng.sample(range(j), min(j, 3))
    ]
    drawn = states_map(names, found)
    assert len(drawn.nodes) == 50 and len(drawn.lines) == len(found)


def test_labels_are_stacked_by_their_consumer_in_the_order_lines_come_in() -> None:
    found = [
        Link("net", "web", "data.a", ("vpc_id",), False),
        Link("net", "api", "data.a", ("vpc_id",), False),
        Link("dns", "api", "data.b", ("zone_id",), False),
        Link("web", "mon", "data.c", ("url",), False),
    ] + [Link(f"p{i}", "big", "data.d", ("x",), False) for i in range(STACKED + 1)]
    drawn = states_map([], found)
    lines = {(line.producer, line.consumer): line for line in drawn.lines}
    nodes = {node.name: node for node in drawn.nodes}
    into_api = sorted((lines[(p, "api")] for p in ("net", "dns")), key=lambda k: k.y1)
    (x1, y1, a1), (x2, y2, a2) = (line.label_at for line in into_api)
    assert x1 == x2 == nodes["api"].x - 4 and a1 == a2 == "end"
    assert y2 - y1 == LABEL_LINE  # the upper line's label above
    assert (y1 + y2) / 2 == nodes["api"].y + BOX_HEIGHT // 2 + 3  # the baselines
    assert lines[("web", "mon")].label_at == (
        nodes["mon"].x - 4,
        lines[("web", "mon")].y2 + 3,
        "end",
    )
    # into a consumer of more lines: each label halfway along its line
    for i in range(STACKED + 1):
        line = lines[(f"p{i}", "big")]
        x, _, anchor = line.label_at
        assert line.stack is None and anchor == "middle" and line.x1 < x < line.x2
