"""What ``spark.readStream.format("rmq")`` reads: from a real broker (``rmq serve``) with
starting positions (JSON offsets, a timestamp), ``maxOffsetsPerTrigger``, tag and key
filters and a narrow schema; and from store files that grow between runs and lose
messages to retention (a clear error, or skipped with ``failOnDataLoss=false``)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import rmq
from pyspark.sql import SparkSession
from rmq.client import Client
from rmq.cluster.local import LocalBroker

from tests.support.spark_streams import collect, query_name, run_available_now


def test_starting_positions_limits_filters_and_a_narrow_schema(
    spark: SparkSession, broker: LocalBroker, client: Client
) -> None:
    topic = "mixed"
    client.create_topic(topic, queues=2)
    with client.producer() as producer:
        futures = [
            producer.send(
                topic, f"b{i}".encode(), tags="A" if i % 2 else "B", keys=[f"k{i}"], queue_id=i % 2
            )
            for i in range(200)
        ]
        results = [future.result(30) for future in futures]
    base = {"endpoint": broker.endpoint, "topic": topic}

    def bodies(rows: list[Any]) -> list[str]:
        return sorted(bytes(row.body).decode() for row in rows)

    narrow = "shard string, queue_offset bigint, body binary"
    everything = collect(spark, {**base, "minPartitions": "5"}, schema=narrow)
    assert bodies(everything) == sorted(f"b{i}" for i in range(200))
    assert set(everything[0].asDict()) == {"shard", "queue_offset", "body"}
    assert {row.shard for row in everything} == {"shard-0", "shard-1"}
    in_line = collect(spark, {**base, "prefetchBatches": "0", "batch_rows": "7"})
    assert bodies(in_line) == bodies(everything)
    filtered = collect(spark, {**base, "tags": "A", "keys": "k5,k8,k9,nope"})
    assert bodies(filtered) == ["b5", "b9"]  # k8 is tagged B
    from_json = collect(spark, {**base, "startingOffsets": json.dumps({topic: {"0": 60, "1": -1}})})
    assert bodies(from_json) == sorted(f"b{i}" for i in range(120, 200, 2))
    cut = results[150].store_timestamp
    after = collect(spark, {**base, "startingTimestamp": str(cut)})
    assert bodies(after) == sorted(
        f"b{i}" for i, result in enumerate(results) if result.store_timestamp >= cut
    )

    query = (
        spark.readStream.format("rmq")
        .options(**base, maxOffsetsPerTrigger="90")
        .load()
        .writeStream.format("memory")
        .queryName(query_name("limited"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    sizes = [progress["numInputRows"] for progress in query.recentProgress]
    assert sum(sizes) == 200 and max(sizes) <= 90, sizes


def test_a_stream_over_store_files_follows_them_and_reports_data_loss(
    spark: SparkSession, tmp_path: Path
) -> None:
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    options = {"path": str(tmp_path / "store"), "topic": "logs"}
    frame = spark.readStream.format("rmq").options(**options).load()
    with rmq.Store(
        tmp_path / "store", commitlog_segment_size=64 * 1024, file_reserved_time_ms=1
    ) as store:
        for i in range(1000):
            store.put("logs", f"a{i}".encode() * 20, queue_id=i % 2)
        run_available_now(frame, out, checkpoint)
        assert spark.read.parquet(str(out)).count() == 1000
        for i in range(500):
            store.put("logs", f"b{i}".encode() * 20, queue_id=i % 2)
        run_available_now(frame, out, checkpoint)
        written = spark.read.parquet(str(out))
        assert written.count() == 1500 == written.select("body").distinct().count()
        assert {row.shard for row in written.select("shard").distinct().collect()} == {"store"}

        # Retention deletes what the query has not read yet.
        for i in range(1000):
            store.put("logs", f"c{i}".encode() * 20, queue_id=i % 2)
        assert store.run_retention(now_ms=int(time.time() * 1000) + 10**9).deleted
        survivors = set()
        for queue in range(2):
            for offset in range(750, store.max_offset("logs", queue)):
                try:
                    messages = store.get("logs", queue, offset, 1)
                except rmq.errors.OffsetOutOfRangeError:
                    continue
                survivors.add(bytes(messages[0].body))
        assert 0 < len(survivors) < 1000

        with pytest.raises(Exception, match=r"data loss: .* failOnDataLoss=false"):
            run_available_now(frame, out, checkpoint)
        skipping = spark.readStream.format("rmq").options(**options, failOnDataLoss="false")
        run_available_now(skipping.load(), out, checkpoint)
        bodies = [bytes(row.body) for row in spark.read.parquet(str(out)).collect()]
        before = {f"{p}{i}".encode() * 20 for p, n in (("a", 1000), ("b", 500)) for i in range(n)}
        assert len(bodies) == len(set(bodies)) and set(bodies) == before | survivors


def test_a_partition_joins_its_pulls_into_batches_of_batch_rows(
    broker: LocalBroker, client: Client
) -> None:
    """The broker answers a pull with at most 1,024 messages (its ``max_pull_messages``);
    the reader joins consecutive pulls, and ranges of several queues, into batches of
    ``batch_rows`` rows before Spark gets them, rows in queue order."""
    from rmq.spark.arrow import ARROW_SCHEMA
    from rmq.spark.stream import RmqStreamReader
    from rmq.spark.stream_options import parse_stream_options

    topic = "joined"
    client.create_topic(topic, queues=2)
    with client.producer() as producer:
        for i in range(3000):
            producer.send(topic, f"m{i}".encode(), queue_id=i % 2)
        assert producer.flush(60)
    options = {"endpoint": broker.endpoint, "topic": topic, "minRowsPerPartition": "100000"}

    def batches(extra: dict[str, str]) -> list[Any]:
        reader = RmqStreamReader(parse_stream_options({**options, **extra}), ARROW_SCHEMA)
        try:
            start, end = reader.initialOffset(), reader.latestOffset()
            (partition,) = reader.partitions(start, end)  # both queues in one partition
            return list(reader.read(partition))
        finally:
            reader.stop()

    joined = batches({"batch_rows": "2000"})
    # Pulls of 1024, 476 (queue 0), 1024, 476 (queue 1): joined until 2000 is reached.
    assert [b.num_rows for b in joined] == [2524, 476]
    rows = [
        (q, o)
        for b in joined
        for q, o in zip(b["queue_id"].to_pylist(), b["queue_offset"].to_pylist(), strict=True)
    ]
    assert rows == [(q, o) for q in (0, 1) for o in range(1500)]
    # A pull of batch_rows passes as it is; the short one ending queue 0 joins the next.
    assert [b.num_rows for b in batches({"batch_rows": "1024"})] == [1024, 1500, 476]
    assert [b.num_rows for b in batches({})] == [3000]  # default 8192: the partition in one
