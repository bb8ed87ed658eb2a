"""The object-storage tier (issue 19) against a real S3-compatible server (versitygw on
loopback, bench/peers/s3.py): sealed segments are uploaded and confirmed, local
copies are evicted only after that, every read works the same from the bucket, the
server being down, frozen or answering errors touches neither appends nor local reads
(and uploads resume by themselves), a crash never makes a segment
upload twice or vanish, damage in the bucket is reported and never served, and tier
retention removes what expired.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import rmq
from rmq.errors import (
    CorruptRecordError,
    OffsetOutOfRangeError,
    TierError,
    TierObjectChangedError,
)

from bench.peers.s3 import S3Server
from tests.support.tier_crash import (
    MESSAGES_PER_ROUND,
    ROUNDS,
    kill_tiered_writers,
    read_both_queues_whole,
)
from tests.support.tiered_store import (
    SEGMENT,
    run_retention_hours_later,
    tier_state,
    upload_and_evict,
)
from tests.support.tiered_store import open_tiered_store as open_store


def fill(store: rmq.Store, count: int = 1500, start: int = 0) -> list[rmq.PutResult]:
    return [
        store.put(
            "Orders",
            f"order {i} ".encode() * 6,
            queue_id=i % 2,
            tags=f"t{i % 3}",
            keys=[f"order-{i}"],
        )
        for i in range(start, start + count)
    ]


def states(store: rmq.Store) -> list[str]:
    status = store.tier_status()
    assert status is not None
    return [segment["state"] for segment in status["segments"]]


def local_segments(path: Path) -> list[str]:
    return sorted(p.name for p in (path / "commitlog").iterdir())


def test_evicted_segments_are_read_from_the_bucket_by_every_lookup(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    results = fill(store)
    expected = {(r.queue_offset, i % 2): f"order {i} ".encode() * 6 for i, r in enumerate(results)}
    assert store.upload_to_tier() >= 4
    report = store.run_retention()
    assert len(report.evicted) >= 4 and report.deleted == []
    assert states(store)[-1] == "active" and set(states(store)[:-1]) == {"evicted"}
    assert len(local_segments(path)) == 1
    objects = aws_env.client().list_objects_v2(Bucket=s3_bucket)["Contents"]
    assert {o["Key"].rsplit("/", 1)[0] for o in objects} == {"shard-0/commitlog"}

    assert store.commitlog_min_offset() == 0
    for queue_id in (0, 1):
        got = store.get("Orders", queue_id, 0, 1000)
        assert [(m.queue_offset, m.body) for m in got] == [
            (offset, body) for (offset, q), body in sorted(expected.items()) if q == queue_id
        ]
    assert [m.body for m in store.query_by_key("Orders", "order-3")] == [b"order 3 " * 6]
    first = results[0]
    assert store.get_by_msg_id(first.msg_id).body == b"order 0 " * 6
    assert store.get_at(first.commitlog_offset).keys == ["order-0"]
    assert store.offset_for_time("Orders", 0, 0) == 0
    store.close()

    # Reopened without being told: the store's state names its tier.
    reopened = rmq.Store(str(path))
    assert reopened.get("Orders", 1, 0, 1)[0].body == b"order 1 " * 6
    assert reopened.verify().clean
    reopened.close()


def test_a_server_that_is_down_stops_only_the_uploads(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    aws_env.stop()
    try:
        fill(store)
        with pytest.raises(TierError, match=r"could not be reached|refused") as down:
            store.upload_to_tier()
        assert down.value.unreachable
        status = store.tier_status()
        assert status is not None
        assert status["upload"]["failing"] and status["upload"]["failed_attempts"] >= 1
        assert "pending" in states(store)
        # Nothing that is not uploaded goes, whatever retention says.
        report = store.run_retention()
        assert report.evicted == [] and report.deleted == []
        assert len(local_segments(path)) >= 5
        assert len(store.get("Orders", 0, 0, 1000)) == 750
    finally:
        aws_env.start()
    # The uploader resumes by itself (every second, after its retry pause).
    deadline = time.monotonic() + 30
    while "pending" in states(store) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "pending" not in states(store)
    status = store.tier_status()
    assert status is not None and status["upload"]["failing"] is None
    store.close()


def test_open_refuses_wrong_credentials_and_a_missing_bucket(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(TierError, match="bucket does not exist"):
        open_store(tmp_path / "a", aws_env, "no-such-bucket-here")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-key-0000000000")
    with pytest.raises(TierError, match=r"secret key is wrong|access"):
        open_store(tmp_path / "b", aws_env, s3_bucket)
    with pytest.raises(rmq.errors.InvalidArgumentError, match="tier_url"):
        rmq.Store(str(tmp_path / "c"), tier_url="http://not-s3/x")
    with pytest.raises(rmq.errors.InvalidArgumentError, match="only applies"):
        rmq.Store(str(tmp_path / "d"), local_retention_bytes=0)


def test_open_goes_on_when_the_server_cannot_be_reached(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """Unreachable is not refused: the store opens on its local data and its status
    says why uploads wait (told from the HTTP client's error kind, not its wording)."""
    aws_env.stop()
    try:
        store = open_store(tmp_path / "store", aws_env, s3_bucket)
        store.put("Orders", b"kept locally", queue_id=0)
        status = store.tier_status()
        assert status is not None and status["upload"]["failing"], status["upload"]
        failing = status["upload"]["failing"]
        assert "could not be reached" in failing or "refused" in failing, failing
        assert store.get("Orders", 0, 0, 1)[0].body == b"kept locally"
        store.close()
    finally:
        aws_env.start()


def test_a_changed_or_truncated_object_is_reported_never_served(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    results = fill(store)
    upload_and_evict(store)
    obj = aws_env.object_path(s3_bucket, "shard-0/commitlog/00000000000000000000")
    # A flipped byte inside the first message's body: its CRC no longer matches.
    data = bytearray(obj.read_bytes())
    body_at = data.index(b"order 0 " * 6)
    data[body_at + 3] ^= 0xFF
    obj.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match="s3://") as raised:
        store.get("Orders", 0, 0, 1)
    assert "shard-0/commitlog/00000000000000000000" in raised.value.file
    store.close()

    # Truncated: a later block of the object is short (a fresh store: no cached blocks).
    with obj.open("r+b") as f:
        f.truncate(SEGMENT // 2)
    reopened = rmq.Store(str(path))
    late = next(r for r in results if r.commitlog_offset > SEGMENT // 2 + 1000)
    # The GET answers with the object's size, which is no longer the one uploaded.
    with pytest.raises(TierObjectChangedError, match="changed in the bucket"):
        reopened.get_at(late.commitlog_offset)
    reopened.close()


def test_tier_retention_removes_expired_segments_from_the_bucket_and_the_store(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket, local_retention_bytes=0, tier_retention_hours=1)
    fill(store)
    upload_and_evict(store)
    assert store.commitlog_min_offset() == 0
    report = run_retention_hours_later(store, 2)
    assert len(report.deleted) >= 4
    assert all("tier retention 1 h" in reason for _, _, reason in report.deleted)
    assert report.commitlog_min_offset > 0
    assert store.min_offset("Orders", 0) > 0
    with pytest.raises(OffsetOutOfRangeError):
        store.get_at(0)
    listed = aws_env.client().list_objects_v2(Bucket=s3_bucket).get("Contents", [])
    assert listed == []
    # The local copies of the expired objects' footers went with them.
    assert list((path / "tier" / "footers").iterdir()) == []
    status = store.tier_status()
    assert status is not None
    assert [s["state"] for s in status["segments"]] == ["active"]
    store.close()


def test_sigkill_during_uploads_and_evictions_loses_nothing_and_uploads_nothing_twice(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    kill_tiered_writers(path, aws_env, s3_bucket)
    store = rmq.Store(str(path))
    # Every message the killed processes stored is readable, evicted or not.
    assert sum(read_both_queues_whole(store)) >= ROUNDS * MESSAGES_PER_ROUND
    status = store.tier_status()
    assert status is not None
    before = status["upload"]["uploaded_segments"]
    store.upload_to_tier()
    evicted = [s for s in status["segments"] if s["state"] == "evicted"]
    assert evicted, "the crash loop evicted nothing"
    # Segments a killed process uploaded are found in the bucket, not uploaded again:
    # only segments sealed after the last recorded upload may go now. (Counted in
    # segments: the bytes sent also hold each object's footer and the consume-queue and
    # index files that go with a pending segment.)
    after = store.tier_status()
    assert after is not None
    pending_before = [s for s in status["segments"] if s["state"] == "pending"]
    assert after["upload"]["uploaded_segments"] - before <= len(pending_before)
    assert store.verify().clean
    store.close()


def test_a_segment_uploaded_before_a_crash_is_recognised_not_uploaded_again(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket)
    fill(store)
    uploaded = store.upload_to_tier()
    assert uploaded >= 4
    store.close()
    # As if the process died after the uploads, before recording them.
    (path / "tier" / "state.json").unlink()
    for backup in (path / "tier").glob("state.json*"):
        backup.unlink()
    store = open_store(path, aws_env, s3_bucket)
    assert store.upload_to_tier() == uploaded
    status = store.tier_status()
    assert status is not None
    assert status["upload"]["uploaded_bytes"] == 0  # found in the bucket, not sent again
    store.close()


def test_a_pass_that_fails_records_only_the_segments_before_the_failure_and_resends_none(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    # Segments go up two at a time (here and in the background uploader, one pass at a
    # time); the first one's object cannot be written (a directory holds its place on the
    # server's disk), the second's can.
    path = tmp_path / "store"
    blocked = aws_env.object_path(s3_bucket, "shard-0/commitlog/" + "0" * 20)
    blocked.mkdir(parents=True)
    (blocked / "in-the-way").write_bytes(b"x")
    store = open_store(path, aws_env, s3_bucket)
    fill(store)
    sealed = states(store).count("pending")
    assert sealed >= 4
    with pytest.raises(TierError):
        store.upload_to_tier()
    # Nothing is recorded past the failure, though the second segment went up meanwhile.
    assert tier_state(path)["segments"] == {}
    assert states(store).count("pending") == sealed
    status = store.tier_status()
    assert status is not None
    assert status["upload"]["failing"] and status["upload"]["uploaded_segments"] == 1
    (blocked / "in-the-way").unlink()
    blocked.rmdir()
    store.upload_to_tier()  # (the background uploader may have begun it)
    assert "pending" not in states(store)
    # The one sent by the failed pass was found in the bucket, not sent again.
    status = store.tier_status()
    assert status is not None
    assert status["upload"]["uploaded_segments"] == sealed
    assert status["upload"]["failing"] is None
    store.close()


def test_key_lookups_read_uploaded_compacted_index_files_in_few_range_reads(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_store(
        path,
        aws_env,
        s3_bucket,
        local_retention_bytes=0,
        index_slot_count=64,
        index_entry_count=400,
    )
    fill(store, 3000)
    assert store._wait_index_compaction(30)
    compacted = [f for f in store._index_files() if f[3]]
    assert len(compacted) >= 5
    upload_and_evict(store)
    local_index = {p.name for p in (path / "index_compacted").iterdir()}
    status = store.tier_status()
    assert status is not None
    remote_files = [f[0] for f in compacted if f[0] not in local_index]
    assert remote_files, "no index file left the disk"
    objects = {o["Key"] for o in aws_env.client().list_objects_v2(Bucket=s3_bucket)["Contents"]}
    assert {f"shard-0/index/{name}" for name in remote_files} <= objects

    def reads() -> int:
        status = store.tier_status()
        assert status is not None
        return int(status["reads"]["range_reads"])

    before = reads()
    got = store.query_by_key("Orders", "order-2", max_count=1)
    assert [m.body for m in got] == [b"order 2 " * 6]
    # At most 2 per remote index file (its slot table the first time, then the run),
    # plus the record's block.
    assert reads() - before <= 2 * len(remote_files) + 1
    # The slot tables are kept: another key costs one run per file and its record.
    before = reads()
    got = store.query_by_key("Orders", "order-3", max_count=1)
    assert [m.body for m in got] == [b"order 3 " * 6]
    assert reads() - before <= len(remote_files) + 1
    # Every key of an evicted message is found, and only once.
    for i in range(0, 3000, 97):
        found = store.query_by_key("Orders", f"order-{i}")
        assert [m.body for m in found] == [f"order {i} ".encode() * 6], i
    store.close()
    reopened = rmq.Store(str(path), index_slot_count=64, index_entry_count=400)
    assert [m.keys for m in reopened.query_by_key("Orders", "order-5")] == [["order-5"]]
    reopened.close()


def test_a_frozen_server_holds_back_only_the_uploads(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """A server that accepts connections and answers nothing (SIGSTOP): appends, local
    reads and retention go on without waiting for it, nothing leaves the disk, and the
    uploads finish by themselves once it answers again."""
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    aws_env.pause()
    try:
        started = time.monotonic()
        results = fill(store)
        assert len(store.get("Orders", 0, 0, 1000)) == 750
        report = store.run_retention()
        assert report.evicted == [] and report.deleted == []
        assert "pending" in states(store)
        # Generous for a loaded machine; a put waiting on the frozen server's 60 s
        # request timeout would blow it.
        assert time.monotonic() - started < 30, "appends or reads waited for the tier"
        assert len(local_segments(path)) >= 5
    finally:
        aws_env.resume()
    deadline = time.monotonic() + 120
    while "pending" in states(store) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "pending" not in states(store)
    store.run_retention()
    assert set(states(store)[:-1]) == {"evicted"}
    last = results[-2]
    assert store.get("Orders", 0, 0, 1)[0].body == b"order 0 " * 6
    assert store.get_by_msg_id(last.msg_id).keys == [f"order-{len(results) - 2}"]
    store.close()


def test_a_server_answering_errors_holds_back_only_the_uploads(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """Every upload answered with an error (the bucket deleted under the store): the
    status says why, nothing that is not uploaded leaves the disk, and uploads resume by
    themselves once the bucket is back."""
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    client = aws_env.client()
    client.delete_bucket(Bucket=s3_bucket)
    try:
        fill(store)
        with pytest.raises(TierError) as refused:
            store.upload_to_tier()
        status = store.tier_status()
        assert status is not None
        assert status["upload"]["failing"] and status["upload"]["failed_attempts"] >= 1
        assert "the bucket does not exist" in status["upload"]["failing"], status["upload"]
        assert "the bucket does not exist" in str(refused.value)
        assert not refused.value.unreachable
        report = store.run_retention()
        assert report.evicted == [] and report.deleted == []
        assert len(store.get("Orders", 1, 0, 1000)) == 750
    finally:
        client.create_bucket(Bucket=s3_bucket)
    deadline = time.monotonic() + 60
    while "pending" in states(store) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "pending" not in states(store)
    status = store.tier_status()
    assert status is not None and status["upload"]["failing"] is None
    store.run_retention()
    assert set(states(store)[:-1]) == {"evicted"}
    assert len(store.get("Orders", 1, 0, 1000)) == 750
    store.close()
