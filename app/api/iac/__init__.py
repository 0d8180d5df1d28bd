"""IaC over GraphQL and REST: plan, apply, the public state view, export."""
