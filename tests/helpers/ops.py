"""What the operations tests share: the admin secret of their servers, a server's peak
memory, and the error codes a refusal may carry."""

from pathlib import Path

ADMIN = "admin-secret"
MIB = 1024 * 1024
# The codes a refusal may carry: the caller's doing or the moment's (UNAVAILABLE), never the
# server's (no INTERNAL_SERVER_ERROR).
CODES = {"BAD_INPUT", "LIMIT_EXCEEDED", "NOT_FOUND", "CONFLICT", "STALE_PLAN", "UNAVAILABLE"}


def peak_rss(pid: int) -> int:
    """The process' peak resident memory (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")
