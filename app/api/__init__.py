"""The GraphQL API: Strawberry types, queries, dataloaders, limits. No SQL, no business rules."""
