"""GraphQL for Terraform plans (app/plans/)."""
