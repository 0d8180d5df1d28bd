"""How the graph's node types name one another in their fields.

A state's versions, a version's state and resources, a resource's state and version:
the types refer to each other in a cycle, so a module of one names the others through
these (Strawberry imports their modules when the schema is built), and the modules of
the cycle (state, version, resource, event, rows, lists) import one another as whole
modules, never names: then any of them can be imported first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

if TYPE_CHECKING:
    from app.api.graph.event import Event
    from app.api.graph.resource import Resource
    from app.api.graph.state import State
    from app.api.graph.version import StateVersion

EventRef = Annotated["Event", strawberry.lazy("app.api.graph.event")]
ResourceRef = Annotated["Resource", strawberry.lazy("app.api.graph.resource")]
StateRef = Annotated["State", strawberry.lazy("app.api.graph.state")]
StateVersionRef = Annotated["StateVersion", strawberry.lazy("app.api.graph.version")]
