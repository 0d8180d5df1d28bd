"""The app in-process (tests/api's fixtures) for the dashboard's pages."""

from tests.api.conftest import app, client, closed_app, db_token, statements

__all__ = ["app", "client", "closed_app", "db_token", "statements"]
