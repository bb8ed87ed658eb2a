"""The embedded systems a Python user could pick instead of rmq, and the machine's limit.

Every system stores the same messages (body, one tag, one unique key) so that a queue can
be consumed in order and a message found by key:

- ``rmq``: ``rmq.Store`` (commit log, consume queue, key index), ``put`` / ``put_batch``.
- ``mmap limit``: the same number of bytes rmq's commit log grows by, pre-built (no
  encoding) and copied sequentially into a memory-mapped file; reads slice the mapping.
- ``rocksdb``, ``lmdb``, ``sqlite``: the key-value and SQL stores, in
  ``bench/embedded_peers.py``.

Writes are timed including whatever a user would do per message in Python (building an
``rmq.Message``, joining a value for a key-value store); the workload itself is built
before the clock starts.
"""

from __future__ import annotations

import mmap
import os
import time
from pathlib import Path
from typing import Any, Protocol

from bench.embedded_peers import LmdbSystem, RocksSystem, SqliteSystem
from bench.harness import NotMeasurable, rmq_store_class
from bench.workload import BATCH, TOPIC, Workload, rmq_record_size


class Embedded(Protocol):
    def write(self, wl: Workload, batch: int) -> None: ...
    def read_all(self, wl: Workload) -> int: ...
    def read_all_zero_copy(self, wl: Workload) -> int: ...
    def lookup(self, wl: Workload, keys: list[str]) -> int: ...
    def close(self) -> None: ...


# --------------------------------------------------------------------------- rmq


class RmqSystem:
    consume_queue_type = "file"

    def __init__(self, path: Path, wl: Workload) -> None:
        store_cls = rmq_store_class()
        segment = 1 << 30
        self.store = store_cls(
            str(path), commitlog_segment_size=segment, consume_queue_type=self.consume_queue_type
        )
        self.read_batch = 1024

    def write(self, wl: Workload, batch: int) -> None:
        store = self.store
        bodies = wl.ordered
        if wl.plain:
            if batch <= 1:
                for body in bodies:
                    store.put(TOPIC, body)
                return
            for start in range(0, wl.count, batch):
                store.put_batch(TOPIC, 0, bodies[start : start + batch])
            return
        if batch <= 1:
            put = store.put
            for i in range(wl.count):
                put(TOPIC, bodies[i], queue_id=0, tags=wl.tag(i), keys=wl.keys[i])
            return
        # A bulk writer's form: bodies with their tags and keys as columns, no
        # rmq.Message per message.
        put_batch = store.put_batch
        queues, tag, keys = wl.queues, wl.tag, wl.keys
        for start in range(0, wl.count, batch):
            end = min(wl.count, start + batch)
            put_batch(
                TOPIC,
                (start // batch) % queues,
                bodies[start:end],
                tags=[tag(i) for i in range(start, end)],
                keys=keys[start:end],
            )

    def read_all(self, wl: Workload) -> int:
        # A bulk reader's form: the bodies of many messages in one buffer, each handed
        # out as bytes, no rmq.Message per message (each body still touched, as the
        # key-value stores' cursors hand each value out).
        return self._scan(wl, zero_copy=False)

    def read_all_zero_copy(self, wl: Workload) -> int:
        # The same reads, each body handed out as a view of the mapped log (BodyView)
        # instead of a bytes copy.
        return self._scan(wl, zero_copy=True)

    def _scan(self, wl: Workload, *, zero_copy: bool) -> int:
        read_bodies = self.store.read_bodies
        offset = 0
        seen = 0
        while True:
            batch = read_bodies(TOPIC, 0, offset, self.read_batch)
            if not len(batch):
                break
            for body in batch.views() if zero_copy else batch:
                seen += len(body)
            offset = batch.next_offset
        if offset != wl.count:
            raise RuntimeError(f"rmq returned {offset} messages, expected {wl.count}")
        return seen

    def lookup(self, wl: Workload, keys: list[str]) -> int:
        query = getattr(self.store, "query_by_key", None)
        if query is None:
            raise NotMeasurable("rmq.Store has no query_by_key yet (lookups: issue 3)")
        found = 0
        for k in keys:
            found += len(query(TOPIC, k, max_count=1))
        return found

    def close(self) -> None:
        self.store.close()


# --------------------------------------------------------------------------- limit


class MmapLimit:
    """Sequential copies of pre-built bytes into a mapped file: what the machine can do."""

    def __init__(self, path: Path, wl: Workload) -> None:
        self.record, self.record_source = rmq_record_size(
            wl.body_size, str(path / "probe"), plain=wl.plain
        )
        self.size = self.record * wl.count
        self.path = path / "limit.bin"
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(self.fd, max(self.size, mmap.PAGESIZE))
        self.map = mmap.mmap(self.fd, max(self.size, mmap.PAGESIZE))
        pool = [(b * (self.record // len(b) + 1))[: self.record] for b in wl.bodies[:16]]
        self.records = pool
        self.chunks = [b"".join(pool[(j + i) % len(pool)] for i in range(BATCH)) for j in range(4)]
        self.positions: dict[str, int] = {}

    def write(self, wl: Workload, batch: int) -> None:
        mm = self.map
        rec = self.record
        if batch <= 1:
            pool = self.records
            n = len(pool)
            pos = 0
            for i in range(wl.count):
                mm[pos : pos + rec] = pool[i % n]
                pos += rec
            return
        chunks = self.chunks
        pos = 0
        full, rest = divmod(wl.count, batch)
        step = rec * batch
        for j in range(full):
            mm[pos : pos + step] = chunks[j & 3]
            pos += step
        if rest:
            mm[pos : pos + rec * rest] = chunks[0][: rec * rest]

    def read_all(self, wl: Workload) -> int:
        mm = self.map
        rec = self.record
        seen = 0
        pos = 0
        for _ in range(wl.count):
            seen += len(mm[pos : pos + rec])
            pos += rec
        return seen

    def read_all_zero_copy(self, wl: Workload) -> int:
        view = memoryview(self.map)
        rec = self.record
        seen = 0
        pos = 0
        try:
            for _ in range(wl.count):
                seen += len(view[pos : pos + rec])
                pos += rec
        finally:
            view.release()  # the map closes later: no view of it may remain
        return seen

    def index(self, wl: Workload) -> None:
        self.positions = {k: i * self.record for i, k in enumerate(wl.keys)}

    def lookup(self, wl: Workload, keys: list[str]) -> int:
        mm = self.map
        rec = self.record
        positions = self.positions
        found = 0
        for k in keys:
            pos = positions[k]
            found += len(mm[pos : pos + rec]) > 0
        return found

    def close(self) -> None:
        self.map.close()
        os.close(self.fd)


class RmqRocksDbSystem(RmqSystem):
    """rmq with the RocksDB consume queue: the same log, queue entries in RocksDB."""

    consume_queue_type = "rocksdb"


FACTORIES: dict[str, Any] = {
    "rmq": RmqSystem,
    "rmq RocksDB CQ": RmqRocksDbSystem,
    "mmap limit": MmapLimit,
    "rocksdb": RocksSystem,
    "lmdb": LmdbSystem,
    "sqlite": SqliteSystem,
}

ROLES = {"rmq": "rmq", "mmap limit": "limit"}


def timed(fn: Any, *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0
