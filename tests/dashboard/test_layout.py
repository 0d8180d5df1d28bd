"""The blast-radius picture's layout (pure): every drawn resource once, in its depth's
column, the undrawn counted in one "+K more" node per depth, lines only between
neighbouring depths, and the ordering uncrosses what it can."""

import collections

from hypothesis import given
from hypothesis import strategies as st

from app.dashboard.layout import (
    BOX_HEIGHT,
    BOX_WIDTH,
    COLUMN_WIDTH,
    LINES_IN,
    Layer,
    bundled_edges,
    grouped_layers,
    layout,
    shorten,
)
from app.tfstate.human_order import address_order


@st.composite
def radii(draw: st.DrawFn) -> tuple[list[Layer], list[tuple[str, str]]]:
    """Layers of a radius (some summarised), with edges from each drawn resource's
    layer before it (as a breadth-first walk gives) and a few others."""
    layers: list[Layer] = []
    edges: list[tuple[str, str]] = []
    previous = ["root"]
    for depth in range(1, draw(st.integers(0, 5)) + 1):
        drawn = [f"d{depth}-{i}" for i in range(draw(st.integers(1, 8)))]
        total = len(drawn) + draw(st.integers(0, 3))
        layers.append(Layer(total, [(key, key) for key in drawn]))
        for key in drawn:
            parents = draw(st.lists(st.sampled_from(previous), max_size=2, unique=True))
            edges += [(parent, key) for parent in parents]
        previous = drawn
    return layers, edges


@given(radii())
def test_every_resource_is_drawn_once_in_its_column_with_the_rest_counted(radius) -> None:
    layers, edges = radius
    picture = layout(("root", "root"), layers, edges)
    keys = [node.key for node in picture.nodes if node.key is not None]
    assert sorted(keys) == sorted(["root", *(k for layer in layers for k, _ in layer.drawn)])
    for node in picture.nodes:
        assert node.x == 10 + node.depth * COLUMN_WIDTH
        assert node.y >= 0 and node.y + BOX_HEIGHT <= picture.height
    for depth, layer in enumerate(layers, start=1):
        more = [n.more for n in picture.nodes if n.key is None and n.depth == depth]
        assert more == ([layer.total - len(layer.drawn)] if layer.total > len(layer.drawn) else [])
    column = {n.x for n in picture.nodes}
    for line in picture.lines:  # from a box's right edge to the next column's left edge
        assert line.x1 - BOX_WIDTH in column and line.x2 - line.x1 == COLUMN_WIDTH - BOX_WIDTH
    into = collections.Counter((line.x2, line.y2) for line in picture.lines)
    for node in picture.nodes:  # every edge in a line, or counted, from 3 lines on
        if node.key is not None:
            lines_in = into[(node.x, node.y + BOX_HEIGHT // 2)]
            assert lines_in <= LINES_IN and (node.unlined == 0 or lines_in == LINES_IN)
    positions = {(n.x, n.y) for n in picture.nodes}
    assert len(positions) == len(picture.nodes)  # no two boxes overlap


def test_a_resource_whose_predecessors_are_undrawn_hangs_off_the_more_node() -> None:
    layers = [Layer(3, [("a", "a")]), Layer(1, [("x", "x")])]
    picture = layout(("r", "r"), layers, [("r", "a")])  # x's predecessor is among the 2 more
    [summary] = [line for line in picture.lines if line.summary]
    more = next(n for n in picture.nodes if n.key is None)
    assert (summary.x1, summary.y1) == (more.x + BOX_WIDTH, more.y + BOX_HEIGHT // 2)


def test_members_past_the_depth_limit_are_one_box_in_the_next_column() -> None:
    layers = [Layer(2, [("a", "a"), ("b", "b")]), Layer(1, [("c", "c")])]
    uncut = layout(("r", "r"), layers, [("r", "a"), ("r", "b"), ("a", "c")])
    assert uncut.beyond is None
    picture = layout(("r", "r"), layers, [("r", "a"), ("r", "b"), ("a", "c")], beyond=1234)
    assert picture.beyond is not None and picture.beyond.label == "1,234 more beyond depth 2"
    assert (picture.beyond.depth, picture.beyond.x) == (3, 10 + 3 * COLUMN_WIDTH)
    assert picture.width == uncut.width + COLUMN_WIDTH and picture.nodes == uncut.nodes


def test_a_dense_layer_draws_three_lines_into_a_box_and_counts_the_rest() -> None:
    subnets = [(f"s{i}", f"s{i}") for i in range(5)]
    layers = [Layer(5, subnets), Layer(1, [("vm", "vm")])]
    edges = [("r", key) for key, _ in subnets] + [(key, "vm") for key, _ in subnets]
    picture = layout(("r", "r"), layers, edges)
    vm = next(n for n in picture.nodes if n.key == "vm")
    assert vm.unlined == 2 and vm.y == next(n.y for n in picture.nodes if n.key == "s0")
    assert len(picture.lines) == 5 + 3


def test_ordering_uncrosses_two_chains() -> None:
    # r -> a -> y and r -> b -> x: addresses alone would cross (a above b, x above y)
    layers = [Layer(2, [("a", "a"), ("b", "b")]), Layer(2, [("x", "x"), ("y", "y")])]
    picture = layout(("r", "r"), layers, [("r", "a"), ("r", "b"), ("a", "y"), ("b", "x")])
    y = {n.key: n.y for n in picture.nodes}
    assert (y["a"] < y["b"]) == (y["y"] < y["x"])


@given(st.text(min_size=1, max_size=80), st.integers(3, 40))
def test_a_long_label_keeps_its_start_and_end(label: str, chars: int) -> None:
    short = shorten(label, chars)
    head = (chars - 1) // 2
    if len(label) <= chars:
        assert short == label
    else:
        assert len(short) == chars and short[head] == "…"
        assert label.startswith(short[:head]) and label.endswith(short[head + 1 :])


def test_an_address_keeps_its_index() -> None:
    assert (
        shorten("aws_lb_target_group_attachment.web[0]", 32) == "aws_lb_target_g…ttachment.web[0]"
    )


@st.composite
def boxed(draw: st.DrawFn) -> list[tuple[int, str, int, str]]:
    """A grouped radius' boxes: per depth, names with their member counts."""
    sizes = []
    for depth in range(1, draw(st.integers(0, 4)) + 1):
        names = draw(
            st.lists(
                st.from_regex(r"[a-c]_[xy]\.[mn]", fullmatch=True),
                min_size=1,
                max_size=9,
                unique=True,
            )
        )
        for name in names:
            members = draw(st.integers(1, 500))
            sizes.append((depth, name, members, f"{name}[0]"))
    return sizes


@given(boxed(), st.integers(1, 5))
def test_grouped_layers_count_every_member_once_and_draw_groups_in_order(sizes, per_layer) -> None:
    layers, boxes = grouped_layers(sizes, per_layer, address_order)
    assert len(layers) == max((d for d, *_ in sizes), default=0)
    for depth, layer in enumerate(layers, start=1):
        here = [(name, members) for d, name, members, _ in sizes if d == depth]
        drawn = [boxes[key] for key, _ in layer.drawn]
        assert len(drawn) == min(per_layer, len(here))
        names = [box.name for box in drawn]
        assert names == sorted(names, key=address_order)
        assert names == sorted((n for n, _ in here), key=address_order)[:per_layer]
        more = layer.total - len(layer.drawn)  # what layout draws as "+K more"
        assert sum(box.members for box in drawn) + more == sum(m for _, m in here)
        for box, (_, label) in zip(drawn, layer.drawn, strict=True):
            if box.members == 1:  # one resource: itself, by address
                assert box.address == f"{box.name}[0]" and label == box.address
            else:
                assert box.address is None and label == f"{box.name} x {box.members:,}"


@given(
    st.lists(
        st.tuples(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.integers(1, 10_000)),
        unique_by=lambda e: e[:3],
    )
)
def test_a_line_between_groups_bundles_their_edges(raw) -> None:
    """Each pair of boxes of neighbouring depths is one line, carrying its edge count."""
    # the root is n1 at depth 0; every other depth has boxes n1..n3 and f1..f3
    raw = [(d, 1 if d == 1 else near, far, count) for d, near, far, count in raw]
    raw = list({(d, near, far): (d, near, far, n) for d, near, far, n in raw}.values())
    edges = [(depth, f"n{near}", f"f{far}", count) for depth, near, far, count in raw]
    weights = bundled_edges(edges)
    assert len(weights) == len(edges)
    depths = max((d for d, *_ in edges), default=0)
    layers = [
        Layer(6, [((d, f"{p}{i}"), f"{p}{i}") for p in "nf" for i in (1, 2, 3)])
        for d in range(1, depths + 1)
    ]
    root = (0, "n1")
    picture = layout((root, "root"), layers, list(weights), weights=weights)
    counts = sorted(line.count for line in picture.lines)
    into = collections.Counter(far for _, far in weights)
    # every drawn line carries its pair's count; a box over LINES_IN keeps its nearest
    assert len(counts) == sum(min(n, LINES_IN) for n in into.values())
    assert set(counts) <= set(weights.values())
