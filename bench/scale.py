"""``scale``: 10 to 1,000,000 queues: open files, mappings, memory and start time, for both
consume-queue forms (files, RocksDB)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from bench.basics import NotMeasurable
from bench.harness import Benchmark, Case, Context, Metrics, System, rmq_store_class
from bench.workload import TOPIC

# The file forms keep an open file and a mapping per queue: this machine allows 20,000
# open files and 65,530 mappings, and at 10,000 queues a file-form store already takes
# tens of seconds to open and gigabytes of memory, so they are not run above this.
FILE_FORM_LIMIT = 10_000


def within_file_form_limit(queues: int, system: str) -> None:
    if queues > FILE_FORM_LIMIT:
        raise NotMeasurable(
            f"{system} keeps an open file and a mapping per queue; {queues:,} queues exceed "
            f"what this machine allows (20,000 open files, 65,530 mappings)"
        )


# Queues are spread over topics of at most this many (a topic's queue ids stay small).
QUEUES_PER_TOPIC = 1000


def layout(queues: int) -> list[tuple[str, int]]:
    """(topic, queue count) for `queues` queues in all."""
    return [
        (f"{TOPIC}-{start // QUEUES_PER_TOPIC}", min(QUEUES_PER_TOPIC, queues - start))
        for start in range(0, queues, QUEUES_PER_TOPIC)
    ]


# Opens a store holding one message in each of QUEUES queues, then reads every queue's
# message; reports start time and what the process holds afterwards.
PROBE = textwrap.dedent(
    """
    import json, os, sys, time, rmq
    path, queues, per_topic = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    t0 = time.perf_counter()
    store = rmq.Store(path)
    started = time.perf_counter() - t0
    served = 0
    for start in range(0, queues, per_topic):
        topic = "{topic}-%d" % (start // per_topic)
        for q in range(min(per_topic, queues - start)):
            served += len(store.get(topic, q, 0, 1))
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


def run_rmq(case: Case, workdir: Path, consume_queue_type: str) -> Metrics:
    store_cls = rmq_store_class()
    queues = case.params["queues"]
    if consume_queue_type == "file":
        within_file_form_limit(queues, "rmq's file form")
    path = workdir / f"store-{consume_queue_type}"
    with store_cls(str(path), consume_queue_type=consume_queue_type) as store:
        body = b"x" * 100
        for topic, count in layout(queues):
            store.create_topic(topic, count)
            for q in range(count):
                store.put(topic, body, queue_id=q, tags="TagA", keys=f"k{q}")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), str(queues), str(QUEUES_PER_TOPIC)],
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


def run_rocketmq(case: Case, workdir: Path, store_type: str) -> Metrics:
    from bench.peers.rocketmq import store_bench

    queues = case.params["queues"]
    if store_type == "default":
        within_file_form_limit(queues, "RocketMQ's file form")
    path = workdir / f"rocketmq-{store_type}"
    store_bench(["fill", str(path), str(queues), store_type], timeout=3600)
    out = store_bench(["open", str(path), str(queues), store_type], timeout=3600)
    if out.get("queues_served") != queues:
        raise RuntimeError(f"RocketMQ served {out.get('queues_served')} of {queues} queues")
    return out


def build(ctx: Context) -> Benchmark:
    counts = ctx.pick([10, 100], [10, 1_000, 10_000], [10, 10_000, 100_000, 1_000_000])
    return Benchmark(
        name="scale",
        title="many queues: start time, open files, mappings, memory",
        description=(
            "A store with Q queues (topics of at most 1,000) and one 100 B message in each is "
            "closed, then "
            "opened in a fresh process, which reads every queue's message; the figures are "
            "that process's start time (open/load + start), time to serve all queues, open "
            "file descriptors, memory mappings and resident memory afterwards. The same for "
            "RocketMQ's DefaultMessageStore (file consume queues), in its own JVM. rmq runs "
            "in both consume-queue forms: files (one mapped file per queue) and RocksDB "
            "(RocketMQ 5's layout, one database); a form that cannot hold Q queues on this "
            "machine is reported as failed, with the error."
        ),
        cases=[Case(f"{q:,} queues", {"queues": q}) for q in counts],
        systems=[
            System(
                "rmq RocksDB",
                lambda case, workdir: run_rmq(case, workdir, "rocksdb"),
                role="rmq",
                note='rmq.Store(consume_queue_type="rocksdb"), default sizes',
            ),
            System(
                "rmq files",
                lambda case, workdir: run_rmq(case, workdir, "file"),
                role="peer",
                note="rmq.Store, file consume queues (a mapped file per queue), default sizes",
            ),
            System(
                "RocketMQ store",
                lambda case, workdir: run_rocketmq(case, workdir, "default"),
                role="peer",
                tags=frozenset({"java", "rocketmq"}),
                note="RocketMQ 5.3.3 DefaultMessageStore, default sizes (5.7 MB consume-queue "
                "files), queues in one topic; JVM start not timed, its baseline files and "
                "maps included",
            ),
            System(
                "RocketMQ RocksDB",
                lambda case, workdir: run_rocketmq(case, workdir, "defaultRocksDB"),
                role="peer",
                tags=frozenset({"java", "rocketmq"}),
                note="RocketMQ 5.3.3 RocksDBMessageStore (storeType=defaultRocksDB), queues in "
                "one topic; JVM start not timed",
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
