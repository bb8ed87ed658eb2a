"""What a benchmark is made of: the invocation (:class:`Context`), its workloads
(:class:`Case`), the compared systems (:class:`System`) and the benchmark itself."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SIZES = ("tiny", "quick", "full")

Metrics = dict[str, float]


@dataclass
class Context:
    """What a whole invocation was asked for."""

    size: str
    results_dir: Path
    work_dir: Path
    rounds: int
    progress: bool = True
    skip: frozenset[str] = frozenset()
    command: str = ""
    isolate: bool = True

    def pick(self, tiny: Any, quick: Any, full: Any) -> Any:
        """The value for this invocation's size."""
        return {"tiny": tiny, "quick": quick, "full": full}[self.size]


@dataclass
class Case:
    """One workload: a label for tables and the parameters the systems read."""

    label: str
    params: dict[str, Any]


@dataclass
class System:
    """One compared system.

    ``run(case, workdir)`` measures one round and returns metrics (``msgs_per_s`` and so
    on). ``setup()`` runs once in the parent before the rounds (start a broker, check that a
    module imports) and may raise :class:`NotMeasurable`; ``teardown()`` runs once after.
    ``isolate=False`` runs ``run`` in the parent process (needed when it drives a server
    the parent started and keeps state between rounds).
    """

    name: str
    run: Callable[[Case, Path], Metrics]
    role: str = "peer"  # "rmq", "limit" or "peer"
    setup: Callable[[], None] | None = None
    teardown: Callable[[], None] | None = None
    isolate: bool = True
    note: str = ""
    cases: Sequence[str] | None = None  # labels this system runs; None = all
    tags: frozenset[str] = frozenset()  # e.g. {"java", "rocketmq"}: what --skip can name
    # Run after each setup, not measured: JIT compilers, caches and connections warm up
    # before the first measured case, whichever round it is.
    warmup: Callable[[], None] | None = None


@dataclass
class Benchmark:
    name: str
    title: str
    description: str
    cases: list[Case]
    systems: list[System]
    primary: str = "msgs_per_s"
    higher_is_better: bool = True
    parameters: dict[str, Any] = field(default_factory=dict)
    # metric name -> column title, in table order
    columns: dict[str, str] = field(default_factory=dict)
    not_measurable: str | None = None  # the whole benchmark cannot run: why
    # Servers that share the machine's cores: in each round, each system is set up (its
    # broker started and warmed up) right before its cases and torn down right after, so
    # that no idle broker takes CPU from another's run. The systems still alternate round
    # by round, their order rotating, so a slow spell of the machine falls on all of them.
    one_server_at_a_time: bool = False
