"""Consume-queue files (file form) in the tier (issue 19, format §7.5), against a real
S3-compatible server (versitygw on loopback, bench/peers/s3.py): sealed queue
files whose entries all point into uploaded segments are uploaded and confirmed, their
local copies go when the segments' do, reads by queue offset work the same from the
bucket, a crash between upload and eviction leaves a consistent state, and a changed
object is detected by its checksum and never served as entries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import rmq
from rmq.errors import OffsetOutOfRangeError, TierObjectChangedError

from bench.peers.s3 import S3Server
from tests.support.cli import rmq_cli
from tests.support.tier_crash import kill_tiered_writers, read_both_queues_whole
from tests.support.tiered_store import open_store_with_small_queue_files as open_store
from tests.support.tiered_store import (
    read_queue,
    run_retention_hours_later,
    tier_state,
    upload_and_evict,
)


def fill(store: rmq.Store, count: int = 1500) -> None:
    for i in range(count):
        store.put("Orders", f"order {i} ".encode() * 6, queue_id=i % 2, keys=[f"order-{i}"])


def queue_files(path: Path, queue_id: int) -> list[str]:
    return sorted(p.name for p in (path / "consumequeue" / "Orders" / str(queue_id)).iterdir())


def queue_objects(server: S3Server, bucket: str) -> list[str]:
    listed = server.client().list_objects_v2(Bucket=bucket, Prefix="shard-0/consumequeue/")
    return sorted(o["Key"] for o in listed.get("Contents", []))


def assert_consistent(path: Path, settled: bool = True) -> None:
    """Every queue file the state counts as local is on disk; every evicted one is not,
    once retention ran (``settled``): a crash between recording an eviction and deleting
    the file leaves a copy the state no longer counts on, which the next retention
    deletes."""
    for key, file in tier_state(path)["consumeQueues"].items():
        exists = (path / "consumequeue" / key).exists()
        assert exists if file["local"] else (not exists or not settled), key


def test_evicted_queue_files_are_read_from_the_bucket(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    fill(store)
    before = {q: read_queue(store, q) for q in (0, 1)}
    assert [len(before[q]) for q in (0, 1)] == [750, 750]
    files_before = queue_files(path, 0)
    assert len(files_before) == 8

    store.upload_to_tier()
    uploaded = tier_state(path)["consumeQueues"]
    # Only sealed files whose entries all lie in uploaded segments: never a queue's last.
    assert uploaded and all(not key.endswith(files_before[-1]) for key in uploaded)
    assert queue_objects(aws_env, s3_bucket) == [f"shard-0/consumequeue/{k}" for k in uploaded]
    assert queue_files(path, 0) == files_before  # nothing evicted before retention runs

    store.run_retention()
    state = tier_state(path)["consumeQueues"]
    evicted = [key for key, file in state.items() if not file["local"]]
    assert evicted, state
    assert_consistent(path)
    assert len(queue_files(path, 0)) < len(files_before)
    # Evicted only as far as the segments: every entry of an evicted file points below
    # the first local segment.
    local_min = int(min(p.name for p in (path / "commitlog").iterdir()))
    assert all(state[key]["lastCommitlogEnd"] <= local_min for key in evicted)

    status = store.tier_status()
    assert status is not None
    assert {q["file"] for q in status["consume_queues"] if q["state"] == "evicted"} == set(evicted)
    for q in (0, 1):
        assert store.min_offset("Orders", q) == 0
        assert read_queue(store, q) == before[q]
        # A read in the middle of an evicted file.
        assert store.get("Orders", q, 150, 1)[0].body == before[q][150][1]
    assert store.offset_for_time("Orders", 0, 0) == 0
    store.close()

    # Reopened without being told: the queue starts at its oldest evicted file.
    reopened = rmq.Store(str(path))
    for q in (0, 1):
        assert reopened.min_offset("Orders", q) == 0
        assert read_queue(reopened, q) == before[q]
    assert reopened.verify().clean
    reopened.close()

    # `rmq tier status` counts the queue files apart from the segments.
    result = rmq_cli("tier", "status", str(path), "--json", env=aws_env.subprocess_env())
    (report,) = json.loads(result.stdout)["stores"]
    counted = report["tier"]["consume_queue_files"]
    assert counted["evicted"]["segments"] == len(evicted)
    text = rmq_cli("tier", "status", str(path), env=aws_env.subprocess_env()).stdout.decode()
    assert f"consume-queue files in the tier: {len(uploaded) - len(evicted)} uploaded" in text


def test_a_changed_queue_object_is_detected_and_not_served(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    fill(store)
    upload_and_evict(store)
    store.close()
    key = "Orders/0/" + f"{0:020d}"
    assert tier_state(path)["consumeQueues"][key]["local"] is False
    obj = aws_env.object_path(s3_bucket, f"shard-0/consumequeue/{key}")
    # The first two entries swapped: each still a well-formed entry pointing at a real
    # record, so only the checksum can tell.
    data = bytearray(obj.read_bytes())
    data[0:20], data[20:40] = data[20:40], data[0:20]
    obj.write_bytes(bytes(data))

    reopened = rmq.Store(str(path))  # no checked copy cached
    # Not the swapped entries' messages, and not "no messages" either.
    with pytest.raises(TierObjectChangedError, match="changed in the bucket") as raised:
        reopened.get("Orders", 0, 0, 5)
    assert raised.value.queue_offset == 0 and key in raised.value.object
    status = reopened.tier_status()
    assert status is not None
    failure = status["reads"]["queue_read_failure"]
    assert failure and "changed in the bucket" in failure and key in failure
    # The local files are unaffected.
    tail = reopened.get("Orders", 0, 700, 5)
    assert [m.queue_offset for m in tail] == list(range(700, 705))
    reopened.close()


def test_a_crash_between_upload_and_eviction_leaves_a_consistent_state(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket)
    fill(store)
    before = read_queue(store, 1)
    store.upload_to_tier()
    uploaded = tier_state(path)["consumeQueues"]
    assert uploaded
    store.close()

    # Died after the uploads, before recording them: found in the bucket by size and
    # CRC32, recorded without a second upload.
    (path / "tier" / "state.json").unlink()
    store = open_store(path, aws_env, s3_bucket)
    store.upload_to_tier()
    status = store.tier_status()
    assert status is not None and status["upload"]["uploaded_bytes"] == 0
    assert tier_state(path)["consumeQueues"] == uploaded
    store.close()

    # Died after deleting a file whose eviction the state had not recorded (the order is
    # the other way round, but a lost write of the state looks the same): read from the
    # bucket, and the state says so at the next open.
    first = "Orders/1/" + f"{0:020d}"
    (path / "consumequeue" / first).unlink()
    store = open_store(path, aws_env, s3_bucket)
    assert tier_state(path)["consumeQueues"][first]["local"] is False
    assert_consistent(path)
    assert read_queue(store, 1) == before
    store.close()


def test_sigkill_of_a_writer_moving_queue_files_loses_nothing(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    kill_tiered_writers(path, aws_env, s3_bucket, '{"consume_queue_entries_per_file": 100}')
    store = rmq.Store(str(path))
    assert_consistent(path, settled=False)
    state = tier_state(path)["consumeQueues"]
    assert any(not file["local"] for file in state.values()), "nothing was evicted"
    assert all(end >= 6000 for end in read_both_queues_whole(store))
    store.run_retention()
    assert_consistent(path)
    assert [read_queue(store, q)[:3] for q in (0, 1)] == [[(i, b"x" * 300) for i in range(3)]] * 2
    # Every recorded object is in the bucket.
    objects = set(queue_objects(aws_env, s3_bucket))
    assert {f"shard-0/consumequeue/{key}" for key in state} <= objects
    assert store.verify().clean
    store.close()


def test_queue_objects_expire_with_their_segments(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket, local_retention_bytes=0, tier_retention_hours=1)
    fill(store)
    upload_and_evict(store)
    assert queue_objects(aws_env, s3_bucket)
    report = run_retention_hours_later(store, 2)
    assert report.commitlog_min_offset > 0
    # Every queue file's records are gone from the log: objects and entries go too.
    assert queue_objects(aws_env, s3_bucket) == []
    assert tier_state(path)["consumeQueues"] == {}
    mins = [store.min_offset("Orders", q) for q in (0, 1)]
    for q in (0, 1):
        assert mins[q] > 0
        got = store.get("Orders", q, mins[q], 1)
        assert got[0].queue_offset == mins[q]
        assert got[0].commitlog_offset >= report.commitlog_min_offset
    store.close()
    reopened = rmq.Store(str(path))
    assert [reopened.min_offset("Orders", q) for q in (0, 1)] == mins
    reopened.close()


def test_a_queue_file_read_last_is_not_served_once_it_expired(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """A queue remembers the evicted file it read last (its next entries skip the state
    lookups); once tier retention expires that file, a read of its offsets fails as in a
    store that never read it, naming the range the store still holds, and a read from the
    new first offset gets the same messages as that store."""
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket, local_retention_bytes=0, tier_retention_hours=1)
    fill(store)
    upload_and_evict(store)
    first = store.get("Orders", 0, 0, 5)
    assert [m.queue_offset for m in first] == [0, 1, 2, 3, 4]
    report = run_retention_hours_later(store, 2)
    assert tier_state(path)["consumeQueues"] == {}
    new_min = store.min_offset("Orders", 0)
    assert new_min > 4
    with pytest.raises(OffsetOutOfRangeError) as expired:
        store.get("Orders", 0, 2, 5)
    after = [(m.queue_offset, m.body) for m in store.get("Orders", 0, new_min, 5)]
    store.close()
    fresh = rmq.Store(str(path))
    with pytest.raises(OffsetOutOfRangeError) as never_read:
        fresh.get("Orders", 0, 2, 5)
    assert str(expired.value) == str(never_read.value)
    assert f"[{new_min}," in str(expired.value)
    assert after == [(m.queue_offset, m.body) for m in fresh.get("Orders", 0, new_min, 5)]
    assert after[0][0] == new_min
    assert report.commitlog_min_offset > 0
    fresh.close()
