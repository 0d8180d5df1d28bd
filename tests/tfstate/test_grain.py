"""Declared edges at their grain: expanded to instances, the very edges of resolve_edges
with the reduction's flags on them, exact or one step; on random states with count and
for_each instances, modules with keys, deposed objects, cycles and resources naming
themselves."""

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.tfstate import reduction
from app.tfstate.grain import declared_edges
from app.tfstate.parse import resolve_edges
from app.tfstate.reduction import direct_flags


@dataclass(frozen=True)
class Instance:
    """What edges read of an instance (app/tfstate/parse.py's InstanceShape)."""

    address: str
    module_path: str | None
    mode: str
    type: str
    name: str
    index_key: Any
    deposed: str | None
    dependencies_raw: Any
    depends_on_raw: Any = None
    resource_index: int = 0
    instance_index: int = 0


RESOURCES = [f"r{i}" for i in range(8)]


@st.composite
def states(draw: st.DrawFn) -> list[Instance]:
    """Resources of one to four instances (in one or two module instances), some deposed
    objects, each instance naming resources (its own, unknown ones, any) in lists closed
    or not."""
    chosen = draw(st.lists(st.sampled_from(RESOURCES), min_size=1, max_size=6, unique=True))
    found: list[Instance] = []
    for name in chosen:
        modules = draw(st.sampled_from([[None], ["module.m[0]"], ["module.m[0]", "module.m[1]"]]))
        keys: list[Any] = draw(
            st.sampled_from([[None], [0], [0, 1], [0, 1, 2], ["a", "b", "c", "d"]])
        )
        for module in modules:
            for key in keys:
                for deposed in [None, *draw(st.lists(st.just("d0"), max_size=1))]:
                    named = draw(st.lists(st.sampled_from([*chosen, "gone"]), max_size=3))
                    prefix = "module.m." if module else ""
                    suffix = "" if key is None else f"[{key!r}]"
                    found.append(
                        Instance(
                            address=f"{module + '.' if module else ''}terraform_data.{name}"
                            f"{suffix}{' ' + deposed if deposed else ''}",
                            module_path=module,
                            mode="managed",
                            type="terraform_data",
                            name=name,
                            index_key=key,
                            deposed=deposed,
                            dependencies_raw=[f"{prefix}terraform_data.{n}" for n in named],
                        )
                    )
    return found


def _expected(instances: list[Instance]) -> dict[tuple[int, int], bool]:
    edges = resolve_edges(instances)
    return dict(zip(edges, direct_flags(len(instances), edges), strict=True))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=300)
@given(instances=states(), exact=st.booleans())
def test_expanded_they_are_the_instance_edges_with_the_reductions_flags(
    instances, exact, monkeypatch
) -> None:
    monkeypatch.setattr(reduction, "EXACT_LIMIT", 30_000 if exact else 0)
    found = declared_edges(instances).expanded()
    assert len(found) == len({(a, b) for a, b, _ in found})  # each edge once
    assert {(a, b): flag for a, b, flag in found} == _expected(instances)


@pytest.mark.parametrize("exact", [True, False])
def test_fan_in_is_stored_at_its_grain(exact, monkeypatch) -> None:
    """2,500 for_each instances naming a 2,500-instance count resource: 2,500 edges and
    2,500 members, not 6.25 million edges."""
    monkeypatch.setattr(reduction, "EXACT_LIMIT", 30_000 if exact else 0)
    n = 2_500
    counted = [
        Instance(f"terraform_data.a[{i}]", None, "managed", "terraform_data", "a", i, None, None)
        for i in range(n)
    ]
    keyed = [
        Instance(
            f'terraform_data.b["k{i}"]',
            None,
            "managed",
            "terraform_data",
            "b",
            f"k{i}",
            None,
            ["terraform_data.a"],
        )
        for i in range(n)
    ]
    found = declared_edges(counted + keyed)
    assert found.instances == []
    assert found.resources == [(n + i, "terraform_data.a", True) for i in range(n)]
    assert found.members == {"terraform_data.a": list(range(n))}


def test_a_resource_on_a_cycle_is_kept_at_the_instance_grain() -> None:
    # a[0], a[1] name b; b[0] names a: a cycle through both resources
    rows = [
        Instance("t.a[0]", None, "managed", "t", "a", 0, None, ["t.b"]),
        Instance("t.a[1]", None, "managed", "t", "a", 1, None, ["t.b"]),
        Instance("t.b[0]", None, "managed", "t", "b", 0, None, ["t.a"]),
        Instance("t.b[1]", None, "managed", "t", "b", 1, None, []),
        Instance("t.c", None, "managed", "t", "c", None, None, ["t.a", "t.b"]),
    ]
    found = declared_edges(rows)
    # a is on the cycle (a[0] -> b[0] -> a[0]): its edges at the instance grain; b[1] is
    # on none, but b[0] is
    assert found.resources == []
    assert {(a, b) for a, b, _ in found.instances} == set(resolve_edges(rows))
