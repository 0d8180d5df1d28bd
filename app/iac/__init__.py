"""Declarative IaC: documents, state, plan, apply, export."""
