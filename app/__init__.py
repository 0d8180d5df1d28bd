"""infragraph: a PostgreSQL-backed state server for infrastructure."""
