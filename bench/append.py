"""``append``: write N messages (100 B and 1 KiB bodies, with a tag and a key or bodies only)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.embedded import FACTORIES, ROLES, timed
from bench.harness import Benchmark, Case, Context, Metrics, System
from bench.page_preheat import preheat
from bench.workload import BATCH, estimated_record_size, make

# The rmq systems: the two consume-queue forms, the only ones that run the queue cases.
RMQ_FORMS = ("rmq", "rmq RocksDB CQ")
QUEUES = 8

SYSTEM_NOTES = {
    "rmq": "single: Store.put; batches: Store.put_batch of bytes bodies with tags= and keys= "
    "columns (no rmq.Message per message)",
    "rmq RocksDB CQ": 'rmq.Store(consume_queue_type="rocksdb"): queue entries in RocksDB',
    "mmap limit": "the bytes rmq's commit log grows by, pre-built, copied into a mapped file",
    "rocksdb": "rocksdict raw mode, message + key entries, WriteBatch per batch, WAL unsynced",
    "lmdb": "two databases, one txn per put or per batch (putmulti), sync=False, writemap",
    "sqlite": "WAL, synchronous=NORMAL, executemany in one transaction per batch",
}


def _size_label(body: int) -> str:
    return "1 KiB" if body == 1024 else f"{body} B"


def _preheat_for(workdir: Path, params: dict[str, Any]) -> None:
    """Same memory state for every system (see page_preheat): a little more than the log
    grows by, so the queue and index files are covered too."""
    record = estimated_record_size(int(params["body"]), plain=bool(params["plain"]))
    preheat(workdir, int(params["count"]) * record * 5 // 4)


def _run(name: str) -> Callable[[Case, Path], Metrics]:
    def run(case: Case, workdir: Path) -> Metrics:
        p = case.params
        wl = make(p["count"], p["body"], plain=p["plain"], queues=p.get("queues", 1))
        system = FACTORIES[name](workdir, wl)
        _preheat_for(workdir, case.params)
        try:
            seconds = timed(system.write, wl, case.params["batch"])
        finally:
            system.close()
        metrics: Metrics = {
            "seconds": seconds,
            "msgs_per_s": wl.count / seconds,
            "mb_per_s": wl.payload_bytes / seconds / 1e6,
        }
        record = getattr(system, "record", None)
        if record:
            metrics["record_bytes"] = float(record)
            metrics["log_mb_per_s"] = record * wl.count / seconds / 1e6
        return metrics

    return run


def _run_rocketmq_store(case: Case, workdir: Path) -> Metrics:
    from bench.peers.rocketmq import store_bench

    p = case.params
    _preheat_for(workdir, p)
    args = ["append", str(workdir / "store"), str(p["count"]), str(p["body"]), str(p["batch"])]
    out = store_bench([*args, "plain"] if p["plain"] else args)
    keep = ("seconds", "msgs_per_s", "mb_per_s", "peak_rss_mb")  # peak RSS of the JVM
    return {k: out[k] for k in keep if k in out}


def build(ctx: Context) -> Benchmark:
    count = ctx.pick(2_000, 50_000, 1_000_000)
    cases = [
        Case(
            f"{_size_label(body)} {'single' if batch == 1 else f'batch {batch}'}",
            {"count": count, "body": body, "batch": batch, "plain": False},
        )
        for body in (100, 1024)
        for batch in (1, BATCH)
    ]
    # The bar: batched puts of bare 1 KiB bodies against the mapped-file copy.
    cases += [
        Case(
            f"{_size_label(body)} batch {BATCH}, bodies only",
            {"count": count, "body": body, "batch": BATCH, "plain": True},
        )
        for body in (100, 1024)
    ]
    # The two consume-queue forms side by side over a topic's queues (issue 18's bar: the
    # RocksDB form within 0.8x of the file form at 8 queues); peers have no queues.
    queue_cases = [
        Case(
            f"{_size_label(body)} batch {BATCH}, {QUEUES} queues",
            {"count": count, "body": body, "batch": BATCH, "plain": False, "queues": QUEUES},
        )
        for body in (100, 1024)
    ]
    base_labels = [case.label for case in cases]
    systems = [
        System(
            name,
            _run(name),
            role=ROLES.get(name, "peer"),
            note=SYSTEM_NOTES.get(name, ""),
            cases=None if name in RMQ_FORMS else base_labels,
        )
        for name in FACTORIES
    ]
    cases += queue_cases
    systems.append(
        System(
            "RocketMQ store",
            _run_rocketmq_store,
            role="peer",
            cases=base_labels,
            tags=frozenset({"java", "rocketmq"}),
            note="Apache RocketMQ 5.3.3 DefaultMessageStore in-process (bench/peers/java "
            "StoreBench): putMessage per message or putMessages per batch, async flush, "
            "fresh JVM per round (JIT warm-up included)",
        )
    )
    return Benchmark(
        name="append",
        title="append N messages from Python, async flush",
        description=(
            "Each system writes the same N messages (body, one of 4 tags, a unique key; or "
            "the body alone in the 'bodies only' cases) into a fresh directory; the clock "
            "covers the Python loop that a user would write, including building rmq.Message "
            "objects or key-value pairs; opening and closing are not timed. Before each timed "
            "write, bench/page_preheat.py gives every system the same memory state. MB/s "
            "counts body bytes."
        ),
        cases=cases,
        systems=systems,
        parameters={"messages": count, "batch": BATCH, "bodies": [100, 1024]},
        columns={"msgs_per_s": "msgs/s", "mb_per_s": "body MB/s", "peak_rss_mb": "peak RSS MB"},
    )
