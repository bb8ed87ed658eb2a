"""A commit-log segment or queue file lost from the tier is skipped in one step (issue
19), against a real S3-compatible server (versitygw on loopback) and a real broker: the
engine's error carries the first queue offset past the lost object (``resume_offset``),
the shard sends it beside its DATA_LOSS status, and a consumer with ``on_corrupt="skip"``
(and ``rmq consume``) goes on there at once instead of asking for the missing object once
per record. Without skipping, the error names the lost object.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
import rmq
from rmq.errors import BrokerDataLossError, TierObjectChangedError

from bench.peers.s3 import S3Server
from tests.support.cli import rmq_cli
from tests.support.tiered_store import (
    LOST_SEGMENT,
    SEGMENT,
    broker_with_lost_segment,
    open_tiered_store,
)

TOPIC = "Tiered"
QUEUES = 2
COUNT = 1200


def test_a_store_read_reports_where_the_queue_goes_on_past_a_lost_segment(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    store = open_tiered_store(path, aws_env, s3_bucket, local_retention_bytes=0)
    queue_0 = [store.put(TOPIC, f"m {i} ".encode() * 10, queue_id=i % 2) for i in range(COUNT)][::2]
    store.upload_to_tier()
    store.run_retention()
    store.close()
    aws_env.client().delete_object(Bucket=s3_bucket, Key=f"shard-0/commitlog/{0:020d}")
    first_kept = min(r.queue_offset for r in queue_0 if r.commitlog_offset >= SEGMENT)

    store = rmq.Store(str(path))
    with pytest.raises(TierObjectChangedError, match="gone from the bucket") as raised:
        store.get(TOPIC, 0, 0, 10)
    assert raised.value.queue_offset == 0
    assert raised.value.resume_offset == first_kept, raised.value
    assert f"start at offset {first_kept}" in str(raised.value)
    # Reading from there works: the records past the lost segment are all there.
    got = store.get(TOPIC, 0, first_kept, COUNT)
    assert got[0].queue_offset == first_kept
    store.close()


def test_a_consumer_skips_a_lost_segment_in_one_step_and_gets_everything_after_it(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str, caplog: pytest.LogCaptureFixture
) -> None:
    bodies = [f"message {i} ".encode() * 8 for i in range(COUNT)]
    with broker_with_lost_segment(
        tmp_path / "data", s3_server, s3_bucket, TOPIC, QUEUES, bodies
    ) as lost_segment:
        broker, c, sent = lost_segment.broker, lost_segment.client, lost_segment.sent
        kept = {(sent[i].queue_id, sent[i].queue_offset) for i in lost_segment.kept()}
        lost = len(sent) - len(kept)
        assert lost > QUEUES * 10, "the lost segment must hold many records of each queue"

        # Without skipping: a clear error naming the lost object and where to go on.
        strict = c.consumer("strict", TOPIC, on_corrupt="raise")
        with pytest.raises(BrokerDataLossError) as raised:
            for _ in range(20):
                strict.poll(1.0)
        assert LOST_SEGMENT in str(raised.value) and "gone from the bucket" in str(raised.value)
        queue_id = raised.value.queue_id
        first_kept = min(offset for q, offset in kept if q == queue_id)
        assert raised.value.queue_offset == 0
        assert raised.value.resume_offset == first_kept
        strict.close()

        # Skipping: one DATA_LOSS answer per queue, not one per lost record.
        caplog.set_level(logging.ERROR, logger="rmq.client.consumer")
        consumer = c.consumer("skipping", TOPIC, on_corrupt="skip")
        got: set[tuple[int, int]] = set()
        deadline = time.monotonic() + 60
        while len(got) < len(kept) and time.monotonic() < deadline:
            got.update((m.queue_id, m.queue_offset) for m in consumer.poll(1.0))
        assert got == kept
        skips = [r for r in caplog.records if "lost from the tier" in r.getMessage()]
        assert len(skips) == QUEUES, [r.getMessage() for r in skips]
        assert consumer.corrupt_skipped == lost
        consumer.close()

        # rmq consume goes on past it the same way and says how many it skipped.
        result = rmq_cli(
            "consume", TOPIC, "--group", "cli", "--count", str(len(kept)),
            "--endpoint", broker.endpoint, env=lost_segment.env,
        )  # fmt: skip
    assert result.stdout.count(b"\n") == len(kept)
    stderr = result.stderr.decode()
    assert stderr.count("lost from the tier") == QUEUES, stderr
    assert f"skipped {lost} damaged records" in stderr, stderr


def test_a_lost_queue_file_says_the_queue_goes_on_at_the_next_file(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    entries_per_file = 100
    store = open_tiered_store(
        path, aws_env, s3_bucket, local_retention_bytes=0,
        consume_queue_entries_per_file=entries_per_file,
    )  # fmt: skip
    for i in range(COUNT):
        store.put(TOPIC, f"m {i} ".encode() * 10, queue_id=i % 2)
    store.upload_to_tier()
    store.run_retention()
    store.close()
    lost = f"shard-0/consumequeue/{TOPIC}/0/{0:020d}"
    aws_env.client().delete_object(Bucket=s3_bucket, Key=lost)

    store = rmq.Store(str(path))
    with pytest.raises(TierObjectChangedError, match="gone from the bucket") as raised:
        store.get(TOPIC, 0, 0, 10)
    assert lost in raised.value.object
    assert raised.value.queue_offset == 0
    assert raised.value.resume_offset == entries_per_file
    got = store.get(TOPIC, 0, entries_per_file, 10)
    assert [m.queue_offset for m in got] == list(range(entries_per_file, entries_per_file + 10))
    store.close()
