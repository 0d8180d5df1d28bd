"""Shared plan locks and leases: resource-scoped locks taken from a Terraform plan."""
