"""What every part of bench uses and that uses nothing of bench: where things go, and
:class:`NotMeasurable`. (The harness and the peers both import this; neither imports
the other for it.)"""

from __future__ import annotations

from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
DEFAULT_RESULTS = BENCH_DIR / "results"
DEFAULT_WORK = BENCH_DIR / ".work"


class NotMeasurable(Exception):
    """This system (or the whole benchmark) cannot be measured here yet; the message says why."""
