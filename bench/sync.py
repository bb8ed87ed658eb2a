"""``sync``: K producer threads, 1 KiB messages, each put durable before it returns."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.harness import (
    Benchmark,
    Case,
    Context,
    Metrics,
    NotMeasurable,
    System,
    percentile,
    rmq_store_class,
)
from bench.workload import TAGS, TOPIC

BODY = 1024


def _drive(threads: int, seconds: float, op: Callable[[int, int], None]) -> Metrics:
    """Run ``op(thread, i)`` in K threads until the deadline; count and time every call."""
    latencies: list[list[float]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    start = threading.Barrier(threads + 1)
    deadline = 0.0

    def worker(t: int) -> None:
        lat = latencies[t]
        clock = time.perf_counter
        start.wait()
        i = 0
        try:
            while True:
                t0 = clock()
                if t0 >= deadline:
                    break
                op(t, i)
                lat.append(clock() - t0)
                i += 1
        except BaseException as exc:
            errors.append(exc)

    pool = [threading.Thread(target=worker, args=(t,), daemon=True) for t in range(threads)]
    for th in pool:
        th.start()
    began = time.perf_counter()
    deadline = began + seconds
    start.wait()
    for th in pool:
        th.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise errors[0]
    flat = sorted(x for lat in latencies for x in lat)
    n = len(flat)
    if n == 0:
        raise RuntimeError("no operation finished before the deadline")
    return {
        "messages": float(n),
        "seconds": elapsed,
        "msgs_per_s": n / elapsed,
        "mb_per_s": n * BODY / elapsed / 1e6,
        "p50_us": percentile(flat, 50) * 1e6,
        "p99_us": percentile(flat, 99) * 1e6,
    }


def _body() -> bytes:
    return os.urandom(BODY)


def _open_sync_store(path: Path) -> Any:
    store_cls = rmq_store_class()
    try:
        return store_cls(str(path), commitlog_segment_size=1 << 30, flush_disk_type="SYNC_FLUSH")
    except TypeError as exc:
        raise NotMeasurable(
            f"rmq.Store has no sync flush yet (flush_disk_type='SYNC_FLUSH' refused: {exc}); "
            "issue 4"
        ) from exc


def run_group_commit(case: Case, workdir: Path) -> Metrics:
    store = _open_sync_store(workdir / "store")
    body = _body()
    put = store.put
    try:

        def op(t: int, i: int) -> None:
            put(TOPIC, body, queue_id=t % 8, tags=TAGS[i & 3], keys=f"k-{t}-{i}")

        return _drive(case.params["threads"], case.params["seconds"], op)
    finally:
        store.close()


def run_flush_each(case: Case, workdir: Path) -> Metrics:
    store_cls = rmq_store_class()
    store = store_cls(str(workdir / "store"), commitlog_segment_size=1 << 30)
    body = _body()
    put, flush = store.put, store.flush
    try:

        def op(t: int, i: int) -> None:
            put(TOPIC, body, queue_id=t % 8, tags=TAGS[i & 3], keys=f"k-{t}-{i}")
            flush()

        return _drive(case.params["threads"], case.params["seconds"], op)
    finally:
        store.close()


def run_fdatasync(case: Case, workdir: Path) -> Metrics:
    fd = os.open(workdir / "raw.log", os.O_WRONLY | os.O_CREAT, 0o644)
    body = _body()
    lock = threading.Lock()
    position = [0]

    def op(t: int, i: int) -> None:
        with lock:
            pos = position[0]
            position[0] = pos + BODY
        os.pwrite(fd, body, pos)
        os.fdatasync(fd)

    try:
        return _drive(case.params["threads"], case.params["seconds"], op)
    finally:
        os.close(fd)


def build(ctx: Context) -> Benchmark:
    seconds = ctx.pick(0.3, 2.0, 10.0)
    cases = [
        Case(f"{k} thread{'s' if k > 1 else ''}", {"threads": k, "seconds": seconds})
        for k in (1, 8, 64)
    ]
    return Benchmark(
        name="sync",
        title="sync flush: K producer threads, 1 KiB",
        description=(
            "K Python threads put 1 KiB messages for a fixed time; each put returns only when "
            "durable. rmq with SYNC_FLUSH (group commit) against the same store calling "
            "flush() after every put, and against the disk's own rate of pwrite + fdatasync "
            "of 1 KiB from K threads."
        ),
        cases=cases,
        systems=[
            System(
                "rmq group commit",
                run_group_commit,
                role="rmq",
                note="flush_disk_type='SYNC_FLUSH'; put returns once its bytes are durable",
            ),
            System(
                "rmq flush per put",
                run_flush_each,
                role="baseline",
                note="default (async) store, store.flush() after every put",
            ),
            System(
                "fdatasync limit",
                run_fdatasync,
                role="limit",
                note="pwrite 1 KiB + fdatasync per message on one file, K threads",
            ),
        ],
        parameters={"body": BODY, "seconds_per_round": seconds, "threads": [1, 8, 64]},
        columns={
            "msgs_per_s": "msgs/s",
            "mb_per_s": "MB/s",
            "p50_us": "p50 µs",
            "p99_us": "p99 µs",
        },
    )
