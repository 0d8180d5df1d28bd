"""Terraform's HTTP state backend protocol: GET/POST/DELETE/LOCK/UNLOCK on /states/{name}."""
