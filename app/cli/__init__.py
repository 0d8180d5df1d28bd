"""The `infragraph` command.

`serve`, `migrate` and `rotate-key` use the database (DATABASE_URL, else the embedded
one); every other command talks to a running server through its API: INFRAGRAPH_URL (default
http://127.0.0.1:8080) with the token INFRAGRAPH_TOKEN. Exit codes: 0 done, 1 refused
(the reason on stderr), 2 usage; `plan --detailed-exitcode`: 2 when it has changes.
Shell completion: `eval "$(_INFRAGRAPH_COMPLETE=bash_source infragraph)"` (zsh_source,
fish_source).
"""

import click

from app.cli import (
    access,
    configuration,
    database,
    iac,
    impact,
    leases,
    policies,
    states,
    tokens,
    webhooks,
)

COMMANDS: list[click.Command] = [
    database.serve,
    database.migrate,
    database.rotate_key,
    states.import_state,
    states.export,
    states.states,
    states.prune,
    states.lock,
    states.unlock,
    states.force_unlock,
    iac.plan,
    iac.apply,
    iac.export_iac,
    iac.release,
    policies.policy,
    tokens.token,
    access.whoami,
    access.readers,
    access.login,
    webhooks.webhook,
    impact.impact,
    configuration.config,
    leases.lease,
]


@click.group(help=__doc__, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    pass


for command in COMMANDS:
    main.add_command(command)
