"""A tiered store for the tier tests: small segments, so a few thousand messages seal
several, with its tier under ``s3://BUCKET/shard-0`` on a test S3 server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rmq
from rmq._rmqcore import SendResult
from rmq.client import Client
from rmq.cluster.local import LocalBroker

from bench.peers.s3 import S3Server

SEGMENT = 64 * 1024


def open_tiered_store(path: Path, server: S3Server, bucket: str, **options: Any) -> rmq.Store:
    """``rmq.Store(path)`` with 64 KiB segments (unless ``options`` say otherwise) tiered
    to ``bucket`` on ``server``; ``options`` as ``rmq.Store`` takes them."""
    options.setdefault("commitlog_segment_size", SEGMENT)
    return rmq.Store(
        str(path), tier_url=f"s3://{bucket}/shard-0", tier_endpoint=server.endpoint, **options
    )


# Small queue files, so a few thousand messages make several sealed ones per queue.
QUEUE_FILE_ENTRIES = 100


def open_store_with_small_queue_files(
    path: Path, server: S3Server, bucket: str, **options: Any
) -> rmq.Store:
    """``open_tiered_store`` with ``QUEUE_FILE_ENTRIES`` entries per consume-queue file, so
    that queue files seal, upload and go local too."""
    return open_tiered_store(
        path, server, bucket, consume_queue_entries_per_file=QUEUE_FILE_ENTRIES, **options
    )


def read_queue(store: rmq.Store, queue_id: int) -> list[tuple[int, bytes]]:
    """``(queue offset, body)`` of the first 10,000 messages of queue ``queue_id`` of
    ``Orders``, the topic the tier tests write."""
    return [(m.queue_offset, m.body) for m in store.get("Orders", queue_id, 0, 10_000)]


def tier_reads(store: rmq.Store) -> dict[str, Any]:
    """The ``reads`` part of ``store.tier_status()``: the tier read path's counters."""
    status = store.tier_status()
    assert status is not None
    return dict(status["reads"])


def tier_state(path: Path) -> dict[str, Any]:
    """The store's ``tier/state.json``."""
    state: dict[str, Any] = json.loads((path / "tier" / "state.json").read_text())
    return state


def upload_and_evict(store: rmq.Store) -> None:
    """Upload every sealed segment now, then run retention: a store opened with
    ``local_retention_bytes=0`` evicts their local copies."""
    store.upload_to_tier()
    store.run_retention()


def run_retention_hours_later(store: rmq.Store, hours: float) -> rmq.RetentionReport:
    """Retention as it will run ``hours`` from now (past a ``tier_retention_hours``)."""
    return store.run_retention(now_ms=int(time.time() * 1000) + int(hours * 3_600_000))


def wait_until_evicted(shard: Path, timeout: float = 30) -> None:
    """Waits until the broker's shard directory ``shard`` has uploaded and evicted its
    first commit-log segment (its tier state says so); fails the test after ``timeout``."""
    state_path = shard / "tier" / "state.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if state_path.exists():
            segments = json.loads(state_path.read_text())["segments"]
            if "0" in segments and not segments["0"]["local"]:
                return
        time.sleep(0.2)
    pytest.fail("the broker did not evict its first segment")


def tiered_broker_args(server: S3Server, bucket: str, prefix: str) -> list[str]:
    """``rmq serve`` arguments for a broker whose shards tier to ``s3://BUCKET/PREFIX`` on
    ``server`` with small segments and no local retention, so a sealed segment is
    uploaded and then evicted."""
    return ["--store-option", f"commitlog_segment_size={SEGMENT}",
            "--tier-url", f"s3://{bucket}/{prefix}", "--tier-endpoint", server.endpoint,
            "--local-retention-bytes", "0"]  # fmt: skip


# The prefix of the broker whose first segment is evicted (or lost), and that segment's object.
LOST_PREFIX = "b"
LOST_SEGMENT = f"{LOST_PREFIX}/shard-0/commitlog/{0:020d}"


@dataclass
class BrokerWithEvictedSegment:
    """A running tiered broker whose first commit-log segment was sent, uploaded and
    evicted (and, from ``broker_with_lost_segment``, deleted from the bucket): ``sent``
    says what each message became."""

    broker: LocalBroker
    client: Client
    sent: list[SendResult]
    env: dict[str, str]

    def kept(self) -> list[int]:
        """The indexes (in ``sent``) of the messages past the lost segment."""
        return [i for i, r in enumerate(self.sent) if r.commitlog_offset >= SEGMENT]


@contextmanager
def broker_with_evicted_segment(
    data: Path,
    server: S3Server,
    bucket: str,
    topic: str,
    queues: int,
    bodies: list[bytes],
) -> Iterator[BrokerWithEvictedSegment]:
    """``rmq serve`` on ``data`` tiered to ``s3://BUCKET/LOST_PREFIX`` (one shard, small
    segments, no local retention), ``bodies`` sent to ``topic``'s ``queues`` queues in
    turn, and its first segment (``LOST_SEGMENT``) uploaded and evicted: only the bucket
    holds it."""
    env = server.subprocess_env()
    args = tiered_broker_args(server, bucket, LOST_PREFIX)
    with LocalBroker(data, shards=1, args=args, env=env) as broker, Client(broker.endpoint) as c:
        c.create_topic(topic, queues=queues)
        with c.producer(batch_max_bytes=16384) as producer:
            futures = [
                producer.send(topic, body, queue_id=i % queues) for i, body in enumerate(bodies)
            ]
            producer.flush()
        sent = [future.result() for future in futures]
        wait_until_evicted(data / "shard-0")
        yield BrokerWithEvictedSegment(broker, c, sent, env)


@contextmanager
def broker_with_lost_segment(
    data: Path,
    server: S3Server,
    bucket: str,
    topic: str,
    queues: int,
    bodies: list[bytes],
) -> Iterator[BrokerWithEvictedSegment]:
    """``broker_with_evicted_segment``, then its first segment deleted from the bucket."""
    with broker_with_evicted_segment(data, server, bucket, topic, queues, bodies) as lost:
        server.client().delete_object(Bucket=bucket, Key=LOST_SEGMENT)
        yield lost
