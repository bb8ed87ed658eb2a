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
import datetime as _dt
import json
import multiprocessing
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.basics import REPO_DIR, NotMeasurable

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


# --------------------------------------------------------------------------- helpers


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (q in 0..100)."""
    if not sorted_values:
        return float("nan")
    rank = max(0, min(len(sorted_values) - 1, round(q / 100.0 * len(sorted_values)) - 1))
    return float(sorted_values[rank])


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


def rmq_version() -> str | None:
    try:
        import rmq

        return str(rmq.__version__)
    except Exception:
        return None


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


# --------------------------------------------------------------------------- machine


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def machine_description(work_dir: Path) -> dict[str, Any]:
    cpu = ""
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = 0
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    fs = ""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["df", "-T", str(work_dir)], capture_output=True, text=True, timeout=10
        ).stdout.splitlines()
        if len(out) > 1:
            fs = " ".join(out[1].split()[:2])
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "work_filesystem": fs,
        "python": sys.version.split()[0],
        "loadavg_at_start": os.getloadavg()[0],
    }


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"rmq": rmq_version()}
    from importlib import metadata

    for dist in ("rocksdict", "lmdb", "pyarrow", "pyspark", "matplotlib", "tqdm"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = None
    import sqlite3

    found["sqlite"] = sqlite3.sqlite_version
    from bench.peers import kafka, rocketmq
    from bench.peers.common import java_version

    found["rocketmq_peer"] = rocketmq.VERSION
    found["kafka_peer"] = kafka.VERSION
    found["java"] = java_version()
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["git", "-C", str(REPO_DIR), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        found["rmq_commit"] = out.stdout.strip() or None
    return found


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


# --------------------------------------------------------------------------- summary


def summarize(
    bench: Benchmark,
    ctx: Context,
    rounds: list[dict[str, Any]],
    unavailable: list[dict[str, str]],
    errors: list[dict[str, Any]],
    started: float,
) -> dict[str, Any]:
    medians: dict[str, dict[str, Metrics]] = {}
    spread: dict[str, dict[str, float]] = {}
    noisy: list[dict[str, Any]] = []
    for case in bench.cases:
        medians[case.label] = {}
        spread[case.label] = {}
        for system in bench.systems:
            mine = [r for r in rounds if r["case"] == case.label and r["system"] == system.name]
            if not mine:
                continue
            keys = sorted({k for r in mine for k in r["metrics"]})
            medians[case.label][system.name] = {
                k: median([r["metrics"][k] for r in mine if k in r["metrics"]]) for k in keys
            }
            values = [r["metrics"].get(bench.primary, float("nan")) for r in mine]
            mid = median(values)
            if len(values) > 1 and mid:
                spread[case.label][system.name] = (max(values) - min(values)) / mid
                for r, v in zip(mine, values, strict=True):
                    dev = abs(v - mid) / mid
                    if dev > 0.2:
                        noisy.append(
                            {
                                "round": r["round"],
                                "case": case.label,
                                "system": system.name,
                                "deviation_from_median": round(dev, 3),
                                "loadavg": r["metrics"].get("loadavg"),
                            }
                        )

    rmq_names = [s.name for s in bench.systems if s.role == "rmq"]
    ratios: dict[str, dict[str, dict[str, float]]] = {}
    for label, by_system in medians.items():
        ratios[label] = {}
        for rname in rmq_names:
            if rname not in by_system or bench.primary not in by_system[rname]:
                continue
            value = by_system[rname][bench.primary]
            for other, m in by_system.items():
                if other == rname or bench.primary not in m or not m[bench.primary]:
                    continue
                ratios[label].setdefault(rname, {})[other] = value / m[bench.primary]

    measured = {r["system"] for r in rounds}
    rmq_measured = any(n in measured for n in rmq_names)
    status = "ok"
    if not rmq_measured:
        status = "not measurable yet"
    elif unavailable or errors:
        status = "partial"
    return {
        "benchmark": bench.name,
        "title": bench.title,
        "description": bench.description,
        "status": status,
        "command": ctx.command,
        "size": ctx.size,
        "rounds_requested": ctx.rounds,
        "started": _dt.datetime.fromtimestamp(started, _dt.UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.time() - started, 2),
        "machine": machine_description(ctx.work_dir),
        "loadavg_at_end": os.getloadavg()[0],
        "versions": versions(),
        "parameters": bench.parameters,
        "cases": [{"label": c.label, "params": c.params} for c in bench.cases],
        "systems": [{"name": s.name, "role": s.role, "note": s.note} for s in bench.systems],
        "primary_metric": bench.primary,
        "higher_is_better": bench.higher_is_better,
        "ratio_definition": f"rmq median {bench.primary} / other system's median {bench.primary}",
        "rounds": rounds,
        "medians": medians,
        "spread": spread,
        "noisy_rounds": noisy,
        "ratios": ratios,
        "unavailable": unavailable,
        "errors": errors,
    }


def _fmt(value: float | None) -> str:
    if value is None or value != value:  # NaN
        return "-"
    a = abs(value)
    if a >= 100_000:
        return f"{value:,.0f}"
    if a >= 100:
        return f"{value:,.0f}"
    if a >= 10:
        return f"{value:.1f}"
    if a >= 0.01:
        return f"{value:.2f}"
    return f"{value:.3g}"


def markdown_table(bench: Benchmark, result: dict[str, Any]) -> str:
    lines: list[str] = []
    direction = "higher is better" if bench.higher_is_better else "lower is better"
    cols = bench.columns or {bench.primary: bench.primary}
    rmq_names = [s["name"] for s in result["systems"] if s["role"] == "rmq"]
    lines.append(f"### `{bench.name}`: {bench.title}")
    lines.append("")
    lines.append(
        f"Size `{result['size']}`, {result['rounds_requested']} rounds, "
        f"{result['started']}, {result['machine']['cores']} cores "
        f"({result['machine']['cpu'] or 'unknown cpu'}), "
        f"load {result['machine']['loadavg_at_start']:.1f} → {result['loadavg_at_end']:.1f}. "
        f"Medians; ratio = rmq ÷ system on {cols.get(bench.primary, bench.primary)} "
        f"({direction}); spread = (max - min) / median over rounds."
    )
    lines.append("")
    if result["rounds"]:
        header = ["case", "system", *cols.values()]
        header += [f"{r} ÷ this" for r in rmq_names] + ["spread", "rounds"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for case in result["cases"]:
            label = case["label"]
            for system in result["systems"]:
                name = system["name"]
                m = result["medians"].get(label, {}).get(name)
                if m is None:
                    continue
                n = sum(1 for r in result["rounds"] if r["case"] == label and r["system"] == name)
                row = [label, f"**{name}**" if system["role"] == "rmq" else name]
                row += [_fmt(m.get(k)) for k in cols]
                for rname in rmq_names:
                    ratio = result["ratios"].get(label, {}).get(rname, {}).get(name)
                    row.append(f"{ratio:.3g}x" if ratio is not None else "")
                s = result["spread"].get(label, {}).get(name)
                row.append(f"{s:.0%}" if s is not None else "")
                row.append(str(n))
                lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    for item in result["unavailable"]:
        word = "not measurable yet" if item["system"] in rmq_names else "not run"
        where = f" [{item['case']}]" if item.get("case") else ""
        lines.append(f"- {item['system']}{where}: {word}: {item['reason']}")
    for err in result["errors"]:
        first = err["error"].splitlines()[0]
        lines.append(f"- {err['system']} [{err['case']}] round {err['round']}: error: {first}")
    if result["noisy_rounds"]:
        worst = sorted(result["noisy_rounds"], key=lambda n: -n["deviation_from_median"])[:5]
        parts = [
            f"{n['system']} [{n['case']}] round {n['round']} ({n['deviation_from_median']:.0%})"
            for n in worst
        ]
        lines.append(
            f"- noisy rounds (> 20% from the median): {len(result['noisy_rounds'])}; "
            f"worst: {', '.join(parts)}"
        )
    notes = [s for s in result["systems"] if s["note"]]
    if notes:
        lines.append("")
        for s in notes:
            lines.append(f"- *{s['name']}*: {s['note']}")
    lines.append("")
    return "\n".join(lines)


def plot(bench: Benchmark, result: dict[str, Any], path: Path) -> bool:
    """A grouped bar chart of the primary metric per case and system (min-max whiskers)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as exc:
        print(f"   no plot: matplotlib unavailable ({exc})", flush=True)
        return False
    labels = [c["label"] for c in result["cases"]]
    systems = [
        s["name"]
        for s in result["systems"]
        if any(s["name"] in result["medians"].get(lbl, {}) for lbl in labels)
    ]
    fig, ax = plt.subplots(figsize=(max(7.5, 1.6 * len(labels) + 3.5), 4.2), dpi=110)
    if not systems:
        ax.text(0.5, 0.5, "not measurable yet", ha="center", va="center", fontsize=14)
        ax.set_axis_off()
    else:
        width = 0.8 / len(systems)
        values_all: list[float] = []
        for i, name in enumerate(systems):
            mids, lo, hi = [], [], []
            for lbl in labels:
                vals = [
                    r["metrics"][bench.primary]
                    for r in result["rounds"]
                    if r["case"] == lbl and r["system"] == name and bench.primary in r["metrics"]
                ]
                m = median(vals) if vals else 0.0
                mids.append(m)
                lo.append(m - min(vals) if vals else 0.0)
                hi.append(max(vals) - m if vals else 0.0)
                values_all += [v for v in vals if v > 0]
            xs = [x + (i - (len(systems) - 1) / 2) * width for x in range(len(labels))]
            ax.bar(xs, mids, width, yerr=[lo, hi], capsize=2, label=name)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=15 if len(labels) > 4 else 0, fontsize=8)
        if values_all and max(values_all) / max(min(values_all), 1e-12) > 200:
            ax.set_yscale("log")
        col = bench.columns.get(bench.primary, bench.primary)
        direction = "higher is better" if bench.higher_is_better else "lower is better"
        ax.set_ylabel(f"{col} ({direction})")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{bench.name}: {bench.title} (size {result['size']})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def write_results(bench: Benchmark, ctx: Context, result: dict[str, Any]) -> None:
    ctx.results_dir.mkdir(parents=True, exist_ok=True)
    table = markdown_table(bench, result)
    result["table_markdown"] = table
    json_path = ctx.results_dir / f"{bench.name}.json"
    json_path.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    (ctx.results_dir / f"{bench.name}.md").write_text(table)
    plot(bench, result, ctx.results_dir / f"{bench.name}.png")
    print(table, flush=True)
