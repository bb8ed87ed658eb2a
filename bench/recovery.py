"""``recovery``: kill a store holding G bytes at a random moment; time until it serves again."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from bench.harness import Benchmark, Case, Context, Metrics, NotMeasurable, System
from bench.workload import TOPIC

SEGMENT = 1 << 30  # rmq's and RocketMQ's default commit-log segment

# Writes 1 KiB messages in batches of 128 over 8 queues until the log holds TARGET bytes,
# says READY, then either closes cleanly (CLEAN=1) or keeps writing until it is killed.
WRITER = textwrap.dedent(
    """
    import os, sys, rmq
    path, target, clean = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
    body = os.urandom(1024)
    store = rmq.Store(path, commitlog_segment_size={segment})
    i = 0
    ready = False
    while True:
        batch = [rmq.Message(body, tags="TagA", keys=["k%d" % (i + j)]) for j in range(128)]
        store.put_batch("{topic}", i % 8, batch)
        i += 128
        if not ready and store.commitlog_max_offset() >= target:
            ready = True
            if clean:
                store.close()
                print("READY", flush=True)
                break
            print("READY", flush=True)
    """
).format(segment=SEGMENT, topic=TOPIC)

# Opens the store (recovering it) and reads the first message of queue 0: time to serve.
REOPEN = textwrap.dedent(
    """
    import json, sys, time, rmq
    t0 = time.perf_counter()
    store = rmq.Store(sys.argv[1], commitlog_segment_size={segment})
    first = store.get("{topic}", 0, store.min_offset("{topic}", 0), 1)
    seconds = time.perf_counter() - t0
    rep = store.recovery_report
    out = {{"seconds": seconds, "served": len(first), "log_bytes": store.commitlog_max_offset()}}
    for name in ("records_scanned", "bytes_truncated", "records_redispatched", "duration_ms"):
        out[name] = float(getattr(rep, name, float("nan")) or 0)
    out["abnormal"] = 1.0 if getattr(rep, "mode", "") == "abnormal" else 0.0
    store.close()
    print("RESULT " + json.dumps(out), flush=True)
    """
).format(segment=SEGMENT, topic=TOPIC)


def _check_rmq() -> None:
    try:
        import rmq
    except Exception as exc:
        raise NotMeasurable(f"rmq does not import yet ({exc})") from exc
    if not hasattr(rmq.Store, "recovery_report"):
        raise NotMeasurable("rmq.Store has no recovery_report yet (crash recovery: issue 4)")


def _write(path: Path, target: int, clean: bool) -> float:
    """Fill a store to ``target`` bytes; kill it at a random moment after unless clean."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(target), "1" if clean else "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "READY" not in line:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"writer failed before READY (exit {proc.poll()})")
    if clean:
        proc.wait(120)
        return 0.0
    delay = random.uniform(0.0, 0.2)
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return delay


def _reopen(path: Path) -> Metrics:
    proc = subprocess.run(
        [sys.executable, "-c", REOPEN, str(path)], capture_output=True, text=True, timeout=1800
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return {k: float(v) for k, v in json.loads(line[7:]).items()}
    raise RuntimeError(f"reopen failed (exit {proc.returncode}): {proc.stderr[-800:]}")


def run_killed(case: Case, workdir: Path) -> Metrics:
    _check_rmq()
    delay = _write(workdir / "store", case.params["bytes"], clean=False)
    out = _reopen(workdir / "store")
    out["kill_delay_s"] = delay
    return out


def run_clean(case: Case, workdir: Path) -> Metrics:
    _check_rmq()
    _write(workdir / "store", case.params["bytes"], clean=True)
    return _reopen(workdir / "store")


def run_rocketmq(case: Case, workdir: Path) -> Metrics:
    _check_rmq()
    from bench.peers.rocketmq import store_bench

    _write(workdir / "store", case.params["bytes"], clean=False)
    out = store_bench(["recover", str(workdir / "store")])
    if not out.get("first_message_found"):
        raise RuntimeError("RocketMQ's store opened rmq's files but served no message")
    return out


def build(ctx: Context) -> Benchmark:
    sizes = ctx.pick([8 << 20], [256 << 20], [256 << 20, 2 << 30])
    cases = [
        Case(f"{b / (1 << 30):g} GiB" if b >= 1 << 30 else f"{b >> 20} MiB", {"bytes": b})
        for b in sizes
    ]
    return Benchmark(
        name="recovery",
        title="time until a killed store serves again",
        description=(
            "A child process fills a store with 1 KiB messages (batches of 128, 8 queues) "
            "to G bytes and keeps writing; it is killed with SIGKILL at a random moment "
            "0-200 ms later. The clock covers opening the store in a fresh process "
            "(recovery included) and reading the first message of queue 0."
        ),
        cases=cases,
        systems=[
            System("rmq after SIGKILL", run_killed, role="rmq"),
            System(
                "rmq after clean close",
                run_clean,
                role="baseline",
                note="same store closed cleanly, then reopened",
            ),
            System(
                "RocketMQ store after SIGKILL",
                run_rocketmq,
                role="peer",
                tags=frozenset({"java", "rocketmq"}),
                note="rmq's killed files opened by RocketMQ 5.3.3 DefaultMessageStore "
                "(load + start + first getMessage), in-process Java",
            ),
        ],
        primary="seconds",
        higher_is_better=False,
        parameters={"bytes": sizes, "segment": SEGMENT, "body": 1024},
        columns={
            "seconds": "seconds to serve",
            "log_bytes": "log bytes",
            "records_scanned": "records scanned",
            "bytes_truncated": "bytes cut",
        },
    )
