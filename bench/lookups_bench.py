"""Key lookup latency from Python: rmq's index with chained files, the same data with
compacted files, and RocksDB point reads of the same keys, measured in one run.

    python -m bench.lookups_bench                       # 3,000,000 keys
    python -m bench.lookups_bench --messages 300000     # quick

One message per key (``key-<n>``, a 100-byte body) in topic ``Lookup``. Store A keeps its
sealed index files chained (compaction paused); store B is a copy of A whose sealed files
are compacted; RocksDB maps ``Lookup#key-<n>`` to the same body. The index geometry keeps
RocketMQ's ratio (4 entries per slot) with files small enough that the data fills
several of them, so both forms are exercised. Every system answers the same random keys;
rounds alternate the order of the systems; the report gives per-round p50/p99 and the
median over rounds. Figures are for a warm page cache (the data fits in memory).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import rmq

TOPIC = "Lookup"


def build_store(path: Path, messages: int, body: bytes, slots: int, entries: int) -> rmq.Store:
    store = rmq.Store(
        path,
        index_slot_count=slots,
        index_entry_count=entries,
        commitlog_segment_size=256 * 1024 * 1024,
    )
    store._pause_index_compaction(True)
    batch = 128
    for start in range(0, messages, batch):
        numbers = range(start, min(start + batch, messages))
        items = [rmq.Message(body, keys=[f"key-{n}"]) for n in numbers]
        store.put_batch(TOPIC, (start // batch) % 4, items)
    store.flush()
    return store


def build_rocksdb(path: Path, messages: int, body: bytes) -> Any:
    from rocksdict import Options, Rdict, WriteBatch

    database = Rdict(str(path), Options(raw_mode=True))
    for start in range(0, messages, 10_000):
        batch = WriteBatch(raw_mode=True)
        for n in range(start, min(start + 10_000, messages)):
            batch.put(f"{TOPIC}#key-{n}".encode(), body)
        database.write(batch)
    database.flush()
    return database


def percentile(sorted_values: list[float], fraction: float) -> float:
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


def measure(lookup: Any, keys: list[str]) -> dict[str, float]:
    latencies = []
    for key in keys:
        started = time.perf_counter_ns()
        found = lookup(key)
        latencies.append((time.perf_counter_ns() - started) / 1000)
        if not found:
            raise AssertionError(f"{key} not found")
    latencies.sort()
    return {
        "p50_us": percentile(latencies, 0.50),
        "p99_us": percentile(latencies, 0.99),
        "mean_us": statistics.fmean(latencies),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=3_000_000)
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=4, help="index files the keys fill")
    parser.add_argument("--work", type=Path, default=Path("bench/.work/lookups"))
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    entries = args.messages // args.files + 1
    slots = max(1, entries // 4)
    body = bytes(range(100))
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)

    started = time.perf_counter()
    chained = build_store(args.work / "chained", args.messages, body, slots, entries)
    write_seconds = time.perf_counter() - started
    # Store B: the same files, then its sealed index files compacted.
    copy = ["cp", "-a", "--sparse=always", str(args.work / "chained"), str(args.work / "compacted")]
    subprocess.run(copy, check=True)
    compacted = rmq.Store(
        args.work / "compacted", index_slot_count=slots, index_entry_count=entries
    )
    started = time.perf_counter()
    if not compacted._wait_index_compaction(600):
        raise SystemExit("compaction did not finish")
    compaction_seconds = time.perf_counter() - started
    started = time.perf_counter()
    database = build_rocksdb(args.work / "rocksdb", args.messages, body)
    rocksdb_write_seconds = time.perf_counter() - started

    files_a, files_b = chained._index_files(), compacted._index_files()
    assert sum(1 for f in files_a if f[2] and not f[3]) >= 2, files_a
    assert sum(1 for f in files_b if f[3]) == sum(1 for f in files_a if f[2]), files_b

    def query(store: rmq.Store) -> Any:
        return lambda key: store.query_by_key(TOPIC, key)

    systems = {
        "rmq chained": query(chained),
        "rmq compacted": query(compacted),
        "rocksdb get": lambda key: database[f"{TOPIC}#{key}".encode()],
    }
    generator = random.Random(1)
    rounds: list[dict[str, dict[str, float]]] = []
    names = list(systems)
    for round_number in range(args.rounds):
        keys = [f"key-{generator.randrange(args.messages)}" for _ in range(args.queries)]
        for name in names:  # warm-up, not measured
            measure(systems[name], keys[: min(2000, len(keys))])
        order = names[round_number % len(names) :] + names[: round_number % len(names)]
        results = {name: measure(systems[name], keys) for name in order}
        rounds.append(results)
        line = "  ".join(
            f"{name}: p50 {r['p50_us']:.1f} p99 {r['p99_us']:.1f}" for name, r in results.items()
        )
        print(f"round {round_number + 1}: {line} (us)", file=sys.stderr)

    summary = {
        name: {
            metric: statistics.median(r[name][metric] for r in rounds)
            for metric in ("p50_us", "p99_us", "mean_us")
        }
        for name in names
    }
    print(f"\n{args.messages:,} keys, {len(files_a)} index files", end=" ")
    print(f"({slots:,} slots, {entries:,} entries each)")
    print(f"write: rmq {write_seconds:.1f} s, rocksdb {rocksdb_write_seconds:.1f} s;", end=" ")
    print(f"compaction {compaction_seconds:.1f} s")
    print(f"{args.queries:,} random keys x {args.rounds} rounds, medians over rounds (us):\n")
    print("| system | p50 | p99 | mean |\n|---|---|---|---|")
    for name, figures in summary.items():
        p50, p99, mean = figures["p50_us"], figures["p99_us"], figures["mean_us"]
        print(f"| {name} | {p50:.1f} | {p99:.1f} | {mean:.1f} |")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "messages": args.messages,
                    "slots": slots,
                    "entries": entries,
                    "index_files": len(files_a),
                    "write_seconds": write_seconds,
                    "rocksdb_write_seconds": rocksdb_write_seconds,
                    "compaction_seconds": compaction_seconds,
                    "rounds": rounds,
                    "median": summary,
                },
                indent=2,
            )
        )
    chained.close()
    compacted.close()
    database.close()
    shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
