"""The machinery every benchmark shares.

A benchmark is a list of *cases* (one workload each, e.g. "1 KiB, batch 128") and a list of
*systems* (rmq, the machine's limit, the peers). The harness runs every system on every case,
round after round, rotating the order of the systems each round so that none is always first
(cold caches) or last (a warm machine). Each measurement normally runs in a forked child
process, so a crash in one system (an engine still being written, say) is recorded and the
run goes on, and so that each system's peak memory is its own.

A system that cannot be measured raises :class:`NotMeasurable` with the reason; the harness
records it and carries on. Results go to ``<results>/<name>.json`` (machine, versions,
parameters, every round, medians, ratios), ``<name>.md`` (a table) and ``<name>.png``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import resource
import shutil
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.basics import NotMeasurable, median, percentile
from bench.model import SIZES, Benchmark, Case, Context, Metrics, System
from bench.report import summarize, write_results

# The names every benchmark module imports from here.
__all__ = [
    "SIZES",
    "Benchmark",
    "Case",
    "Context",
    "Metrics",
    "NotMeasurable",
    "System",
    "fresh_dir",
    "median",
    "peak_rss_mb",
    "percentile",
    "progress",
    "rmq_store_class",
    "run_benchmark",
]

# --------------------------------------------------------------------------- helpers


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def fresh_dir(parent: Path, name: str) -> Path:
    path = parent / name
    if path.exists():
        shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def rmq_store_class() -> Any:
    """``rmq.Store``, or :class:`NotMeasurable` saying why it cannot be imported yet."""
    try:
        import rmq
    except Exception as exc:
        raise NotMeasurable(
            f"rmq does not import yet ({type(exc).__name__}: {exc}); "
            "build it with `pip install -e .`"
        ) from exc
    store = getattr(rmq, "Store", None)
    if store is None:
        raise NotMeasurable("rmq has no Store yet")
    return store


@contextlib.contextmanager
def progress(ctx: Context, total: int, desc: str) -> Iterator[Callable[[int], None]]:
    """A tqdm bar on long runs (quiet when progress is off or the run is tiny)."""
    if not ctx.progress or ctx.size == "tiny":
        yield lambda n: None
        return
    from tqdm import tqdm

    tqdm.monitor_interval = 0  # no monitor thread: children are forked
    bar = tqdm(total=total, desc=desc, unit="run", leave=False, dynamic_ncols=True)

    def tick(n: int) -> None:
        bar.update(n)

    try:
        yield tick
    finally:
        bar.close()


# --------------------------------------------------------------------------- running


def _child(conn: Any, system: System, case: Case, workdir: Path) -> None:
    try:
        metrics = system.run(case, workdir)
        metrics.setdefault("peak_rss_mb", peak_rss_mb())
        conn.send(("ok", metrics))
    except NotMeasurable as exc:
        conn.send(("not_measurable", str(exc)))
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"))
    finally:
        conn.close()


def run_one(system: System, case: Case, workdir: Path, isolate: bool) -> tuple[str, Any]:
    """Measure one round; returns ("ok", metrics), ("not_measurable", why) or ("error", text)."""
    if not (isolate and system.isolate):
        try:
            return "ok", system.run(case, workdir)
        except NotMeasurable as exc:
            return "not_measurable", str(exc)
        except Exception as exc:
            return "error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
    mp = multiprocessing.get_context("fork")
    parent_conn, child_conn = mp.Pipe(duplex=False)
    proc = mp.Process(target=_child, args=(child_conn, system, case, workdir))
    proc.start()
    child_conn.close()
    result: tuple[str, Any] | None = None
    try:
        result = parent_conn.recv()
    except EOFError:
        result = None
    proc.join()
    if result is None:
        code = proc.exitcode
        why = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
        return "error", f"measuring process died ({why}) without a result"
    return result


def run_benchmark(bench: Benchmark, ctx: Context) -> dict[str, Any]:
    """Run all rounds of one benchmark, write its results and return them."""
    started = time.time()
    print(f"\n== {bench.name}: {bench.title} (size {ctx.size}, {ctx.rounds} rounds)", flush=True)
    # Unique per invocation: other people may run benchmarks in the same tree at once.
    work = fresh_dir(ctx.work_dir, f"{bench.name}-{os.getpid()}")
    rounds: list[dict[str, Any]] = []
    unavailable: dict[str, str] = {}
    per_case: dict[tuple[str, str], str] = {}
    errors: list[dict[str, Any]] = []
    active: list[System] = []

    def runs_of(system: System) -> list[tuple[int, Case]]:
        """The (round, case) pairs a system measures, rounds outermost."""
        return [
            (rnd, case)
            for rnd in range(ctx.rounds)
            for case in bench.cases
            if system.cases is None or case.label in system.cases
        ]

    def start(system: System) -> bool:
        """Set the system up; False (with the reason recorded) if it cannot run."""
        try:
            if system.setup is not None:
                system.setup()
            active.append(system)
            return True
        except NotMeasurable as exc:
            unavailable[system.name] = str(exc)
            label = "not measurable yet" if system.role == "rmq" else "cannot be measured"
            print(f"   {system.name}: {label}: {exc}", flush=True)
        except Exception as exc:
            unavailable[system.name] = f"setup failed: {type(exc).__name__}: {exc}"
            print(f"   {system.name}: setup failed: {exc}", flush=True)
        return False

    def stop(system: System) -> None:
        active.remove(system)
        if system.teardown is not None:
            try:
                system.teardown()
            except Exception as exc:
                print(f"   {system.name}: teardown failed: {exc}", flush=True)

    def warm_up(system: System, rnd: int) -> None:
        """The system's unmeasured warm-up; a failure is recorded and the round goes on."""
        if system.warmup is None:
            return
        try:
            system.warmup()
        except Exception as exc:
            error = f"warm-up failed: {type(exc).__name__}: {exc}"
            errors.append({"round": rnd, "case": "warm-up", "system": system.name, "error": error})
            print(f"   {system.name}: {error}", flush=True)

    def measure(system: System, case: Case, rnd: int) -> None:
        rundir = fresh_dir(work, "run")
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        status, value = run_one(system, case, rundir, ctx.isolate)
        wall = time.perf_counter() - t0
        shutil.rmtree(rundir, ignore_errors=True)
        if status == "ok":
            metrics = {k: float(v) for k, v in value.items()}
            metrics["loadavg"] = load
            metrics["wall_s"] = wall
            rounds.append(
                {"round": rnd, "case": case.label, "system": system.name, "metrics": metrics}
            )
        elif status == "not_measurable":
            # Recorded, and tried again next round: a part being rebuilt in a shared tree
            # may be back by then.
            if (system.name, case.label) not in per_case:
                label = "not measurable yet" if system.role == "rmq" else "skipped"
                print(f"   {system.name} [{case.label}]: {label}: {value}", flush=True)
            per_case[(system.name, case.label)] = str(value)
        else:
            first = str(value).splitlines()[0]
            errors.append({"round": rnd, "case": case.label, "system": system.name, "error": value})
            print(f"   {system.name} [{case.label}]: error: {first}", flush=True)

    try:
        if bench.not_measurable:
            print(f"   not measurable yet: {bench.not_measurable}", flush=True)
        candidates: list[System] = []
        for system in bench.systems:
            if bench.not_measurable and system.role == "rmq":
                unavailable[system.name] = bench.not_measurable
                continue
            if system.name.lower() in ctx.skip or system.tags & ctx.skip:
                unavailable[system.name] = "skipped: excluded with --skip"
                print(f"   {system.name}: skipped (excluded with --skip)", flush=True)
                continue
            candidates.append(system)

        if bench.one_server_at_a_time:
            total = sum(len(runs_of(system)) for system in candidates)
            with progress(ctx, total, bench.name) as tick:
                for rnd in range(ctx.rounds):
                    shift = rnd % len(candidates) if candidates else 0
                    for system in candidates[shift:] + candidates[:shift]:
                        runs = [(r, case) for r, case in runs_of(system) if r == rnd]
                        if system.name in unavailable or not start(system):
                            tick(len(runs))
                            continue
                        try:
                            warm_up(system, rnd)
                            for _, case in runs:
                                measure(system, case, rnd)
                                tick(1)
                        finally:
                            stop(system)
        else:
            for system in candidates:
                start(system)
            total = sum(len(runs_of(system)) for system in active)
            with progress(ctx, total, bench.name) as tick:
                for rnd in range(ctx.rounds):
                    for case in bench.cases:
                        order = [s for s in active if s.cases is None or case.label in s.cases]
                        if order:
                            shift = rnd % len(order)
                            order = order[shift:] + order[:shift]
                        for system in order:
                            measure(system, case, rnd)
                            tick(1)
    finally:
        for system in list(active):
            stop(system)
        shutil.rmtree(work, ignore_errors=True)

    reasons = [{"system": k, "reason": v} for k, v in unavailable.items()]
    done = {(r["system"], r["case"]) for r in rounds}
    for (k, c), v in per_case.items():
        if (k, c) in done:  # measurable in other rounds: say so among the errors
            errors.append({"round": -1, "case": c, "system": k, "error": f"some rounds: {v}"})
        else:
            reasons.append({"system": k, "case": c, "reason": v})
    result = summarize(bench, ctx, rounds, reasons, errors, started)
    write_results(bench, ctx, result)
    return result
