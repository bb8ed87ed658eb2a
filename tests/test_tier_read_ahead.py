"""Pulls of evicted records fetch what their queue names (issue 19, format §7.4), against
a real S3-compatible server (versitygw on loopback): a queue whose records lie far apart
in the log fetches little more than its own records, every record arrives intact, a
reader of all queues still fetches each byte about once, a pull's next records are
fetched while its caller works, and what all readers fetch ahead shares one bound."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import rmq

from bench.peers.s3 import S3Server
from tests.support.tiered_store import tier_reads

SEGMENT = 8 << 20
BODY = 4096
RUN = 384  # messages per queue in a row: 1.5 MiB, more than the 1 MiB gaps filled in


def body(queue: int, i: int) -> bytes:
    return f"{queue}:{i}:".encode().ljust(BODY, b"x")


def open_tiered(path: Path, server: S3Server, bucket: str, segment: int) -> rmq.Store:
    """A store of ``segment``-byte segments tiered to ``bucket``, keeping nothing sealed
    locally once uploaded."""
    return rmq.Store(
        str(path),
        commitlog_segment_size=segment,
        tier_url=f"s3://{bucket}/shard-0",
        tier_endpoint=server.endpoint,
        local_retention_bytes=0,
    )


def build(
    path: Path, server: S3Server, bucket: str, queues: int = 2, evicted: int = 2
) -> tuple[rmq.Store, dict[int, int]]:
    """``queues`` queues written a run of 1.5 MiB each in turn over ``evicted`` + 1
    segments, the first ``evicted`` evicted; returns the store and the messages per
    queue."""
    store = open_tiered(path, server, bucket, SEGMENT)
    store.create_topic("Spread", queues)
    counts = dict.fromkeys(range(queues), 0)
    while store.commitlog_max_offset() < evicted * SEGMENT + (1 << 20):
        for queue in range(queues):
            batch = [rmq.Message(body(queue, counts[queue] + j)) for j in range(RUN)]
            store.put_batch("Spread", queue, batch)
            counts[queue] += RUN
    store.upload_to_tier()  # what the background uploader has not done yet
    store.run_retention()
    status = store.tier_status()
    assert status is not None
    assert [s["state"] for s in status["segments"]][:evicted] == ["evicted"] * evicted
    return store, counts


def fetched(store: rmq.Store) -> int:
    status = store.tier_status()
    assert status is not None
    return int(status["reads"]["bytes_fetched"])


def evicted_bytes(store: rmq.Store) -> int:
    status = store.tier_status()
    assert status is not None
    return sum(s["size"] for s in status["segments"] if s["state"] == "evicted")


def upload_and_evict(store: rmq.Store) -> int:
    """Upload what the background uploader has not yet, evict it; the evicted bytes."""
    store.upload_to_tier()
    store.run_retention()
    return evicted_bytes(store)


def consume(store: rmq.Store, queues: list[int], topic: str = "Spread") -> dict[int, list[bytes]]:
    """Every queue from its start, 32 at a time, each in turn."""
    got: dict[int, list[bytes]] = {q: [] for q in queues}
    offsets = {q: store.min_offset(topic, q) for q in queues}
    ends = {q: store.max_offset(topic, q) for q in queues}
    while offsets:
        for q in list(offsets):
            batch = store.get(topic, q, offsets[q], 32)
            assert batch, f"queue {q} stopped at {offsets[q]} of {ends[q]}"
            got[q].extend(m.body for m in batch)
            offsets[q] = batch[-1].queue_offset + 1
            if offsets[q] >= ends[q]:
                del offsets[q]
    return got


def test_a_queue_far_apart_in_the_log_fetches_little_more_than_its_records(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    store, counts = build(tmp_path / "store", aws_env, s3_bucket)
    before = fetched(store)
    got = consume(store, [0])
    assert got[0] == [body(0, i) for i in range(counts[0])]
    spent = fetched(store) - before
    # Queue 0 holds about half of the evicted bytes; whole-span reads would fetch all.
    assert spent < 0.7 * evicted_bytes(store), (spent, evicted_bytes(store))
    store.close()


def test_reading_every_queue_in_turn_fetches_each_byte_about_once(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    store, counts = build(tmp_path / "store", aws_env, s3_bucket)
    before = fetched(store)
    got = consume(store, [0, 1])
    for q in (0, 1):
        assert got[q] == [body(q, i) for i in range(counts[q])]
    spent = fetched(store) - before
    assert spent < 1.3 * evicted_bytes(store), (spent, evicted_bytes(store))
    store.close()


def test_a_hint_larger_than_the_read_cache_is_fetched_within_it(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """One queue of 48 KiB messages: a pull's hint names about 96 MiB of records, more than
    the 64 MiB read cache. What is fetched ahead is capped at half the cache, so no fetched
    block is pushed out by the rest of its own hint before it is read: every byte is
    fetched about once, and every record arrives intact."""
    big = 48 << 10
    store = open_tiered(tmp_path / "store", aws_env, s3_bucket, 16 << 20)
    store.create_topic("Big", 1)

    def big_body(i: int) -> bytes:
        return f"big:{i}:".encode().ljust(big, b"y")

    count = 0
    while store.commitlog_max_offset() < 6 * (16 << 20) + (1 << 20):
        store.put_batch("Big", 0, [rmq.Message(big_body(count + j)) for j in range(64)])
        count += 64
    evicted = upload_and_evict(store)
    assert evicted >= 6 * (16 << 20)
    before = fetched(store)
    bodies = consume(store, [0], "Big")[0]
    assert bodies == [big_body(i) for i in range(count)]
    spent = fetched(store) - before
    assert spent < 1.2 * evicted, (spent, evicted)
    store.close()


def test_a_queue_whose_records_lie_back_to_back_is_read_in_large_gets(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """One queue of 1 KiB messages: its records fill the log, so a group of 1,024 entries
    spans only 1 MiB. Read-ahead is measured in bytes of the log and topped up half a span
    at a time, so the reader's GETs average more than 2 MiB (one per group made 1 MiB
    GETs), each byte is fetched about once, and every record arrives intact."""
    segment = 16 << 20
    store = open_tiered(tmp_path / "store", aws_env, s3_bucket, segment)
    store.create_topic("Packed", 1)

    def packed_body(i: int) -> bytes:
        return f"packed:{i}:".encode().ljust(1024, b"z")

    count = 0
    while store.commitlog_max_offset() < 3 * segment + (1 << 20):
        store.put_batch("Packed", 0, [rmq.Message(packed_body(count + j)) for j in range(128)])
        count += 128
    evicted = upload_and_evict(store)
    assert evicted >= 3 * segment
    before = tier_reads(store)
    bodies = consume(store, [0], "Packed")[0]
    assert bodies == [packed_body(i) for i in range(count)]
    after = tier_reads(store)
    gets = after["range_reads"] - before["range_reads"]
    spent = after["bytes_fetched"] - before["bytes_fetched"]
    assert spent < 1.2 * evicted, (spent, evicted)
    assert gets * (2 << 20) < evicted, (gets, evicted)
    store.close()


def test_a_pull_fetches_its_queues_next_records_in_the_background(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """The first pull of an evicted queue names the queue's next records to the tier and
    returns its batch without waiting for them: they are fetched in the background (being
    fetched or fetched, not read yet, when it returns), and the next pulls of them find
    every block cached, with no GET of their own."""
    store, _ = build(tmp_path / "store", aws_env, s3_bucket, queues=4, evicted=5)
    first = store.get("Spread", 0, 0, 32)
    assert [m.body for m in first] == [body(0, i) for i in range(32)]
    ahead = tier_reads(store)["read_ahead_bytes"]
    assert ahead >= 4 << 20, tier_reads(store)
    deadline = time.monotonic() + 60
    settled = tier_reads(store)
    while True:  # until the background GETs are done: all fetched, then a quiet second
        time.sleep(1.0)
        now = tier_reads(store)
        if now["bytes_fetched"] == settled["bytes_fetched"] and now["bytes_fetched"] >= ahead:
            break
        assert time.monotonic() < deadline, now
        settled = now
    offset = 32
    while offset < 1024:
        batch = store.get("Spread", 0, offset, 32)
        assert [m.body for m in batch] == [body(0, i) for i in range(offset, offset + 32)]
        offset += 32
    after = tier_reads(store)
    assert after["range_reads"] == settled["range_reads"], (settled, after)
    assert after["cache_hits"] > settled["cache_hits"]
    store.close()


def test_read_ahead_is_bounded_for_all_concurrent_readers_together(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """Four consumers at once, each of its own queue: each pull names about 16 MiB of its
    queue's next records (four groups of 1,024 4 KiB entries), 64 MiB together, as much as
    the whole read cache. What is fetched ahead and not read yet stays within one bound
    for all of them (half the cache), so no consumer's read-ahead pushes out another's
    before it is read: every record arrives intact, each byte fetched about once."""
    store, counts = build(tmp_path / "store", aws_env, s3_bucket, queues=4, evicted=5)
    per_queue = counts[0]
    evicted = evicted_bytes(store)
    assert evicted >= 5 * SEGMENT
    before = tier_reads(store)
    failures: list[BaseException] = []

    def consume_one(queue: int) -> None:
        try:
            got = consume(store, [queue])[queue]
            assert got == [body(queue, i) for i in range(per_queue)]
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=consume_one, args=(q,)) for q in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not failures, failures
    after = tier_reads(store)
    assert after["read_ahead_limit_bytes"] == 32 << 20  # half the 64 MiB read cache
    # Together they read well ahead (the span is shared among the queues being read, 7/8
    # of the bound, so how near the bound the peak comes depends on how the four overlap)
    # and never went past it.
    assert after["read_ahead_limit_bytes"] // 2 < after["read_ahead_peak_bytes"], after
    assert after["read_ahead_peak_bytes"] <= after["read_ahead_limit_bytes"], after
    assert after["read_ahead_evicted_unread_bytes"] < evicted // 10, after
    spent = after["bytes_fetched"] - before["bytes_fetched"]
    assert spent < 1.3 * evicted, (spent, evicted)
    store.close()


def test_a_lone_reader_of_one_queue_of_many_reads_ahead_its_share_in_large_gets(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """One queue of four (1 KiB messages, 128 to each in turn) read alone: its read-ahead
    is measured in its own records' bytes (what the tier fetches of a queue-grouped
    object), not in the bytes of the log they span, four times as many, so a reader alone
    takes most of the read-ahead bound and its GETs average more than 3 MiB (measured in
    log bytes, 6 MiB of its records were ahead, topped up 3 MiB at a time: 12 GETs of
    about 2 MiB here, now 7; a GET ends at its queue's run in a segment and at an 8 MiB
    chunk of the object, so 7 is about as few as three segments allow); what it
    fetched ahead stayed within the bound, none of it pushed out unread, each byte was
    fetched about once and every record arrives intact."""
    segment = 32 << 20
    store = open_tiered(tmp_path / "store", aws_env, s3_bucket, segment)
    store.create_topic("Four", 4)

    def four_body(queue: int, i: int) -> bytes:
        return f"four:{queue}:{i}:".encode().ljust(1024, b"f")

    counts = dict.fromkeys(range(4), 0)
    while store.commitlog_max_offset() < 3 * segment + (1 << 20):
        for queue in range(4):
            batch = [rmq.Message(four_body(queue, counts[queue] + j)) for j in range(128)]
            store.put_batch("Four", queue, batch)
            counts[queue] += 128
    evicted = upload_and_evict(store)
    assert evicted >= 3 * segment
    before = tier_reads(store)
    bodies = consume(store, [0], "Four")[0]
    assert bodies == [four_body(0, i) for i in range(counts[0])]
    after = tier_reads(store)
    gets = after["range_reads"] - before["range_reads"]
    spent = after["bytes_fetched"] - before["bytes_fetched"]
    # Its records in the evicted segments, about a quarter of them (and their headers).
    assert evicted / 4 < spent < 1.2 * evicted / 4, (spent, evicted)
    assert gets * (3 << 20) < spent, (gets, spent)
    assert after["read_ahead_peak_bytes"] > after["read_ahead_limit_bytes"] // 2, after
    assert after["read_ahead_peak_bytes"] <= after["read_ahead_limit_bytes"], after
    assert after["read_ahead_evicted_unread_bytes"] == 0, after
    store.close()
