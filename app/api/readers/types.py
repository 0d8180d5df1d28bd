"""The output readers of a state (a field of State), and the caller with what it may do."""

from uuid import UUID

import strawberry

from app.access import Principal, Role
from app.api.context import Info
from app.api.tokens import types as _token_types  # noqa: F401 (Role, as GraphQL knows it)
from app.graph import readers as graph_readers
from app.readers import OutputReaders as Readers
from app.readers import abilities


@strawberry.type(
    description="Who may read a state's outputs (a GET answers them, without resources) "
    "besides its own readers: sensitive outputs included."
)
class OutputReaders:
    tokens: list[str] = strawberry.field(description="Token names.")
    states: list[str] = strawberry.field(
        description="Globs of consumer states: a token that plans or writes a state one "
        "matches reads as that consumer."
    )


def output_readers_of(readers: Readers) -> OutputReaders:
    return OutputReaders(tokens=list(readers.tokens), states=list(readers.states))


@strawberry.type
class StateReaders:
    """A mixin of State: its output readers."""

    state_id: strawberry.Private[UUID]

    @strawberry.field(description="Who may read its outputs besides its own readers.")
    async def output_readers(self, info: Info) -> OutputReaders:
        found = await info.context.graph.output_readers.load(self.state_id)
        return output_readers_of(found or Readers())


@strawberry.type(description="What the caller may do on one state, by the HTTP backend too.")
class StateAccess:
    state: str
    read: bool = strawberry.field(description="GraphQL reads, sensitive values masked.")
    outputs: bool = strawberry.field(
        description="A GET answers its outputs (terraform_remote_state, terraform output)."
    )
    sensitive_outputs: bool
    raw_state: bool = strawberry.field(
        description="A GET answers the whole state: init, plan, output, state pull."
    )
    plan_lock: bool = strawberry.field(description="LOCK for a plan, UNLOCK of its own.")
    write: bool = strawberry.field(
        description="POST (apply, state push), DELETE, any LOCK, UNLOCK of its own lock."
    )
    force_unlock: bool = strawberry.field(description="UNLOCK of anyone's lock.")
    set_output_readers: bool
    can: list[str] = strawberry.field(description="The names of the fields above that hold.")


@strawberry.type(description="The token of this request.")
class Viewer:
    name: str
    role: Role
    states: list[str] = strawberry.field(description="State-name globs it touches.")
    scopes: list[str] = strawberry.field(description="IaC scope slugs it touches.")
    everywhere: bool
    principal: strawberry.Private[Principal]

    @strawberry.field(description="What it may do on state `name` (which need not exist).")
    async def on(self, info: Info, name: str) -> StateAccess:
        found = await info.context.with_conn(graph_readers.readers_of, name)
        may = abilities(self.principal, name, found)
        return StateAccess(
            state=name,
            read=may.read,
            outputs=may.outputs,
            sensitive_outputs=may.sensitive_outputs,
            raw_state=may.raw_state,
            plan_lock=may.plan_lock,
            write=may.write,
            force_unlock=may.force_unlock,
            set_output_readers=may.set_output_readers,
            can=[_camel(name) for name in may.names()],
        )


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def viewer_of(who: Principal) -> Viewer:
    return Viewer(
        name=who.name,
        role=who.role,
        states=list(who.state_globs),
        scopes=list(who.scopes),
        everywhere=who.everywhere,
        principal=who,
    )
