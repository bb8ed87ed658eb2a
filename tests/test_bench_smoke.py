"""Smoke test of the benchmark harness (bench/): every benchmark runs at a tiny size.

Benchmarks are not tests: nothing here checks a speed. It checks that each benchmark
runs end to end and writes its JSON, table and plot, that the embedded peers and the
machine's limits really ran, and that whatever could not run (an rmq part still being
built, the Java peers left out of this quick run) is reported with a reason instead of
crashing the run. Set RMQ_BENCH_JAVA=1 to include the Java peers (slow: JVM starts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = ["append", "read", "sync", "grpc", "recovery", "spark", "scale", "tier", "metrics"]
WITH_JAVA = os.environ.get("RMQ_BENCH_JAVA") == "1"


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except Exception:
        return False
    return True


if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _run_bench(tmp: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "--size",
        "tiny",
        "--no-progress",
        "--results",
        str(tmp / "results"),
        "--work",
        str(tmp / "work"),
        *args,
    ]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("bench")
    skip = [] if WITH_JAVA else ["--skip", "java"]
    proc = _run_bench(tmp, "--rounds", "1", *skip, timeout=900 if WITH_JAVA else 420)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    return tmp / "results", output


def _load(results: Path, name: str) -> dict[str, Any]:
    path = results / f"{name}.json"
    assert path.exists(), f"{name}.json was not written"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.mark.parametrize("name", BENCHMARKS)
def test_each_benchmark_writes_results(tiny_run: tuple[Path, str], name: str) -> None:
    results, output = tiny_run
    data = _load(results, name)
    assert data["benchmark"] == name
    assert data["size"] == "tiny"
    for key in ("machine", "versions", "parameters", "rounds", "medians", "ratios", "command"):
        assert key in data, key
    assert data["machine"]["cores"] >= 1
    assert (results / f"{name}.md").read_text().startswith(f"### `{name}`")
    if _importable("matplotlib"):
        assert (results / f"{name}.png").stat().st_size > 1000
    # Nothing crashed: every system either measured or said why it could not.
    assert data["errors"] == [], data["errors"]
    measured = {r["system"] for r in data["rounds"]}
    for system in data["systems"]:
        reasons = [u["reason"] for u in data["unavailable"] if u["system"] == system["name"]]
        assert system["name"] in measured or reasons, f"{system['name']}: no result, no reason"
        assert all(reason.strip() for reason in reasons)
    if data["status"] == "not measurable yet":
        assert "not measurable yet" in output


@pytest.mark.parametrize("name", ["append", "read"])
def test_embedded_peers_and_limit_really_ran(tiny_run: tuple[Path, str], name: str) -> None:
    data = _load(tiny_run[0], name)
    measured = {r["system"] for r in data["rounds"]}
    expected = {"mmap limit", "sqlite"}
    expected |= {
        name for name, mod in (("rocksdb", "rocksdict"), ("lmdb", "lmdb")) if _importable(mod)
    }
    assert expected <= measured, measured
    for r in data["rounds"]:
        assert r["metrics"]["msgs_per_s"] > 0


def test_sync_disk_limit_ran(tiny_run: tuple[Path, str]) -> None:
    data = _load(tiny_run[0], "sync")
    cases = {r["case"] for r in data["rounds"] if r["system"] == "fdatasync limit"}
    assert cases == {"1 thread", "8 threads", "64 threads"}


def test_rmq_measured_where_the_engine_exists(tiny_run: tuple[Path, str]) -> None:
    try:
        import rmq

        rmq.Store  # noqa: B018 - probing the attribute
    except Exception:
        pytest.skip("rmq is not built here")
    for name in ("append", "read"):
        data = _load(tiny_run[0], name)
        assert any(r["system"] == "rmq" for r in data["rounds"]), data["unavailable"]
        assert data["ratios"], "no ratio computed"


@pytest.mark.skipif(WITH_JAVA, reason="the Java peers were included in this run")
def test_java_peers_reported_as_skipped(tiny_run: tuple[Path, str]) -> None:
    for name in ("grpc", "append", "scale", "recovery"):
        data = _load(tiny_run[0], name)
        java = [s["name"] for s in data["systems"] if s["name"] in ("rocketmq", "kafka")]
        java += [s["name"] for s in data["systems"] if s["name"].startswith("RocketMQ")]
        assert java, name
        for sys_name in java:
            reasons = [u["reason"] for u in data["unavailable"] if u["system"] == sys_name]
            assert reasons and "skipped" in reasons[0], (name, sys_name, data["unavailable"])


def test_harness_alternates_systems_and_summarizes(tmp_path: Path) -> None:
    """Two rounds rotate the order; medians, ratios and not-measurable are recorded."""
    from bench.harness import Benchmark, Case, Context, NotMeasurable, System, run_benchmark

    calls: list[str] = []

    def fake(name: str, rate: float) -> System:
        def run(case: Case, workdir: Path) -> dict[str, float]:
            calls.append(name)
            return {"msgs_per_s": rate}

        return System(name, run, role="rmq" if name == "rmq" else "peer")

    def missing(case: Case, workdir: Path) -> dict[str, float]:
        raise NotMeasurable("needs a part that is not built")

    bench = Benchmark(
        name="fake",
        title="fake",
        description="",
        cases=[Case("one", {})],
        systems=[fake("rmq", 200.0), fake("peer", 100.0), System("gone", missing)],
    )
    ctx = Context(
        size="tiny",
        results_dir=tmp_path / "results",
        work_dir=tmp_path / "work",
        rounds=2,
        progress=False,
        isolate=False,
    )
    result = run_benchmark(bench, ctx)
    assert calls == ["rmq", "peer", "peer", "rmq"]
    assert result["ratios"]["one"]["rmq"]["peer"] == pytest.approx(2.0)
    assert result["unavailable"] == [
        {"system": "gone", "case": "one", "reason": "needs a part that is not built"}
    ]
    assert (tmp_path / "results" / "fake.json").exists()


def test_a_crashing_system_is_recorded_not_fatal(tmp_path: Path) -> None:
    from bench.harness import Benchmark, Case, Context, System, run_benchmark

    def crash(case: Case, workdir: Path) -> dict[str, float]:
        os._exit(3)

    def fine(case: Case, workdir: Path) -> dict[str, float]:
        return {"msgs_per_s": 1.0}

    bench = Benchmark(
        name="crash",
        title="crash",
        description="",
        cases=[Case("one", {})],
        systems=[System("rmq", crash, role="rmq"), System("peer", fine)],
    )
    ctx = Context(
        size="tiny",
        results_dir=tmp_path / "results",
        work_dir=tmp_path / "work",
        rounds=1,
        progress=False,
    )
    result = run_benchmark(bench, ctx)
    assert len(result["errors"]) == 1 and "exit 3" in result["errors"][0]["error"]
    assert [r["system"] for r in result["rounds"]] == ["peer"]
