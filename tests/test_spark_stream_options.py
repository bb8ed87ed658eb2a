"""The options of ``spark.readStream.format("rmq")``: bad ones fail the query when it
starts with a clear message (some against a real broker), and how micro-batches are cut
from per-queue offsets (the limit shared among queues, small ranges sharing partitions)."""

from __future__ import annotations

import re
import socket
import sys
from pathlib import Path

import pytest
import rmq
import rmq.spark
from pyspark.sql import SparkSession
from rmq.client import Client
from rmq.cluster.local import LocalBroker
from rmq.spark.offsets import QueueRange, cap_offsets, group_ranges, plan_ranges
from rmq.spark.stream_options import parse_stream_options

from tests.support.brokers import Brokers


def closed_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return int(listener.getsockname()[1])


def start_error(spark: SparkSession, options: dict[str, str]) -> str:
    """The message a query with ``options`` fails with when it starts."""
    query = None
    try:
        frame = spark.readStream.format("rmq").options(**options).load()
        query = frame.writeStream.format("noop").trigger(availableNow=True).start()
        query.awaitTermination(60)
    except Exception as error:
        return str(error)
    finally:
        if query is not None:
            query.stop()
    raise AssertionError(f"the query with {options} did not fail")


def test_bad_options_fail_the_query_at_start_with_a_clear_message(
    spark: SparkSession, module_brokers: Brokers, tmp_path: Path
) -> None:
    broker: LocalBroker = module_brokers.start(shards=2)
    client: Client = module_brokers.client(broker)
    client.create_topic("checked", queues=2)
    endpoint = broker.endpoint
    cases = [
        ({"endpoint": endpoint, "topic": "no-such-topic"}, "topic 'no-such-topic' does not exist"),
        ({"endpoint": f"127.0.0.1:{closed_port()}", "topic": "checked"}, "cannot reach"),
        (
            {"endpoint": endpoint, "topic": "checked", "startingOffsets": "{not json"},
            "startingOffsets is neither earliest, latest nor JSON",
        ),
        (
            {"endpoint": endpoint, "topic": "checked", "startingOffsets": '{"checked": {"0": 1}}'},
            r"must give every queue of 'checked' \(ids 0 to 1\): missing \[1\]",
        ),
        ({"endpoint": endpoint, "topic": "checked", "startingOffset": "latest"}, "unknown"),
        ({"path": str(tmp_path / "missing"), "topic": "checked"}, "no such file"),
    ]
    for options, message in cases:
        error = start_error(spark, options)
        assert re.search(message, error), (options, error)


def test_options_are_checked_before_anything_is_read() -> None:
    good = {"endpoint": "127.0.0.1:1", "topic": "t"}
    given = parse_stream_options({**good, "startingOffsets": '{"t": {"0": 5, "1": -2}}'})
    assert given.starting == {0: 5, 1: -2}
    assert given.prefetch_batches == 4
    assert parse_stream_options({**good, "prefetchBatches": "0"}).prefetch_batches == 0
    cases = [
        ({**good, "startingOffsets": '{"other": {"0": 1}}'}, "one key 't'"),
        ({**good, "startingOffsets": '{"t": {"x": 1}}'}, "not a queue id"),
        ({**good, "startingOffsets": '{"t": {"0": -3}}'}, "below -2"),
        ({**good, "startingOffsets": "latest", "startingTimestamp": "0"}, "not both"),
        ({**good, "maxOffsetsPerTrigger": "0"}, "below 1"),
        ({**good, "prefetchBatches": "-1"}, "prefetchBatches=-1 is below 0"),
        ({**good, "failOnDataLoss": "maybe"}, "not true or false"),
        ({"topic": "t"}, "exactly one of the options endpoint"),
        ({**good, "path": "/x"}, "exactly one of the options endpoint"),
        ({"endpoint": "127.0.0.1:1", "topic": "a,b"}, "the one topic"),
    ]
    for options, message in cases:
        with pytest.raises(rmq.errors.InvalidArgumentError, match=message):
            parse_stream_options(options)


def test_a_pyspark_without_streaming_read_limits_gets_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A pyspark before 4.2 has no pyspark.sql.streaming.datasource: importing it fails
    # the way a None entry in sys.modules makes it fail.
    monkeypatch.setitem(sys.modules, "pyspark.sql.streaming.datasource", None)
    monkeypatch.delitem(sys.modules, "rmq.spark.stream", raising=False)
    source = rmq.spark.RmqDataSource({"endpoint": "127.0.0.1:1", "topic": "t"})
    with pytest.raises(ImportError, match=r"needs pyspark 4\.2 or later .* this is pyspark"):
        source.streamReader(rmq.spark.SCHEMA)


def test_micro_batches_share_the_limit_among_queues_and_cut_ranges() -> None:
    assert cap_offsets({0: 0, 1: 0}, {0: 100, 1: 300}, 40) == {0: 10, 1: 30}
    assert cap_offsets({0: 0, 1: 0}, {0: 10, 1: 20}, 40) == {0: 10, 1: 20}
    small = cap_offsets({0: 0, 1: 0, 2: 0}, {0: 5, 1: 5, 2: 5}, 2)
    assert sum(small.values()) == 2  # advances even with a limit below the queue count
    assert cap_offsets({0: 7}, {0: 7, 1: 50}, 10) == {0: 7, 1: 10}  # a new queue from 0
    ranges = plan_ranges({0: 0}, {0: 10, 1: 4}, 4)
    assert len(ranges) == 4
    assert [(r.queue_id, r.start, r.end) for r in ranges] == [
        (0, 0, 2), (0, 2, 5), (0, 5, 10), (1, 0, 4),
    ]  # fmt: skip
    assert all(r.new_queue == (r.queue_id == 1) for r in ranges)


def test_small_queue_ranges_share_partitions() -> None:
    def shape(groups: list[list[QueueRange]]) -> list[list[tuple[int, int]]]:
        return [[(r.queue_id, r.end - r.start) for r in group] for group in groups]

    eight = [QueueRange(q, 100, 100 + 2_500) for q in range(8)]
    # 20,000 messages, about 10,000 a partition: two partitions of four queues each.
    assert shape(group_ranges(eight, 10_000, 1)) == [
        [(0, 2_500), (2, 2_500), (4, 2_500), (6, 2_500)],
        [(1, 2_500), (3, 2_500), (5, 2_500), (7, 2_500)],
    ]
    # Large ranges keep a partition each; minPartitions is kept.
    assert len(group_ranges(eight, 1_000, 1)) == 8
    assert len(group_ranges(eight, 10_000, 3)) == 3
    uneven = [QueueRange(0, 0, 9_000), QueueRange(1, 0, 500), QueueRange(2, 0, 700)]
    assert shape(group_ranges(uneven, 5_000, 1)) == [[(0, 9_000)], [(1, 500), (2, 700)]]
    assert group_ranges([], 10_000, 1) == []
