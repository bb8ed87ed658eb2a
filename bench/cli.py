"""``python -m bench [NAME ...] --size tiny|quick|full``: run benchmarks, write results."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench import readme
from bench.basics import DEFAULT_RESULTS, DEFAULT_WORK
from bench.harness import SIZES, Context, run_benchmark

# Benchmark name -> module with ``build(ctx) -> Benchmark``, in the order they run.
BENCHMARKS = {
    "append": "bench.append",
    "read": "bench.read",
    "sync": "bench.sync",
    "grpc": "bench.grpc",
    "recovery": "bench.recovery",
    "spark": "bench.spark",
    "scale": "bench.scale",
    "tier": "bench.tier",
    "metrics": "bench.metrics_cost",
}

DEFAULT_ROUNDS = {"tiny": 2, "quick": 3, "full": 5}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run rmq's benchmarks against peers and the machine's limits.",
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"benchmarks to run (default: all): {', '.join(BENCHMARKS)}",
    )
    parser.add_argument(
        "--size",
        choices=SIZES,
        default="quick",
        help="tiny: smoke test; quick: a few minutes for all; full: the size to report",
    )
    parser.add_argument("--rounds", type=int, help="rounds per system (default by size)")
    parser.add_argument(
        "--results",
        type=Path,
        default=DEFAULT_RESULTS,
        help="where <name>.json/.md/.png go (default bench/results; README updated only there)",
    )
    parser.add_argument(
        "--work", type=Path, default=DEFAULT_WORK, help="scratch directory for stores"
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="SYSTEM",
        help="leave a system out (repeatable), e.g. --skip rocketmq --skip kafka",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="measure in this process instead of a forked child per round (debugging)",
    )
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.list:
        for name, module in BENCHMARKS.items():
            doc = (importlib.import_module(module).__doc__ or "").strip().splitlines()
            print(f"{name:10s} {doc[0] if doc else ''}")
        return 0
    names = args.names or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
        return 2
    shown = ["python", "-m", "bench", *(argv if argv is not None else sys.argv[1:])]
    ctx = Context(
        size=args.size,
        results_dir=args.results.resolve(),
        work_dir=args.work.resolve(),
        rounds=args.rounds or DEFAULT_ROUNDS[args.size],
        progress=not args.no_progress,
        skip=frozenset(s.lower() for s in args.skip),
        command=shlex.join(shown),
        isolate=not args.in_process,
    )
    # Import rmq once here, so that every forked measurement uses the same build even if
    # the shared tree's Python files change during the run.
    with contextlib.suppress(Exception):
        import rmq  # noqa: F401
    started = time.time()
    summary: list[tuple[str, str]] = []
    for name in names:
        try:
            bench = importlib.import_module(BENCHMARKS[name]).build(ctx)
            result = run_benchmark(bench, ctx)
            summary.append((name, result["status"]))
        except Exception as exc:  # one broken benchmark never stops the others
            import traceback

            traceback.print_exc()
            summary.append((name, f"harness error: {type(exc).__name__}: {exc}"))
    if ctx.results_dir == DEFAULT_RESULTS.resolve():
        readme.update(ctx.results_dir, list(BENCHMARKS))
    print(f"\n== done in {time.time() - started:.0f} s; results in {ctx.results_dir}")
    for name, status in summary:
        print(f"   {name:10s} {status}")
    return 1 if any(s.startswith("harness error") for _, s in summary) else 0
