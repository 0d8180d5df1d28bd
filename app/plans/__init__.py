"""Terraform plans (`terraform show -json`): read, stored, and what they reach."""
