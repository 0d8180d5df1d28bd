"""GraphQL for shared plan locks and leases (app/leases/)."""
