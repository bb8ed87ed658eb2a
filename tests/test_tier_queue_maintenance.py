"""Evicted consume-queue files (issue 19, format §7.5) under the operations that read a
queue's entries other than a pull, against a real S3-compatible server (versitygw on
loopback): search by time for times well after the first message, a rebuild of the
queues from the log, and opening the store while the server is down.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import rmq
from rmq.errors import TierError

from bench.peers.s3 import S3Server
from tests.support.tiered_store import (
    QUEUE_FILE_ENTRIES,
    read_queue,
    tier_state,
    upload_and_evict,
)
from tests.support.tiered_store import open_store_with_small_queue_files as open_store


def evicted_entries_end(path: Path) -> int:
    """The queue offset after the last entry of queue 0's evicted files."""
    return max(
        (file["startOffset"] + file["size"]) // 20
        for key, file in tier_state(path)["consumeQueues"].items()
        if key.startswith("Orders/0/") and not file["local"]
    )


def test_offset_for_time_reads_evicted_queue_files_for_times_after_the_first_message(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """Search by time inside evicted queue files, not only at time 0: each round of
    messages starts later than the last, and the search finds each round's first."""
    path = tmp_path / "store"
    store = open_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    starts: list[tuple[int, int]] = []  # (store time of the round's first, its queue offset)
    for round_ in range(6):
        time.sleep(0.01)
        for i in range(250):
            result = store.put("Orders", b"r%d-%d " % (round_, i) * 8, queue_id=0)
            if i == 0:
                starts.append((result.store_timestamp, result.queue_offset))
    upload_and_evict(store)
    store.close()
    assert evicted_entries_end(path) >= 500  # four rounds' first messages are evicted
    store = rmq.Store(str(path))
    for stamp, queue_offset in starts:
        assert store.offset_for_time("Orders", 0, stamp) == queue_offset
        # A time after the round's first message finds a later one.
        assert store.offset_for_time("Orders", 0, stamp + 1) > queue_offset
    assert store.offset_for_time("Orders", 0, starts[-1][0] + 60_000) == 1500
    store.close()


def evicted_store(path: Path, server: S3Server, bucket: str) -> None:
    store = open_store(path, server, bucket, local_retention_bytes=0)
    for i in range(1500):
        store.put("Orders", f"order {i} ".encode() * 6, queue_id=i % 2, keys=[f"order-{i}"])
    upload_and_evict(store)
    store.close()
    assert evicted_entries_end(path) >= 300


def test_rebuild_of_a_store_whose_queue_files_are_evicted_keeps_every_message(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """A rebuild dispatches the whole log again, its evicted segments read from the
    bucket: every queue reads as before, and retention and a reopen agree with it."""
    path = tmp_path / "store"
    evicted_store(path, aws_env, s3_bucket)
    # Opened as it was made: a rebuild writes files of the size the open says.
    store = open_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    before = {q: read_queue(store, q) for q in (0, 1)}
    assert [len(before[q]) for q in (0, 1)] == [750, 750]
    assert store.rebuild() == 1500
    assert {q: read_queue(store, q) for q in (0, 1)} == before
    assert store.verify().clean
    evict_then_reopen(store, path, before)


def test_rebuild_of_a_store_reopened_without_its_queue_file_size_keeps_the_recorded_layout(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """Reopened with the default queue-file size (300,000 entries), a rebuild still writes
    files of the size the tier recorded for the queue (100 entries), so the new local files
    line up with the evicted ones the state lists, and retention and a reopen agree."""
    path = tmp_path / "store"
    evicted_store(path, aws_env, s3_bucket)
    store = rmq.Store(str(path))
    before = {q: read_queue(store, q) for q in (0, 1)}
    assert store.rebuild() == 1500
    assert {q: read_queue(store, q) for q in (0, 1)} == before
    recorded = {file["size"] for file in tier_state(path)["consumeQueues"].values()}
    assert recorded == {QUEUE_FILE_ENTRIES * 20}
    for queue_dir in (path / "consumequeue" / "Orders").iterdir():
        sizes = {f.stat().st_size for f in queue_dir.iterdir()}
        assert sizes == {QUEUE_FILE_ENTRIES * 20}, (queue_dir, sizes)
    evict_then_reopen(store, path, before)


def test_a_store_with_evicted_queue_files_opens_while_the_server_is_down(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    """Opening reads no evicted queue file: bounds come from the state and local files,
    local messages read on, and reads of evicted entries fail until the server is back."""
    path = tmp_path / "store"
    evicted_store(path, aws_env, s3_bucket)
    aws_env.kill()
    try:
        store = rmq.Store(str(path))
        assert [store.min_offset("Orders", q) for q in (0, 1)] == [0, 0]
        assert [store.max_offset("Orders", q) for q in (0, 1)] == [750, 750]
        assert [m.queue_offset for m in store.get("Orders", 1, 745, 10)] == list(range(745, 750))
        with pytest.raises(TierError) as raised:
            store.get("Orders", 1, 0, 10)
        assert raised.value.unreachable
    finally:
        aws_env.start()
    assert [m.queue_offset for m in store.get("Orders", 1, 0, 10)] == list(range(10))
    store.close()


def evict_then_reopen(
    store: rmq.Store, path: Path, before: dict[int, list[tuple[int, bytes]]]
) -> None:
    """After a rebuild: upload and evict again, then the state and the local files agree,
    and both the store and a reopened one read ``before`` from offset 0."""
    upload_and_evict(store)
    for key, file in tier_state(path)["consumeQueues"].items():
        assert (path / "consumequeue" / key).exists() == file["local"], key
    assert {q: read_queue(store, q) for q in (0, 1)} == before
    store.close()
    reopened = rmq.Store(str(path))
    assert [reopened.min_offset("Orders", q) for q in (0, 1)] == [0, 0]
    assert {q: read_queue(reopened, q) for q in (0, 1)} == before
    reopened.close()
