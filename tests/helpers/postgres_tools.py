"""PostgreSQL client programs for the tests (pg_dump).

pg_dump refuses a server of a newer major version than its own, so the one on PATH
(whatever the machine has) cannot dump the embedded server the tests start without
DATABASE_URL. The tests use the client programs pgserver ships with that server:
they dump it, and any older server a DATABASE_URL names, alike.
"""

import subprocess
from pathlib import Path

from app import db


def client_program(name: str) -> str:
    """The path of PostgreSQL client program `name` (pg_dump, psql, ...)."""
    path = Path(db.import_pgserver().__file__).parent / "pginstall" / "bin" / name
    assert path.is_file(), f"pgserver ships no {name} at {path}"
    return str(path)


def pg_dump(url: str) -> str:
    """The data of the database at `url`, as `pg_dump --data-only` writes it."""
    return subprocess.run(
        [client_program("pg_dump"), "--data-only", "--dbname", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
