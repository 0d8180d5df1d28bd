"""The links between states: terraform_remote_state data sources reading outputs."""

from __future__ import annotations

import strawberry
from strawberry.scalars import JSON

from app.api.graph.refs import StateRef


@strawberry.type(description="An output as a terraform_remote_state data source read it.")
class LinkOutput:
    name: str
    read: JSON | None = strawberry.field(description="The value read; null when sensitive.")
    current: JSON | None = strawberry.field(
        description="Its value in the producer's current version; null when sensitive or missing."
    )
    present: bool = strawberry.field(description="Whether the producer has it now.")
    sensitive: bool = strawberry.field(
        description="Sensitive in the producer (in any version it keeps): values never shown, "
        "compared by hash."
    )
    changed: bool = strawberry.field(description="The current value differs from the one read.")
    since: int | None = strawberry.field(
        description="Changed: the producer serial at which the value stopped being the one read."
    )


@strawberry.type(
    description="A terraform_remote_state data source of a consumer's current version that "
    "reads a producer state of this server."
)
class StateLink:
    address: str = strawberry.field(description="The data source's address in the consumer.")
    outputs: list[LinkOutput] = strawberry.field(description="The outputs it read, by name.")
    stale: bool = strawberry.field(description="An output it read has changed since.")
    since: int | None = strawberry.field(
        description="Stale: the producer serial since which (the earliest of its outputs')."
    )
    consumer: StateRef
    producer: StateRef


@strawberry.type(description="A link of the states map, by state names.")
class StatesGraphLink:
    consumer: str
    producer: str
    address: str = strawberry.field(description="The consumer's data source.")
    outputs: list[str] = strawberry.field(description="The outputs it read.")
    stale: bool


@strawberry.type(description="The states that read or are read through terraform_remote_state.")
class StatesGraph:
    states: list[StateRef] = strawberry.field(description="By name.")
    links: list[StatesGraphLink] = strawberry.field(description="By consumer, then address.")
