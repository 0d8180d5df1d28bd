"""Terraform v4 state, pure: parse and validate, normalize into rows, render back;
and OpenTofu's encrypted state, recognised by its envelope."""

from app.tfstate.encrypted import EncryptedState, EnvelopeError, parse_body
from app.tfstate.parse import (
    INSTANCE_COLUMNS,
    OUTPUT_COLUMNS,
    InstanceRow,
    NormalizedState,
    OutputRow,
    StateError,
    parse_state,
)
from app.tfstate.render import render_state
from app.tfstate.scan import ScannedState, scan_state

__all__ = [
    "INSTANCE_COLUMNS",
    "OUTPUT_COLUMNS",
    "EncryptedState",
    "EnvelopeError",
    "InstanceRow",
    "NormalizedState",
    "OutputRow",
    "ScannedState",
    "StateError",
    "parse_body",
    "parse_state",
    "render_state",
    "scan_state",
]
