"""A state's declared edges at the grain they are declared, with their `direct` flags
(pure).

An instance's `dependencies` name resources, not instances: `aws_instance.web` stands for
every current instance of it (app/tfstate/parse.py, resolve_edges). Instance to instance,
2,500 `for_each` instances naming a 2,500-instance `count` resource are 6.25 million
edges; at the grain they are declared they are 2,500, and the resource's instances
2,500 more. So an instance's edge to a resource of two instances or more is one
`resource` edge to the resource, whose instances are its `members`; an edge to a
resource of one instance is an `instance` edge, as before.

Directness is the transitive reduction of the instance graph (app/tfstate/reduction.py),
computed on the graph where a resource's instances are reached through one node, a
relay, instead of an edge to each. A relay's edges all get the same flag, and it is the
flag of each instance edge it stands for, as long as the resource's instances are on no
cycle and none of them names its own resource: then one of them is implied exactly
when another is. Such a resource is `irregular`, and edges to it are kept at the
instance grain, with their own flags.
"""

from collections.abc import Iterator, Sequence

from app.tfstate.address import resource_key
from app.tfstate.parse import InstanceShape, named_resources
from app.tfstate.reduction import Pairs, Relayed


class Declared:
    """A version's edges as stored: `instances` (from, to, direct) by positions in the
    instances; `resources` (from, resource, direct), a resource by its config address
    (its key in `members`); `members`: each such resource's instances (positions).
    Kept as the reduction's graph and flags (a big state's edges are many: no tuple
    more per edge than the reduction's own)."""

    def __init__(
        self,
        edges: Pairs,
        flags: list[bool],
        nodes: int,
        relayed: list[str],
        by_resource: dict[str, list[int]],
    ) -> None:
        self._edges, self._flags, self._nodes, self._relayed = edges, flags, nodes, relayed
        self.members = {key: by_resource[key] for key in relayed}

    def records(self) -> Iterator[tuple[int, int | str, bool]]:
        """Each edge as stored: (from, to, direct), `to` a position or a resource."""
        nodes, relayed = self._nodes, self._relayed
        for (a, b), flag in zip(self._edges, self._flags, strict=False):
            if a >= nodes:  # a relay's edges to its instances: the members
                break
            yield (a, b, flag) if b < nodes else (a, relayed[b - nodes], flag)

    @property
    def instances(self) -> list[tuple[int, int, bool]]:
        return [(a, b, flag) for a, b, flag in self.records() if isinstance(b, int)]

    @property
    def resources(self) -> list[tuple[int, str, bool]]:
        return [(a, b, flag) for a, b, flag in self.records() if isinstance(b, str)]

    def expanded(self) -> list[tuple[int, int, bool]]:
        """Every edge instance to instance (what the reads see), in no set order."""
        return self.instances + [
            (a, t, flag) for a, key, flag in self.resources for t in self.members[key] if t != a
        ]


def declared_edges(instances: Sequence[InstanceShape]) -> Declared:
    """The edges of `instances` at their grain, with their direct flags: the edges of
    resolve_edges, the same flags as app/tfstate/reduction.py's on them."""
    by_resource: dict[str, list[int]] = {}
    own: list[str | None] = []  # each instance's resource (none for a deposed object)
    canonical: dict[str, str] = {}  # one string a resource, not one an instance
    for position, row in enumerate(instances):
        if row.deposed is None:
            key = resource_key(row.module_path, row.mode, row.type, row.name)
            key = canonical.setdefault(key, key)
            by_resource.setdefault(key, []).append(position)
            own.append(key)
        else:
            own.append(None)
    named: list[list[str]] = []
    irregular: set[str] = set()
    for row, resource in zip(instances, own, strict=True):
        names = named_resources(row)
        if all(n in by_resource for n in names) and len(set(names)) == len(names):
            found = names  # the list itself (the usual): not a copy an instance
        else:
            found = [n for n in dict.fromkeys(names) if n in by_resource]
        named.append(found)
        if resource in found:
            irregular.add(resource)  # an instance naming its own resource
    while True:
        graph = _Graph(instances, by_resource, named, irregular)
        reduced = Relayed(graph.nodes, graph.edges, graph.relays)
        if reduced.flags is not None:
            return graph.declared(reduced.flags)
        # a resource whose instances are on a cycle: its edges at the instance grain
        irregular.update(graph.relayed[r - graph.relays] for r in reduced.cyclic)


class _Graph:
    """The instances (nodes below their count), then a relay per resource of two
    instances or more named by some instance and not irregular; the declared edges first,
    then each relay's edges to its instances."""

    def __init__(
        self,
        instances: Sequence[InstanceShape],
        by_resource: dict[str, list[int]],
        named: list[list[str]],
        irregular: set[str],
    ) -> None:
        self.relays = len(instances)
        relay_of: dict[str, int] = {}
        self.relayed: list[str] = []
        self.edges = Pairs()  # the declared ones, then the relays'
        add = self.edges.append
        for position, found in enumerate(named):
            for key in found:
                targets = by_resource[key]
                if len(targets) > 1 and key not in irregular:
                    relay = relay_of.get(key)
                    if relay is None:
                        relay = relay_of[key] = self.relays + len(self.relayed)
                        self.relayed.append(key)
                    add(position, relay)
                    continue
                for target in targets:
                    if target != position:
                        add(position, target)
        for key in self.relayed:
            relay = relay_of[key]
            for target in by_resource[key]:
                add(relay, target)
        self.nodes = self.relays + len(self.relayed)
        self.by_resource = by_resource

    def declared(self, flags: list[bool]) -> Declared:
        return Declared(self.edges, flags, self.relays, self.relayed, self.by_resource)
