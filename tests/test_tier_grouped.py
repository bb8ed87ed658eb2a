"""Queue-grouped segment objects (issue 19, format.md §7.1), against a real S3-compatible
server (versitygw on loopback): the uploader writes each sealed segment's records grouped
by queue with a CRC-checked footer mapping commit-log positions into the object, so a
reader of one queue of several fetches about its own records; every lookup goes through
the footer; a footer that does not hold fails reads of its object, never serves them; and
an object written before the grouped layout (no footer) still reads."""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path

import pytest
import rmq
from rmq.errors import TierObjectChangedError

from bench.peers.s3 import S3Server
from tests.support.tiered_store import open_tiered_store, tier_state

TOPIC = "Grouped"
QUEUES = 4
FIRST = f"{0:020d}"


def body(queue: int, i: int, size: int = 200) -> bytes:
    return f"{queue}:{i}:".encode().ljust(size, b"g")


def write_in_turn(store: rmq.Store, until: int, run: int, size: int = 200) -> dict[int, int]:
    """``QUEUES`` queues written ``run`` messages each in turn until the log passes
    ``until`` bytes, every message with key ``k<queue>-<i>``; the messages per queue."""
    store.create_topic(TOPIC, QUEUES)
    counts = dict.fromkeys(range(QUEUES), 0)
    while store.commitlog_max_offset() < until:
        for queue in range(QUEUES):
            for _ in range(run):
                i = counts[queue]
                store.put(TOPIC, body(queue, i, size), queue_id=queue, keys=[f"k{queue}-{i}"])
                counts[queue] += 1
    return counts


def parse_footer(obj: bytes) -> tuple[int, list[tuple[int, int, int]]]:
    """The footer as format.md §7.1 lays it out: (segment size, runs as (log position,
    object position, length)), every field checked."""
    segment_size, count, crc, version, magic = struct.unpack(">QIIII", obj[-24:])
    assert magic == 0x524D5147 and version == 1
    assert segment_size + 24 * count + 24 == len(obj)
    assert zlib.crc32(obj[segment_size:-12]) == crc
    runs = [
        struct.unpack(">QQQ", obj[at : at + 24]) for at in range(segment_size, len(obj) - 24, 24)
    ]
    return segment_size, runs


def test_an_uploaded_segment_is_its_records_grouped_by_queue_with_a_footer(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_tiered_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    write_in_turn(store, 3 * 64 * 1024, run=3)
    store.upload_to_tier()
    segment = (path / "commitlog" / FIRST).read_bytes()
    obj = aws_env.object_path(s3_bucket, f"shard-0/commitlog/{FIRST}").read_bytes()
    segment_size, runs = parse_footer(obj)
    assert segment_size == len(segment)
    # The runs cover the segment once, in log order, and put it back byte for byte.
    assert [log for log, _, _ in runs] == [0, *(log + n for log, _, n in runs[:-1])]
    rebuilt = bytearray(segment_size)
    for log, at, length in runs:
        rebuilt[log : log + length] = obj[at : at + length]
    assert bytes(rebuilt) == segment
    # In the object, each queue's records lie back to back, queues one after another
    # (in the order each first appears), the end-of-segment blank last.
    queues_in_object: list[int] = []
    at = 0
    while at < segment_size:
        size, magic = struct.unpack(">iI", obj[at : at + 8])
        if magic not in (0xDAA320A7, 0xDAA320AB):  # not a message: the blank's run, last
            break
        queue = struct.unpack(">i", obj[at + 12 : at + 16])[0]
        if not queues_in_object or queues_in_object[-1] != queue:
            queues_in_object.append(queue)
        at += size
    assert queues_in_object == list(range(QUEUES))
    assert at in (segment_size, max(a for _, a, _ in runs))
    # The state records the object's size and CRC32, and the segment's own size.
    recorded = tier_state(path)["segments"]["0"]
    assert recorded["size"] == len(obj) and recorded["segmentSize"] == segment_size
    assert recorded["crc32"] == zlib.crc32(obj)
    store.close()


def fetched(store: rmq.Store) -> tuple[int, int]:
    status = store.tier_status()
    assert status is not None
    return int(status["reads"]["bytes_fetched"]), int(status["reads"]["range_reads"])


def read_queue(store: rmq.Store, queue: int, count: int) -> list[rmq.Message]:
    """Queue ``queue`` from its start, 32 messages a pull, as a consumer reads it."""
    got: list[rmq.Message] = []
    while len(got) < count:
        batch = store.get(TOPIC, queue, len(got), 32)
        assert batch, f"queue {queue} stopped at {len(got)} of {count}"
        got.extend(batch)
    return got


def test_one_queue_of_four_fetches_about_its_own_records(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """Four queues written 8 messages each in turn: in the log a queue's records are a
    quarter of every span, so reading one fetched about four times its bytes; grouped,
    it fetches about its own bytes, and reading all four about each byte once."""
    segment = 8 << 20
    path = tmp_path / "store"
    store = open_tiered_store(
        path, aws_env, s3_bucket, local_retention_bytes=0, commitlog_segment_size=segment
    )
    counts = write_in_turn(store, 2 * segment + (1 << 20), run=8, size=4096)
    store.upload_to_tier()
    store.run_retention()
    status = store.tier_status()
    assert status is not None
    evicted = sum(s["size"] for s in status["segments"] if s["state"] == "evicted")
    assert evicted == 2 * segment
    store.close()

    def read(queues: list[int]) -> tuple[int, int, int]:
        """Reads ``queues`` whole in a fresh store: (bytes fetched, GETs, bytes of the
        evicted records read)."""
        reopened = rmq.Store(str(path))
        wanted = 0
        for queue in queues:
            got = read_queue(reopened, queue, counts[queue])
            assert [m.body for m in got] == [body(queue, i, 4096) for i in range(counts[queue])]
            wanted += sum(m.store_size for m in got if m.commitlog_offset < evicted)
        spent, gets = fetched(reopened)
        reopened.close()
        return spent, gets, wanted

    spent, gets, wanted = read([0])
    assert wanted > evicted // 5
    assert spent < 1.1 * wanted, (spent, wanted)
    assert gets <= 6, gets  # two footers and a large GET per segment, not one per batch
    spent, _, wanted = read(list(range(QUEUES)))
    assert spent < 1.1 * evicted, (spent, evicted)


def test_every_lookup_of_an_evicted_segment_goes_through_its_footer(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_tiered_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    counts = write_in_turn(store, 4 * 64 * 1024, run=5)
    results = {
        (m.queue_id, m.queue_offset): m
        for q in range(QUEUES)
        for m in store.get(TOPIC, q, 0, 10_000)
    }
    store.upload_to_tier()
    store.run_retention()
    store.close()
    store = rmq.Store(str(path))
    assert tier_state(path)["segments"]["0"]["local"] is False
    # A cold get_by_msg_id: the record's block, the footer read from its local copy
    # (written at upload).
    probe = results[(2, 7)]
    assert probe.commitlog_offset < 64 * 1024
    assert store.get_by_msg_id(probe.msg_id).body == body(2, 7)
    assert fetched(store)[1] == 1
    store.close()
    # Without the local copies (a store directory restored without them): the footer
    # from the bucket, then the record's block; the copy is written again.
    shutil.rmtree(path / "tier" / "footers")
    store = rmq.Store(str(path))
    assert store.get_by_msg_id(probe.msg_id).body == body(2, 7)
    assert fetched(store)[1] == 2
    assert (path / "tier" / "footers").is_dir()
    assert store.get_at(probe.commitlog_offset).body == body(2, 7)
    for queue in range(QUEUES):
        got = store.query_by_key(TOPIC, f"k{queue}-3")
        assert [m.body for m in got] == [body(queue, 3)]
        assert [m.body for m in read_queue(store, queue, counts[queue])] == [
            body(queue, i) for i in range(counts[queue])
        ]
        stamp = results[(queue, 4)].store_timestamp
        assert store.offset_for_time(TOPIC, queue, stamp) <= 4
    store.close()


def test_a_corrupt_or_truncated_footer_fails_reads_of_its_object(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_tiered_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    write_in_turn(store, 3 * 64 * 1024, run=3)
    first = store.get(TOPIC, 1, 0, 1)[0]
    store.upload_to_tier()
    store.run_retention()
    store.close()
    target = aws_env.object_path(s3_bucket, f"shard-0/commitlog/{FIRST}")
    whole = target.read_bytes()
    segment_size, _ = parse_footer(whole)

    # A run's object position changed in the footer (the object's size and recorded
    # CRC32 as before: only the footer's own CRC32 tells).
    damaged = bytearray(whole)
    damaged[segment_size + 8 + 7] ^= 0x10
    target.write_bytes(bytes(damaged))
    # The local copy of the footer (written at upload) still maps the object's records
    # right, and every record is CRC-checked as it is served.
    store = rmq.Store(str(path))
    assert store.get(TOPIC, 1, 0, 1)[0].body == first.body
    store.close()
    # The footer read from the bucket is checked: the copy is gone, as on a store
    # directory restored without it.
    shutil.rmtree(path / "tier" / "footers")
    store = rmq.Store(str(path))
    with pytest.raises(TierObjectChangedError, match="footer's CRC32"):
        store.get(TOPIC, 1, 0, 1)
    with pytest.raises(TierObjectChangedError, match="footer"):
        store.get_at(first.commitlog_offset)
    store.close()

    # Truncated into its footer: the object is no longer the one uploaded.
    target.write_bytes(whole[: segment_size + 10])
    store = rmq.Store(str(path))
    with pytest.raises(TierObjectChangedError, match="changed in the bucket"):
        store.get(TOPIC, 1, 0, 1)
    store.close()

    target.write_bytes(whole)
    store = rmq.Store(str(path))
    assert store.get(TOPIC, 1, 0, 1)[0].body == first.body
    store.close()


def test_an_object_uploaded_before_a_crash_kept_it_from_the_state_is_found_again(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """A crash between the upload and its record in the state: the grouped object made
    again from the same segment is the same, so the bucket's copy is confirmed by size
    and CRC32 and not sent twice, and it reads once evicted."""
    path = tmp_path / "store"
    store = open_tiered_store(path, aws_env, s3_bucket)
    counts = write_in_turn(store, 3 * 64 * 1024, run=3)
    uploaded = store.upload_to_tier()
    recorded = tier_state(path)["segments"]
    store.close()
    for state in (path / "tier").glob("state.json*"):
        state.unlink()
    store = open_tiered_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    assert store.upload_to_tier() == uploaded
    status = store.tier_status()
    assert status is not None
    assert status["upload"]["uploaded_bytes"] == 0
    assert tier_state(path)["segments"] == recorded
    store.run_retention()
    store.close()
    store = rmq.Store(str(path))
    assert tier_state(path)["segments"]["0"]["local"] is False
    for queue in range(QUEUES):
        got = read_queue(store, queue, counts[queue])
        assert [m.body for m in got] == [body(queue, i) for i in range(counts[queue])]
    store.close()


def test_an_object_uploaded_before_the_grouped_layout_still_reads(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """An object that is the segment byte for byte, recorded without a segment size (as
    stores wrote them before the grouped layout), reads as the segment itself."""
    path = tmp_path / "store"
    store = open_tiered_store(path, aws_env, s3_bucket)
    counts = write_in_turn(store, 3 * 64 * 1024, run=3)
    store.upload_to_tier()
    store.close()
    segment = (path / "commitlog" / FIRST).read_bytes()
    crc = zlib.crc32(segment)
    aws_env.client().put_object(
        Bucket=s3_bucket,
        Key=f"shard-0/commitlog/{FIRST}",
        Body=segment,
        Metadata={"rmq-crc32": f"{crc:08x}"},
    )
    state_path = path / "tier" / "state.json"
    state = json.loads(state_path.read_text())
    old = state["segments"]["0"]
    old.update(size=len(segment), crc32=crc)
    del old["segmentSize"]
    state_path.write_text(json.dumps(state))

    store = open_tiered_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    store.run_retention()
    assert tier_state(path)["segments"]["0"] == {**old, "local": False}
    for queue in range(QUEUES):
        got = read_queue(store, queue, counts[queue])
        assert [m.body for m in got] == [body(queue, i) for i in range(counts[queue])]
    store.close()
