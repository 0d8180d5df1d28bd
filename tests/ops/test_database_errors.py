"""What a database failure means to a client is decided by its type (app.db.expected)."""

import asyncpg
import pytest
from asyncpg.exceptions import _base as asyncpg_base

from app import db


def chained(outer: BaseException, cause: BaseException) -> BaseException:
    outer.__context__ = cause
    return outer


@pytest.mark.parametrize(
    ("error", "code", "status"),
    [
        (ConnectionRefusedError(111, "refused"), "UNAVAILABLE", 503),
        (TimeoutError(), "UNAVAILABLE", 503),  # no pool connection in time
        (asyncpg.exceptions.DiskFullError("could not extend file"), "UNAVAILABLE", 503),
        (asyncpg.exceptions.TooManyConnectionsError("too many clients"), "UNAVAILABLE", 503),
        (asyncpg.exceptions.AdminShutdownError("terminating connection"), "UNAVAILABLE", 503),
        (asyncpg.exceptions.CannotConnectNowError("starting up"), "UNAVAILABLE", 503),
        (
            asyncpg.exceptions.ConnectionDoesNotExistError("closed mid-operation"),
            "UNAVAILABLE",
            503,
        ),
        (asyncpg.QueryCanceledError("statement timeout"), "UNAVAILABLE", 503),
        (asyncpg_base.InternalClientError("cannot switch to state 12"), "UNAVAILABLE", 503),
        (
            chained(
                asyncpg.InterfaceError("the underlying connection is closed"),
                asyncpg.exceptions.ConnectionDoesNotExistError("closed"),
            ),
            "UNAVAILABLE",
            503,
        ),
        (asyncpg.exceptions.ProgramLimitExceededError("index row size"), "LIMIT_EXCEEDED", 413),
        (asyncpg.exceptions.CharacterNotInRepertoireError("0x00"), "BAD_INPUT", 400),
        (asyncpg_base.DataError("value out of int64 range"), "BAD_INPUT", 400),
    ],
)
def test_expected_database_errors(error: BaseException, code: str, status: int) -> None:
    found = db.expected(error)
    assert found is not None and (found.code, found.status) == (code, status)
    if status == 503:
        assert found.headers() == {"Retry-After": "1"}


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.InterfaceError("cannot perform operation: another operation is in progress"),
        asyncpg.exceptions.UndefinedTableError("relation does not exist"),
        asyncpg.exceptions.SyntaxOrAccessError("syntax error"),
        RuntimeError("a bug"),
    ],
)
def test_bugs_are_not_expected(error: BaseException) -> None:
    assert db.expected(error) is None


def test_an_outage_is_one_line_and_ends_only_with_later_work(caplog) -> None:
    outage = db.Outage()
    with caplog.at_level("WARNING", logger="infragraph.db"):
        outage.started(OSError("refused"))
        began_before = outage.down_since - 1  # type: ignore[operator]
        outage.started(OSError("refused again"))
        outage.ended(began_before)  # work begun before the outage: not a recovery
        outage.ended(outage.down_since + 1)  # type: ignore[operator]
        outage.ended(0)
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "database unavailable",
        "database available again",
    ]
