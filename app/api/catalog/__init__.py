"""The catalog over GraphQL: scopes, tables and their sub-resources, records."""
