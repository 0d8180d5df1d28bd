"""A plan's footprint: every instance it writes (moves from where they leave too) and
every output it changes; nothing it only reads."""

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from app.jsonutil import dumps
from app.leases.footprint import footprint, lease_plan
from app.plans.parse import parse_plan

ACTIONS = [["no-op"], ["read"], ["create"], ["update"], ["delete"], ["delete", "create"]]
WRITES = {"create", "update", "delete"}


@given(
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(ACTIONS)),
    st.dictionaries(st.sampled_from(["x", "y"]), st.sampled_from(ACTIONS[:1] + ACTIONS[2:5])),
    st.booleans(),
)
def test_the_footprint_is_what_the_plan_writes(
    instances: dict[str, list[str]], outputs: dict[str, list[str]], moved: bool
) -> None:
    changes = [
        {
            "address": f"terraform_data.{name}",
            "mode": "managed",
            "type": "terraform_data",
            "name": name,
            "provider_name": "terraform.io/builtin/terraform",
            "change": {"actions": actions, "before": None, "after": None},
            **({"previous_address": f"terraform_data.old_{name}"} if moved else {}),
        }
        for name, actions in instances.items()
    ]
    plan = parse_plan(
        {
            "format_version": "1.2",
            "resource_changes": changes,
            "output_changes": {n: {"actions": a} for n, a in outputs.items()},
        }
    )
    found = footprint(plan)
    written = {f"terraform_data.{n}" for n, a in instances.items() if WRITES & set(a)}
    expected = written | (
        {f"terraform_data.{n}" for n in instances} | {f"terraform_data.old_{n}" for n in instances}
        if moved
        else set()
    )
    assert set(found.addresses) == expected
    assert set(found.outputs) == {n for n, a in outputs.items() if a != ["no-op"]}
    assert found.keys() == [*found.addresses, *(f"output.{o}" for o in found.outputs)]


def _values(n: int) -> dict[str, Any]:
    return {"id": f"id-{n}", "input": "x" * n, "nested": {"list": list(range(n))}}


@given(
    st.lists(
        st.tuples(
            st.sampled_from(ACTIONS),
            st.booleans(),  # moved
            st.sampled_from([None, "00000001"]),  # deposed
            st.sampled_from(["values", "no id", "sensitive id", "absent"]),  # in the prior
        ),
        max_size=6,
    ),
    st.dictionaries(st.sampled_from(["x", "y"]), st.sampled_from(ACTIONS[:1] + ACTIONS[2:5])),
    st.booleans(),
)
def test_what_a_lease_reads_of_a_plan_is_what_its_reduced_plan_says(
    instances: list[tuple[list[str], bool, str | None, str]],
    outputs: dict[str, list[str]],
    in_module: bool,
) -> None:
    """The CLI sends a plan reduced (lease_plan): its footprint and the prior state's
    instances and ids, what a lease and its staleness are judged by, are the plan's."""
    changes, prior = [], []
    for n, (actions, moved, deposed, known) in enumerate(instances):
        address = f"terraform_data.r{n}"
        changes.append(
            {
                "address": address,
                "mode": "managed",
                "type": "terraform_data",
                "name": f"r{n}",
                "provider_name": "terraform.io/builtin/terraform",
                "change": {
                    "actions": actions,
                    "before": _values(n),
                    "after": {**_values(n), "input": "changed"},
                    "after_unknown": {"nested": True},
                    "before_sensitive": {},
                    "after_sensitive": {"input": True},
                },
                **({"previous_address": f"terraform_data.old{n}"} if moved else {}),
                **({"deposed": deposed} if deposed else {}),
            }
        )
        if known != "absent":
            values = _values(n) if known != "no id" else {"input": "y"}
            prior.append(
                {
                    "address": address,
                    "mode": "managed",
                    "type": "terraform_data",
                    "name": f"r{n}",
                    "values": values,
                    "sensitive_values": {"id": True} if known == "sensitive id" else {},
                }
            )
    module: dict[str, Any] = {"resources": prior}
    if in_module:
        module = {"resources": [], "child_modules": [{"address": "module.m", **module}]}
    document = {
        "format_version": "1.2",
        "terraform_version": "1.15.5",
        "resource_changes": changes,
        "output_changes": {
            n: {"actions": a, "before": "b", "after": "a", "after_unknown": False}
            for n, a in outputs.items()
        },
        "prior_state": {"format_version": "1.0", "values": {"root_module": module}},
        "planned_values": {"root_module": {}},
    }
    whole, reduced = parse_plan(document), parse_plan(lease_plan(document))
    assert footprint(reduced) == footprint(whole)
    assert reduced.prior == whole.prior
    assert len(dumps(lease_plan(document))) <= len(dumps(document))
