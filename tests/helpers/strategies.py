"""Hypothesis strategies for Terraform v4 states."""

from typing import Any

from hypothesis import strategies as st

from app.jsonutil import dumps
from app.tfstate.parse import MAX_SERIAL

# PostgreSQL text and jsonb cannot hold U+0000 (such states are refused, see test_parse)
text = st.text(
    alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12
)
names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
    max_leaves=12,
)
# keys no Terraform writes yet: they must survive as they are
future_keys = st.dictionaries(
    st.from_regex(r"zz_[a-z]{1,6}", fullmatch=True), json_values, max_size=2
)
module_paths = st.one_of(
    st.none(),
    st.lists(
        st.tuples(names, st.one_of(st.none(), st.integers(0, 3), names)), min_size=1, max_size=2
    ).map(
        lambda parts: ".".join(
            f"module.{n}" + ("" if k is None else f"[{k}]" if isinstance(k, int) else f'["{k}"]')
            for n, k in parts
        )
    ),
)
sensitive_paths = st.lists(
    st.lists(
        st.fixed_dictionaries({"type": st.just("get_attr"), "value": names}), min_size=1, max_size=2
    ),
    max_size=2,
)


@st.composite
def instances(draw: st.DrawFn, keys: Any) -> list[dict[str, Any]]:
    result = []
    for key in keys:
        deposed_keys = st.lists(
            st.from_regex(r"[0-9a-f]{8}", fullmatch=True), max_size=2, unique=True
        )
        objects = [None, *draw(deposed_keys)]
        for deposed in objects:
            instance: dict[str, Any] = {"schema_version": draw(st.integers(0, 3))}
            if key is not None:
                instance["index_key"] = key
            if deposed is not None:
                instance["deposed"] = deposed
            if draw(st.booleans()):
                instance["attributes"] = draw(st.dictionaries(names, json_values, max_size=4))
            else:
                instance["attributes_flat"] = draw(st.dictionaries(names, text, max_size=3))
            if draw(st.booleans()):
                instance["sensitive_attributes"] = draw(sensitive_paths)
            if draw(st.booleans()):
                instance["private"] = draw(st.from_regex(r"[A-Za-z0-9+/]{4,12}=?", fullmatch=True))
            if draw(st.booleans()):
                instance["status"] = "tainted"
            if draw(st.booleans()):
                instance["create_before_destroy"] = draw(st.booleans())
            instance.update(draw(future_keys))
            result.append(instance)
    return result


@st.composite
def states(draw: st.DrawFn) -> dict[str, Any]:
    resources = []
    seen: set[tuple[Any, ...]] = set()
    for _ in range(draw(st.integers(0, 5))):
        module = draw(module_paths)
        mode = draw(st.sampled_from(["managed", "data"]))
        rtype, name = draw(names), draw(names)
        if (module, mode, rtype, name) in seen:
            continue
        seen.add((module, mode, rtype, name))
        each = draw(st.sampled_from([None, "list", "map"]))
        keys: list[Any] = (
            [None]
            if each is None
            else draw(st.lists(st.integers(0, 9), min_size=1, max_size=3, unique=True))
            if each == "list"
            else draw(st.lists(text.filter(bool), min_size=1, max_size=3, unique=True))
        )
        resource: dict[str, Any] = {
            "mode": mode,
            "type": rtype,
            "name": name,
            "provider": f'provider["registry.terraform.io/hashicorp/{rtype}"]',
        }
        if module is not None:
            resource["module"] = module
        if each is not None and draw(st.booleans()):
            resource["each"] = each
        resource["instances"] = draw(instances(keys))
        resource.update(draw(future_keys))
        resources.append(resource)
    addresses = [f"{r['type']}.{r['name']}" for r in resources if "module" not in r]
    for resource in resources:
        for instance in resource["instances"]:
            if addresses and draw(st.booleans()):
                instance["dependencies"] = draw(
                    st.lists(st.sampled_from([*addresses, "var.x"]), max_size=3)
                )
    state: dict[str, Any] = {
        "version": 4,
        "serial": draw(st.integers(0, MAX_SERIAL)),
        "lineage": draw(st.uuids()).__str__(),
    }
    if draw(st.booleans()):
        state["terraform_version"] = draw(st.sampled_from(["1.15.5", "0.12.0", "9.9.9-future"]))
    if draw(st.booleans()):
        state["outputs"] = draw(
            st.dictionaries(
                names,
                st.fixed_dictionaries(
                    {"value": json_values},
                    optional={"type": json_values, "sensitive": st.booleans()},
                ),
                max_size=3,
            )
        )
    if resources or draw(st.booleans()):
        state["resources"] = resources
    if draw(st.booleans()):
        state["check_results"] = None
    state.update(draw(future_keys))
    return state


@st.composite
def loose_bodies(draw: st.DrawFn, values: st.SearchStrategy[Any] = json_values) -> bytes:
    """A document with a state's serial and lineage first and anything else around a list
    of any `values` as its resources, compact or indented."""
    head = draw(st.dictionaries(st.sampled_from(["terraform_version", "x", "outputs"]), values))
    resources = draw(st.lists(values, max_size=6))
    tail = draw(st.dictionaries(st.sampled_from(["check_results", "y"]), values))
    document = {"version": 4, "serial": 3, "lineage": "L", **head, "resources": resources, **tail}
    return dumps(document, indent=draw(st.booleans()))
