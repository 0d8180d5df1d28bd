"""Benchmarks: each case against a baseline measured in the same run."""
