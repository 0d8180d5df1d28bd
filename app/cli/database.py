"""The commands that use the database directly: serve, migrate, rotate-key."""

from typing import TYPE_CHECKING

import click

from app.cli.common import fail
from app.client import Refused

if TYPE_CHECKING:
    from app.config import Settings


def _settings() -> "Settings":
    """The settings from the environment; a bad one ends the command (exit 1)."""
    from app.config import Settings

    try:
        return Settings.from_env()
    except ValueError as exc:
        fail(Refused([str(exc)]))


@click.command(help="Run the HTTP server (migrates the database first).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True)
def serve(host: str, port: int) -> None:
    from app import serving  # imported lazily: the other commands do not need uvicorn

    serving.run(_settings(), host, port)


@click.command(help="Apply pending database migrations.")
def migrate() -> None:
    import asyncio

    import asyncpg

    from app import db

    settings = _settings()

    async def run() -> list[str]:
        conn = await asyncpg.connect(db.database_url(settings))
        try:
            await db.init_connection(conn)
            return await db.migrate(conn, citus=settings.citus)
        finally:
            await conn.close()

    try:
        for step in asyncio.run(run()):
            click.echo(step, err=True)
    except (OSError, asyncpg.PostgresError) as exc:
        fail(Refused([f"migrate: {exc}"]))
    click.echo("database is up to date", err=True)


@click.command(
    "rotate-key",
    help="""Re-seal every state under INFRAGRAPH_ENCRYPTION_KEY (README, "Secrets and
    encryption at rest"); INFRAGRAPH_ENCRYPTION_KEY_OLD opens what the previous key
    sealed. Also the first time a key is set (from clear), and once after upgrading to
    split secrets out of rows written before. Batches, one state at a time; safe while
    the server runs (with both keys); run it again to carry on after a stop.""",
)
def rotate_key() -> None:
    import asyncio

    import asyncpg

    from app import crypto, db
    from app.catalog.kinds import RESOURCE_KINDS
    from app.catalog.sealed import reseal_catalog
    from app.graph import rotation
    from app.iac.state import reseal_hash_key, reseal_state_secrets, secret_key
    from app.webhooks.store import reseal_secrets

    settings = _settings()
    crypto.use(crypto.Keyring(settings.encryption_key, settings.encryption_key_old))
    if settings.encryption_key is None:
        click.echo(
            "infragraph: INFRAGRAPH_ENCRYPTION_KEY is unset: state is stored in clear "
            "(what is sealed is opened)",
            err=True,
        )

    def progress(state: str, counts: dict[str, int]) -> None:
        done = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
        click.echo(f"{state}: {done}", err=True)

    async def run() -> rotation.Rotated:
        conn = await asyncpg.connect(db.database_url(settings))
        try:
            await db.init_connection(conn)
            await db.migrate(conn)
            done = await rotation.rotate(conn, progress)
            done.counts["iac key"] = await reseal_hash_key(conn)
            async with conn.transaction():
                done.counts["catalog"] = await reseal_catalog(conn, list(RESOURCE_KINDS.values()))
                key = await secret_key(conn, settings.secret_key)
                done.counts["iac state"] = await reseal_state_secrets(conn, key)
            done.counts["webhook secrets"] = await reseal_secrets(conn)
            return done
        finally:
            await conn.close()

    try:
        done = asyncio.run(run())
    except (OSError, asyncpg.PostgresError, crypto.UnknownKey) as exc:
        fail(Refused([f"rotate-key: {exc}"]))
    summary = ", ".join(f"{count} {kind}" for kind, count in done.counts.items())
    click.echo(f"re-sealed {done.states} state(s): {summary}", err=True)
