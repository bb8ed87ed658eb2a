"""``read``: consume a whole queue in order, and look messages up by key at random."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from bench.embedded import FACTORIES, ROLES, timed
from bench.harness import Benchmark, Case, Context, Metrics, System
from bench.workload import BATCH, make

SYSTEM_NOTES = {
    "rmq": "read_bodies(topic, queue, offset, 1024) until the end, bytes per body "
    "(zero-copy: batch.views(), a BodyView of the mapped log per body, CRC still checked); "
    "query_by_key for lookups",
    "mmap limit": "one bytes slice of the mapping per message (zero-copy: a memoryview "
    "slice); lookups: a dict then a slice",
    "rocksdb": "iterator over the message range (zero-copy: none in rocksdict, the same "
    "bytes read); lookups: two point gets",
    "lmdb": "cursor over the message database (zero-copy: buffers=True, a view of the map "
    "per value); lookups: two gets in one read txn",
    "sqlite": "SELECT ... ORDER BY off, fetchmany(32) (zero-copy: none in sqlite3, the "
    "same bytes read); lookups: indexed SELECT by key",
}


def _run(name: str) -> Callable[[Case, Path], Metrics]:
    def run(case: Case, workdir: Path) -> Metrics:
        wl = make(case.params["count"], case.params["body"])
        system = FACTORIES[name](workdir, wl)
        try:
            system.write(wl, BATCH)  # not timed: the data to read
            if case.params["mode"] == "scan":
                seconds = timed(system.read_all, wl)
                n = wl.count
            elif case.params["mode"] == "scan-views":
                seconds = timed(system.read_all_zero_copy, wl)
                n = wl.count
            else:
                n = case.params["lookups"]
                keys = random.Random(n).choices(wl.keys, k=n)
                if hasattr(system, "index"):
                    system.index(wl)
                found = 0

                def go() -> None:
                    nonlocal found
                    found = system.lookup(wl, keys)

                seconds = timed(go)
                if found != n:
                    raise RuntimeError(f"{name} found {found} of {n} keys")
        finally:
            system.close()
        return {
            "seconds": seconds,
            "msgs_per_s": n / seconds,
            "mb_per_s": n * wl.body_size / seconds / 1e6,
            "us_per_msg": seconds / n * 1e6,
        }

    return run


def build(ctx: Context) -> Benchmark:
    count = ctx.pick(2_000, 50_000, 1_000_000)
    lookups = ctx.pick(500, 10_000, 100_000)
    cases = []
    for body in (100, 1024):
        label = "1 KiB" if body == 1024 else f"{body} B"
        cases.append(Case(f"{label} scan", {"count": count, "body": body, "mode": "scan"}))
        cases.append(
            Case(
                f"{label} scan, zero-copy",
                {"count": count, "body": body, "mode": "scan-views"},
            )
        )
    cases.append(
        Case("1 KiB by key", {"count": count, "body": 1024, "mode": "key", "lookups": lookups})
    )
    systems = [
        System(name, _run(name), role=ROLES.get(name, "peer"), note=SYSTEM_NOTES.get(name, ""))
        for name in FACTORIES
    ]
    return Benchmark(
        name="read",
        title="consume a queue in order; random lookups by key",
        description=(
            "Each system first stores N messages (batches of 128, not timed), then the clock "
            "covers reading every message back in queue order as bytes (scan), as each "
            "system's zero-copy view of its storage where it has one (scan, zero-copy: the "
            "reader takes len() of each), or finding random keys (by key). Data is in the "
            "page cache: this measures the read path, not the disk."
        ),
        cases=cases,
        systems=systems,
        parameters={
            "messages": count,
            "lookups": lookups,
            "rmq_read_batch": 1024,
            "sqlite_fetch": 32,
        },
        columns={"msgs_per_s": "msgs/s", "mb_per_s": "body MB/s", "us_per_msg": "µs/msg"},
    )
