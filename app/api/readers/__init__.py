"""GraphQL of who reads what: a state's output readers, and the caller (`viewer`)."""
