"""pushConfiguration, a mixin of the root Mutation (see app/api/schema.py)."""

import strawberry
from strawberry.scalars import JSON

from app.api.configuration.types import ConfigurationVersion, configuration_of
from app.api.context import Info
from app.configuration.parse import required_configuration
from app.configuration.store import PUSH, record_configuration


@strawberry.type
class ConfigurationPush:
    configuration: ConfigurationVersion
    created: bool = strawberry.field(
        description="False: the state's latest configuration has the same content (kept)."
    )


@strawberry.type
class ConfigurationMutation:
    @strawberry.mutation(
        description="Record the configuration of a plan's JSON (`terraform show -json "
        "tfplan`) as the state's, without a plan review (the plan role suffices)."
    )
    async def push_configuration(self, info: Info, state: str, plan: JSON) -> ConfigurationPush:
        configuration = required_configuration(plan)
        row, created = await info.context.with_conn(
            record_configuration,
            state,
            configuration,
            origin=PUSH,
            submitter=info.context.actor,
        )
        return ConfigurationPush(configuration=configuration_of(row), created=created)
