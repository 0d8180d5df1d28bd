"""The app in-process (tests/api's fixtures) for the dashboard's pages."""

from tests.api.conftest import app, client, statements

__all__ = ["app", "client", "statements"]
