"""The in-process app and its clients (tests/api/conftest.py), for the operations tests."""

from tests.api.conftest import app, client, statements

__all__ = ["app", "client", "statements"]
