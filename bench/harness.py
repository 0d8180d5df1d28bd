"""Timing: candidate and baseline measured alternately in one run, medians, ratios."""

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

Timed = Callable[[], Awaitable[Any]]


@dataclass
class Result:
    case: str
    candidate: str
    baseline: str
    candidate_s: float
    baseline_s: float | None
    goal: str
    met: bool
    runs: int
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        return None if self.baseline_s is None else self.candidate_s / self.baseline_s

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


async def _seconds(work: Timed, before: Timed | None) -> float:
    if before is not None:
        await before()  # reset between runs, untimed
    started = time.perf_counter()
    await work()
    return time.perf_counter() - started


async def alternate(
    candidate: Timed, baseline: Timed | None, runs: int, *, reset: Timed | None = None
) -> tuple[float, float | None]:
    """Median seconds of each, run one after the other `runs` times (so drift in the
    machine's speed hits both alike)."""
    cand, base = [], []
    for _ in range(runs):
        cand.append(await _seconds(candidate, reset))
        if baseline is not None:
            base.append(await _seconds(baseline, reset))
    return statistics.median(cand), statistics.median(base) if base else None


def table(results: list[Result]) -> str:
    rows = [("case", "candidate", "baseline", "ratio", "goal", "met", "notes")]
    for r in results:
        rows.append(
            (
                r.case,
                f"{r.candidate_s * 1000:.1f} ms",
                "-" if r.baseline_s is None else f"{r.baseline_s * 1000:.1f} ms",
                "-" if r.ratio is None else f"{r.ratio:.2f}",
                r.goal,
                "yes" if r.met else "NO",
                ", ".join(f"{k}={v}" for k, v in r.notes.items()),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)
