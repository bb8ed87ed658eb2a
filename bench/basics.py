"""What every part of bench uses and that uses nothing of bench: where things go,
:class:`NotMeasurable`, and the statistics every table uses. (The harness and the peers
both import this; neither imports the other for it.)"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
DEFAULT_RESULTS = BENCH_DIR / "results"
DEFAULT_WORK = BENCH_DIR / ".work"


class NotMeasurable(Exception):
    """This system (or the whole benchmark) cannot be measured here yet; the message says why."""


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (q in 0..100)."""
    if not sorted_values:
        return float("nan")
    rank = max(0, min(len(sorted_values) - 1, round(q / 100.0 * len(sorted_values)) - 1))
    return float(sorted_values[rank])
