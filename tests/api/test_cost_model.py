"""The cost model's pure parts (app/api/cost.py, app/api/budget.py): the estimate, the
meter and the token buckets, without a server."""

import pytest
from graphql import GraphQLError, parse
from hypothesis import given
from hypothesis import strategies as st

from app.api import cost
from app.api.budget import TokenBudgets
from app.api.schema import schema
from app.errors import LimitExceeded
from app.jsonutil import dumps


@given(st.integers(1, 5_000), st.integers(1, 100))
def test_json_fields_count_their_bytes_along_lists(first: int, aliases: int) -> None:
    field = f"resources(first: {first}) {{ edges {{ node {{ attributes }} }} }}"
    query = "{ " + " ".join(f"a{i}: {field}" for i in range(aliases)) + " }"
    found = cost.estimate(schema._schema, parse(query), None, None)
    assert found == cost.Estimate(aliases * first, aliases * first * cost.JSON_BYTES)


@given(st.integers(1, 60), st.booleans())
def test_walks_across_states_count_per_occurrence(aliases: int, cross: bool) -> None:
    field = (
        f'blastRadius(state: "s", address: "a", crossStates: {str(cross).lower()}) {{ totalCount }}'
    )
    query = "{ " + " ".join(f"a{i}: {field}" for i in range(aliases)) + " }"
    nodes = cost.estimate(schema._schema, parse(query), None, None).nodes
    each = cost.CROSS_WALK_NODES + cost.CROSS_ROOT_NODES if cross else cost.WALK_NODES
    assert nodes == aliases * each


def test_kept_sizes_price_what_was_measured() -> None:
    kept = cost.KeptSizes()
    meter = cost.Meter(limit=1 << 30)
    info = {"Info": "i" * 60_000}
    meter.charge("Lock.info", info)
    meter.keep(kept)
    query = parse("{ states(first: 200) { edges { node { lock { info } } } } }")
    assert cost.estimate(schema._schema, query, None, None, kept).bytes == 200 * len(dumps(info))


@given(st.integers(1, 500), st.integers(1_000, 100_000))
def test_the_meter_counts_repeats_and_stops_at_its_limit(repeats: int, limit: int) -> None:
    meter = cost.Meter(limit)
    value = {"k": "v" * 100}
    size = len(dumps(value))
    for done in range(1, repeats + 1):
        if done * size > limit:
            with pytest.raises(GraphQLError) as raised:
                meter.charge("T.f", value)
            assert isinstance(raised.value.original_error, LimitExceeded)
            assert meter.over
            with pytest.raises(GraphQLError):  # and every field after it
                meter.charge("T.g", "x")
            return
        meter.charge("T.f", value)
        assert meter.used == done * size


@given(st.lists(st.tuples(st.floats(0, 10), st.integers(0, 400)), max_size=50))
def test_a_bucket_never_pays_more_than_it_refilled(steps: list[tuple[float, int]]) -> None:
    budgets = TokenBudgets(budget=1_000, seconds=10)
    now, paid = 0.0, 0
    for wait, units in steps:
        now += wait
        try:
            budgets.check("t", units, now)
        except LimitExceeded as exc:
            assert exc.detail["units"] == units and exc.detail["retryAfter"] >= 0
            continue
        budgets.charge("t", units, now)
        paid += units
        assert paid <= 1_000 + now * 100


@given(st.lists(st.lists(st.text(max_size=20), max_size=8), max_size=80), st.integers(1, 4_000))
def test_strings_counted_by_their_join_as_a_list_is_counted(
    lists: list[list[str]], limit: int
) -> None:
    """A list of strings counted from its length and its join's (the fast path's paths)
    costs what `charge` counts for it: the same bytes, the same stop, the same means kept."""
    charged, joined = cost.Meter(limit), cost.Meter(limit)
    for value in lists:
        try:
            charged.charge("T.f", value)
        except GraphQLError:
            with pytest.raises(GraphQLError):
                joined.charge_strings("T.f", len(value), len("".join(value)))
            break
        joined.charge_strings("T.f", len(value), len("".join(value)))
    assert (joined.used, joined.over) == (charged.used, charged.over)
    means, other = cost.KeptSizes(), cost.KeptSizes()
    charged.keep(means)
    joined.keep(other)
    assert (other.bytes, other.lengths) == (means.bytes, means.lengths)
