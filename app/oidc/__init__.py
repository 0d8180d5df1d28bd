"""CI jobs signing in with their platform's OIDC ID token (GitHub Actions, GitLab CI):
trusted issuers and their rules (config), their keys (keys), verification (verify),
and the short-lived server tokens a verified JWT is exchanged for (exchange)."""
