"""Write latency while retention deletes many segments, against the same workload with no
deletion, alternating in one run (issue 5's figure).

    python bench/retention_latency.py [--segments 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import rmq

BODY = b"x" * 1024


def measure(delete: bool, segments: int) -> tuple[float, float, int]:
    directory = Path(tempfile.mkdtemp(prefix="rmq-retention-"))
    store = rmq.Store(
        directory,
        commitlog_segment_size=1 << 20,
        delete_files_batch_max=10_000,
        delete_interval_ms=0,
        file_reserved_time_ms=3_600_000,
        index_slot_count=100_000,
        index_entry_count=400_000,
    )
    for _ in range(segments):
        store.put_batch("T", 0, [BODY] * 900)
    old = time.time() - 7200
    for path in sorted((directory / "commitlog").iterdir())[:-1]:
        os.utime(path, (old, old))
    latencies: list[float] = []
    stop = threading.Event()

    def write() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            store.put("T", BODY)
            latencies.append(time.perf_counter() - started)

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.3)
    deleted = len(store.run_retention().deleted) if delete else 0
    if not delete:
        time.sleep(1.0)
    stop.set()
    writer.join()
    store.close()
    latencies.sort()
    return (
        latencies[len(latencies) // 2] * 1e6,
        latencies[int(len(latencies) * 0.99)] * 1e6,
        deleted,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=300, help="1 MiB segments to delete")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[float]] = {"no deletion": [], "deletion": []}
    for round_number in range(args.rounds):
        for delete in (False, True):
            p50, p99, deleted = measure(delete, args.segments)
            name = "deletion" if delete else "no deletion"
            results[name].append(p99)
            print(f"round {round_number} {name}: p50 {p50:.0f} µs, p99 {p99:.0f} µs", end="")
            print(f", {deleted} segments deleted")
    base = statistics.median(results["no deletion"])
    during = statistics.median(results["deletion"])
    print(f"median p99: {during:.0f} µs during deletion vs {base:.0f} µs without", end="")
    print(f" ({during / base:.2f}x)")


if __name__ == "__main__":
    main()
