"""GraphQL of API tokens (admin only: app/api/access.py)."""
