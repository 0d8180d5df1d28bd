"""The merge of leased writes (app/leases/merge.py), as properties: for any interleaving
of writes under leases with disjoint footprints, the head is the base with every change
applied, whatever the order; a write that changes what another lease changed since its
snapshot is refused and the head stays as it was."""

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.leases.merge import changes, instances, merge, meta, same

# an instance: (module or None, resource name, index key or None)
Key = tuple[str | None, str, int | str | None]
KEYS: list[Key] = [
    (module, name, index)
    for module in (None, 'module.m["x"]')
    for name in ("r", "s")
    for index in (None, 0, 1, "k")
]


def document(serial: int, values: dict[Key, int], outputs: dict[str, int]) -> dict[str, Any]:
    """A v4 state holding `values` (an instance's attribute `v`) and `outputs`."""
    resources: dict[tuple[str | None, str], dict[str, Any]] = {}
    for (module, name, index), value in sorted(values.items(), key=repr):
        resource = resources.setdefault(
            (module, name),
            {
                **({"module": module} if module else {}),
                "mode": "managed",
                "type": "terraform_data",
                "name": name,
                "provider": 'provider["terraform.io/builtin/terraform"]',
                "instances": [],
            },
        )
        instance: dict[str, Any] = {"schema_version": 0, "attributes": {"v": value}}
        if index is not None:
            instance["index_key"] = index
        resource["instances"].append(instance)
    return {
        "version": 4,
        "terraform_version": "1.15.5",
        "serial": serial,
        "lineage": "lineage-1",
        "outputs": {n: {"value": v, "type": "number"} for n, v in outputs.items()},
        "resources": list(resources.values()),
    }


def view(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a state holds, order aside."""
    return (
        {a: (meta(resource), inst) for a, (resource, inst) in instances(doc).items()},
        doc.get("outputs") or {},
    )


# A write changes instances (a value, or None: removed) and outputs of its lease's own
Write = tuple[dict[Key, int | None], dict[str, int | None]]


@st.composite
def leased_writes(draw: st.DrawFn) -> tuple[dict[Key, int], list[list[Write]], list[int]]:
    base = draw(st.dictionaries(st.sampled_from(KEYS), st.integers(0, 9), max_size=len(KEYS)))
    owners = draw(st.lists(st.integers(0, 3), min_size=len(KEYS), max_size=len(KEYS)))
    outputs = ["o0", "o1", "o2", "o3"]  # output i is lease i's
    leases: list[list[Write]] = []
    for lease in range(4):
        mine = [k for k, owner in zip(KEYS, owners, strict=True) if owner == lease]
        writes = []
        for _ in range(draw(st.integers(0, 3))):
            touched = draw(st.lists(st.sampled_from(mine), unique=True)) if mine else []
            values = {k: draw(st.one_of(st.none(), st.integers(10, 99))) for k in touched}
            out = draw(st.dictionaries(st.just(outputs[lease]), st.integers(0, 9)))
            writes.append((values, dict(out)))
        leases.append(writes)
    # an interleaving: which lease writes next, each lease's writes in their order
    order = draw(st.permutations([i for i, writes in enumerate(leases) for _ in writes]))
    return base, leases, list(order)


def applied(values: dict[Key, int], outputs: dict[str, int], write: Write) -> None:
    for key, value in write[0].items():
        if value is None:
            values.pop(key, None)
        else:
            values[key] = value
    for name, out in write[1].items():
        if out is None:
            outputs.pop(name, None)
        else:
            outputs[name] = out


@settings(max_examples=300, deadline=None)
@given(leased_writes())
def test_disjoint_leases_merge_to_every_change_in_any_order(
    case: tuple[dict[Key, int], list[list[Write]], list[int]],
) -> None:
    base, leases, order = case
    head = document(5, base, {})
    # each lease's Terraform: its snapshot (what it read or last wrote) and its view
    seen = [(dict(base), dict[str, int]()) for _ in leases]
    snapshots = [copy.deepcopy(head) for _ in leases]
    done = [0 for _ in leases]
    written = 0
    for lease in order:
        values, outputs = seen[lease]
        applied(values, outputs, leases[lease][done[lease]])
        done[lease] += 1
        body = document(snapshots[lease]["serial"] + 1, values, outputs)
        serial = head["serial"]
        # the head is the merge's to patch: the snapshot and body stay as they were
        merged = merge(head, snapshots[lease], copy.deepcopy(body))
        assert merged.conflicts == []
        if merged.document is not None:
            assert merged.document["serial"] == serial + 1
            assert merged.document["lineage"] == "lineage-1"
            head = merged.document
            written += 1
        snapshots[lease] = body
    expected_values, expected_outputs = dict(base), dict[str, int]()
    for writes in leases:
        for write in writes:
            applied(expected_values, expected_outputs, write)
    assert view(head) == view(document(0, expected_values, expected_outputs))
    assert head["serial"] == 5 + written


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(KEYS), st.integers(0, 9), min_size=1),
    st.data(),
)
def test_an_overlap_is_refused_and_the_head_stays(
    base: dict[Key, int], data: st.DataObject
) -> None:
    shared = data.draw(st.sampled_from(sorted(base, key=repr)))
    start = document(3, base, {"o": 1})
    # one lease writes the instance first, then another that read the same base writes it
    first = merge(copy.deepcopy(start), start, document(4, {**base, shared: 50}, {"o": 1}))
    assert first.document is not None
    head = first.document
    theirs = data.draw(st.one_of(st.just(None), st.integers(60, 99)))
    other = dict(base)
    if theirs is None:
        del other[shared]
    else:
        other[shared] = theirs
    kept = copy.deepcopy(head)
    refused = merge(head, start, document(4, other, {"o": 1}))
    assert refused.document is None and len(refused.conflicts) == 1
    assert head == kept
    assert refused.conflicts[0] in instances(start)
    # a change of the same output is refused too
    out_first = merge(copy.deepcopy(start), start, document(4, base, {"o": 2}))
    assert out_first.document is not None
    out_refused = merge(out_first.document, start, document(4, base, {"o": 3}))
    assert out_refused.conflicts == ["output.o"] and out_refused.document is None


def test_a_retried_write_changes_nothing() -> None:
    base = document(1, {(None, "r", None): 1}, {})
    body = document(2, {(None, "r", None): 2}, {})
    assert changes(body, body).addresses() == []
    merged = merge(copy.deepcopy(base), base, body)
    assert merged.document is not None
    assert merge(merged.document, body, body).document is None


def compared_one_by_one(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    """Every instance compared with its counterpart, none skipped."""
    old, new = instances(before), instances(after)
    return {a for a in old.keys() | new.keys() if not same(old.get(a), new.get(a))}


@st.composite
def edited(draw: st.DrawFn, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` copied, some of its resources with their keys in another order, another
    provider, or twice over."""
    doc = copy.deepcopy(doc)
    resources = []
    for resource in doc["resources"]:
        edit = draw(st.sampled_from(["none", "reordered", "provider", "twice"]))
        if edit == "reordered":
            resource = dict(reversed(list(resource.items())))
        elif edit == "provider":
            resource = {**resource, "provider": 'provider["example.com/other/x"]'}
        elif edit == "twice":
            resources.append(copy.deepcopy(resource))
        resources.append(resource)
    doc["resources"] = resources
    return doc


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from(KEYS), st.integers(0, 3), max_size=len(KEYS)),
    st.dictionaries(st.sampled_from(KEYS), st.integers(0, 3), max_size=len(KEYS)),
    st.data(),
)
def test_changes_are_those_of_every_instance_compared(
    first: dict[Key, int], second: dict[Key, int], data: st.DataObject
) -> None:
    before = data.draw(edited(document(1, first, {})))
    after = data.draw(edited(document(2, second, {})))
    assert set(changes(before, after).instances) == compared_one_by_one(before, after)
    assert changes(before, copy.deepcopy(before)).instances == {}
