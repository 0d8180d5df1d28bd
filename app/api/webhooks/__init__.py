"""GraphQL of webhooks (admin only: app/api/access.py)."""
