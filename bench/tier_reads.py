"""``tier`` benchmark's read cases: sequential consume and query_by_key against a store,
counting what its tier fetched."""

from __future__ import annotations

import array
import random
import time
from typing import Any

from bench.harness import (
    Metrics,
    percentile,
)
from bench.tier_fixture import (
    CONSUME_BATCH,
    Fixture,
    key_of,
)
from bench.workload import TOPIC


def reads_of(store: Any) -> dict[str, int]:
    status = store.tier_status()
    if status is None:
        return {"range_reads": 0, "bytes_fetched": 0, "cache_hits": 0}
    return {k: int(status["reads"][k]) for k in ("range_reads", "bytes_fetched", "cache_hits")}


def consume(store: Any, queues: list[int]) -> Metrics:
    """Read ``queues`` from their first offsets to their ends, a batch of 32 from each in
    turn (one queue: a plain sequential read of it)."""
    ends = {q: store.max_offset(TOPIC, q) for q in queues}
    offsets = {q: store.min_offset(TOPIC, q) for q in queues}
    before = reads_of(store)
    count = 0
    body_bytes = 0
    t0 = time.perf_counter()
    while offsets:
        for q in list(offsets):
            got = store.get(TOPIC, q, offsets[q], CONSUME_BATCH)
            if not got:
                raise RuntimeError(f"get returned nothing at offset {offsets[q]} of {ends[q]}")
            count += len(got)
            for m in got:
                body_bytes += len(m.body)
            offsets[q] = got[-1].queue_offset + 1
            if offsets[q] >= ends[q]:
                del offsets[q]
    seconds = time.perf_counter() - t0
    after = reads_of(store)
    fetched = after["bytes_fetched"] - before["bytes_fetched"]
    return {
        "per_s": count / seconds,
        "msgs_per_s": count / seconds,
        "body_mb_per_s": body_bytes / seconds / 1e6,
        "messages": count,
        "seconds": seconds,
        "range_reads": after["range_reads"] - before["range_reads"],
        "fetched_per_body_byte": fetched / body_bytes if body_bytes else 0.0,
    }


def query(store: Any, fixture: Fixture, queries: int, seed: int, window: bool) -> Metrics:
    """``queries`` lookups of random keys of messages in evicted segments. ``window``: with
    ``begin`` = ``end`` = the message's store time and ``max_count=1`` (the index files
    whose time span holds it); else over all time with the default ``max_count``."""
    old = int(fixture.info["old_messages"])
    rng = random.Random(seed)
    picks = [rng.randrange(old) for _ in range(queries)]
    stamps = array.array("q")
    if window:
        with (fixture.root / "timestamps.bin").open("rb") as f:
            stamps.frombytes(f.read())

    def lookup(i: int) -> list[Any]:
        if window:
            return store.query_by_key(TOPIC, key_of(i), begin=stamps[i], end=stamps[i], max_count=1)
        return store.query_by_key(TOPIC, key_of(i))

    # One unmeasured query: the first call pays for opening the index files.
    lookup(picks[0])
    latencies: list[float] = []
    reads: list[int] = []
    for i in picks:
        before = reads_of(store)["range_reads"]
        t0 = time.perf_counter()
        found = lookup(i)
        latencies.append(time.perf_counter() - t0)
        reads.append(reads_of(store)["range_reads"] - before)
        if len(found) != 1 or found[0].keys != [key_of(i)]:
            raise RuntimeError(f"query_by_key({key_of(i)!r}) found {len(found)} messages")
    latencies.sort()
    reads.sort()
    p99 = percentile(latencies, 99)
    return {
        "per_s": 1.0 / p99,
        "p50_ms": percentile(latencies, 50) * 1e3,
        "p99_ms": p99 * 1e3,
        "range_reads_mean": sum(reads) / len(reads),
        "range_reads_p99": percentile(reads, 99),
        "range_reads_max": float(reads[-1]),
        "queries": float(queries),
    }
