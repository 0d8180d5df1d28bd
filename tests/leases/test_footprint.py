"""A plan's footprint: every instance it writes (moves from where they leave too) and
every output it changes; nothing it only reads."""

from hypothesis import given
from hypothesis import strategies as st

from app.leases.footprint import footprint
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
