"""The engine limit of ``bench grpc``: the same messages appended to, and read from, one
``rmq.Store`` embedded in the bench process, with no network and no broker in between.

Issue 20 asks the broker to deliver at least 0.4 of what its engine appends batched in
the same run; this system is that reference. It writes what the gRPC case sends: bodies
of the case's size, a tag (of four) and one key each, over 8 queues, in batches of 128
(one ``put_batch`` per batch, so one queue per batch, as the rmq producer batches per
queue), async flush. One store on one thread: a shard's engine, not the whole broker."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.basics import DEFAULT_WORK
from bench.grpc_systems import QUEUES
from bench.harness import Case, Metrics, rmq_store_class
from bench.workload import TAGS

READ_BATCH = 1024
_topics = itertools.count()


class EngineLimit:
    """One store per round, opened before the cases as the broker's shards are (its
    first segment and index file already made), with a new topic per case, as the broker
    cases have; removed after the round."""

    def __init__(self) -> None:
        self.home: Path | None = None
        self.store: Any = None

    def setup(self) -> None:
        store_class = rmq_store_class()  # NotMeasurable, saying why, if rmq does not import
        DEFAULT_WORK.mkdir(parents=True, exist_ok=True)
        self.home = Path(tempfile.mkdtemp(prefix="rmq-engine-", dir=DEFAULT_WORK))
        self.store = store_class(str(self.home / "store"))

    def teardown(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    def run(self, case: Case, workdir: Path) -> Metrics:
        count, size, batch = case.params["count"], case.params["body"], case.params["batch"]
        topic = f"engine_{size}_{next(_topics)}"
        self.store.create_topic(topic, queues=QUEUES)  # as the broker cases do, unclocked
        produced = _append(self.store, topic, count, os.urandom(size), batch)
        if case.params["phase"] == "produce":
            return produced
        return _read(self.store, topic, count, size)


def _append(store: Any, topic: str, count: int, body: bytes, batch: int) -> Metrics:
    put_batch = store.put_batch
    bodies = [body] * batch
    keys = [[f"order-{i:09d}"] for i in range(count)]
    tags = [TAGS[i & 3] for i in range(count)]
    t0 = time.perf_counter()
    for start in range(0, count, batch):
        end = min(count, start + batch)
        put_batch(
            topic,
            (start // batch) % QUEUES,
            bodies[: end - start],
            tags=tags[start:end],
            keys=keys[start:end],
        )
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "msgs_per_s": count / seconds,
        "mb_per_s": count * len(body) / seconds / 1e6,
    }


def _read(store: Any, topic: str, count: int, size: int) -> Metrics:
    read_bodies = store.read_bodies
    seen = touched = 0
    t0 = time.perf_counter()
    for queue in range(QUEUES):
        offset = 0
        while True:
            got = read_bodies(topic, queue, offset, READ_BATCH)
            if not len(got):
                break
            seen += len(got)
            for body in got:  # each body handed out, as the consumer hands each message
                touched += len(body)
            offset = got.next_offset
    seconds = time.perf_counter() - t0
    if seen != count or touched != count * size:
        raise RuntimeError(f"the engine read {seen} messages, expected {count}")
    return {
        "seconds": seconds,
        "msgs_per_s": count / seconds,
        "mb_per_s": count * size / seconds / 1e6,
    }
