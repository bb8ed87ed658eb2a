"""``scale``: 10 to 100,000 queues: open files, mappings, memory and start time."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from bench.harness import Benchmark, Case, Context, Metrics, System, rmq_store_class
from bench.workload import TOPIC

# Opens a store holding one message in each of QUEUES queues, then reads every queue's
# message; reports start time and what the process holds afterwards.
PROBE = textwrap.dedent(
    """
    import json, os, sys, time, rmq
    path, queues = sys.argv[1], int(sys.argv[2])
    t0 = time.perf_counter()
    store = rmq.Store(path)
    started = time.perf_counter() - t0
    served = sum(len(store.get("{topic}", q, 0, 1)) for q in range(queues))
    seconds = time.perf_counter() - t0
    rss = 0.0
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
    out = {{
        "start_s": started,
        "seconds": seconds,
        "queues_served": served,
        "open_files": len(os.listdir("/proc/self/fd")),
        "mappings": sum(1 for _ in open("/proc/self/maps")),
        "rss_mb": rss,
    }}
    store.close()
    print("RESULT " + json.dumps(out), flush=True)
    """
).format(topic=TOPIC)


def run_rmq(case: Case, workdir: Path) -> Metrics:
    store_cls = rmq_store_class()
    queues = case.params["queues"]
    path = workdir / "store"
    with store_cls(str(path)) as store:
        store.create_topic(TOPIC, queues)
        body = b"x" * 100
        for q in range(queues):
            store.put(TOPIC, body, queue_id=q, tags="TagA", keys=f"k{q}")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), str(queues)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            out = {k: float(v) for k, v in json.loads(line[7:]).items()}
            if out["queues_served"] != queues:
                raise RuntimeError(f"rmq served {out['queues_served']:.0f} of {queues} queues")
            return out
    raise RuntimeError(f"probe failed (exit {proc.returncode}): {proc.stderr[-800:]}")


def run_rocketmq(case: Case, workdir: Path) -> Metrics:
    from bench.peers.rocketmq import store_bench

    queues = case.params["queues"]
    path = workdir / "rocketmq"
    store_bench(["fill", str(path), str(queues)], timeout=3600)
    out = store_bench(["open", str(path), str(queues)], timeout=3600)
    if out.get("queues_served") != queues:
        raise RuntimeError(f"RocketMQ served {out.get('queues_served')} of {queues} queues")
    return out


def build(ctx: Context) -> Benchmark:
    counts = ctx.pick([10, 100], [10, 1_000], [10, 1_000, 100_000])
    return Benchmark(
        name="scale",
        title="many queues: start time, open files, mappings, memory",
        description=(
            "A store with one topic of Q queues and one 100 B message in each is closed, then "
            "opened in a fresh process, which reads every queue's message; the figures are "
            "that process's start time (open/load + start), time to serve all queues, open "
            "file descriptors, memory mappings and resident memory afterwards. The same for "
            "RocketMQ's DefaultMessageStore (file consume queues), in its own JVM."
        ),
        cases=[Case(f"{q:,} queues", {"queues": q}) for q in counts],
        systems=[
            System("rmq", run_rmq, role="rmq", note="rmq.Store, default sizes"),
            System(
                "RocketMQ store",
                run_rocketmq,
                role="peer",
                tags=frozenset({"java", "rocketmq"}),
                note="RocketMQ 5.3.3 DefaultMessageStore, default sizes (5.7 MB consume-queue "
                "files); JVM start not timed, its baseline files and maps included",
            ),
        ],
        primary="seconds",
        higher_is_better=False,
        parameters={"queues": counts, "body": 100},
        columns={
            "start_s": "start s",
            "seconds": "start + serve all s",
            "open_files": "open files",
            "mappings": "mappings",
            "rss_mb": "RSS MB",
        },
    )
