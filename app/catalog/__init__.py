"""The live data-platform resources a scope holds (tables, columns, rules, ...) and the
records of its tables: validation and SQL. No GraphQL here (that is app/api/catalog)."""
