"""Policies in GraphQL: saved checks, their violations, and their management."""
