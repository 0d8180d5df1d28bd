"""Data and helpers that several test modules share (test modules import these, never
each other)."""
