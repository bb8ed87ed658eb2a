"""Blocks fetched ahead of a queue's readers leave the read cache as soon as every reader
of that queue has read past them, not when the cache is full (issue 19, format §7.4),
against a real S3-compatible server (versitygw on loopback): a lone reader's cache holds
little once it has read a queue through, and with two readers of one queue the one
ahead does not take from the cache what the one behind has still to read."""

from __future__ import annotations

from pathlib import Path

import rmq

from bench.peers.s3 import S3Server
from tests.support.tiered_store import tier_reads

SEGMENT = 8 << 20
BODY = 4096
RUN = 384  # messages per queue in a row


def body(queue: int, i: int) -> bytes:
    return f"{queue}:{i}:".encode().ljust(BODY, b"r")


def build(path: Path, server: S3Server, bucket: str, evicted: int) -> tuple[rmq.Store, int]:
    """Two queues written a run each in turn over ``evicted`` + 1 segments, the first
    ``evicted`` evicted; the store and the messages per queue."""
    store = rmq.Store(
        str(path),
        commitlog_segment_size=SEGMENT,
        tier_url=f"s3://{bucket}/shard-0",
        tier_endpoint=server.endpoint,
        local_retention_bytes=0,
    )
    store.create_topic("Two", 2)
    count = 0
    while store.commitlog_max_offset() < evicted * SEGMENT + (1 << 20):
        for queue in range(2):
            store.put_batch("Two", queue, [rmq.Message(body(queue, count + j)) for j in range(RUN)])
        count += RUN
    store.upload_to_tier()
    store.run_retention()
    status = store.tier_status()
    assert status is not None
    assert [s["state"] for s in status["segments"]][:evicted] == ["evicted"] * evicted
    return store, count


def test_a_lone_reader_leaves_little_in_the_cache_once_it_has_read_its_queue(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """One queue of two read through alone (about 24 MiB fetched, within the 64 MiB read
    cache, where everything fetched used to stay): every block fetched ahead of it left
    the cache once read, so the cache keeps a small part of what was fetched, and every
    record arrived intact."""
    store, count = build(tmp_path / "store", aws_env, s3_bucket, evicted=6)
    before = tier_reads(store)
    offset = 0
    while offset < count:
        batch = store.get("Two", 0, offset, 32)
        assert [m.body for m in batch] == [body(0, i) for i in range(offset, offset + len(batch))]
        offset += len(batch)
    after = tier_reads(store)
    spent = after["bytes_fetched"] - before["bytes_fetched"]
    assert spent > 20 << 20, after
    assert after["read_ahead_released_bytes"] > 0.8 * spent, (spent, after)
    assert after["cache_held_bytes"] < spent / 4, (spent, after)
    store.close()


def test_two_readers_of_one_queue_read_each_block_from_one_fetch(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """Two readers of one queue, starting together, one 256 records (1 MiB) ahead of the
    other: a block the first has read stays cached until the second has read it too, so
    the queue's records are fetched about once (dropped when the first had read them,
    the second would fetch them all again) and then leave the cache."""
    store, count = build(tmp_path / "store", aws_env, s3_bucket, evicted=4)
    before = tier_reads(store)

    def pull(offset: int) -> int:
        batch = store.get("Two", 0, offset, 32)
        assert [m.body for m in batch] == [body(0, i) for i in range(offset, offset + len(batch))]
        return offset + len(batch)

    behind = pull(0)
    ahead = pull(0)
    while behind < count:
        if ahead < count:
            ahead = pull(ahead)
        if ahead - behind >= 256 or ahead >= count:
            behind = pull(behind)
    after = tier_reads(store)
    spent = after["bytes_fetched"] - before["bytes_fetched"]
    assert spent < 1.2 * count * BODY, (spent, count * BODY, after)
    assert after["read_ahead_released_bytes"] > 0.8 * spent, (spent, after)
    store.close()
