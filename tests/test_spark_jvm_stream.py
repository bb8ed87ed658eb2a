"""``readStream.format("rmq")`` from a broker is the JVM stream (crates/rmqjvm, no Python
worker) when the jar is loaded, and it reads what the Python source (``rmq_python``)
reads: the same rows and values, column for column, on the same broker; the same offsets
in the checkpoint, so a query checkpointed by one resumes on the other; and the same
messages for bad options."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import rmq
from pyspark.sql import SparkSession
from rmq.client import Client
from rmq.cluster.local import LocalBroker

from tests.support.spark_streams import collect, run_available_now, send_all


def _rows(rows: list[Any]) -> list[tuple[Any, ...]]:
    def plain(value: Any) -> Any:
        if isinstance(value, bytearray | bytes):
            return bytes(value)
        if isinstance(value, dict):
            return sorted(value.items())
        if isinstance(value, list):
            return tuple(value)
        return value

    return sorted(tuple(plain(v) for v in row) for row in rows)


def test_the_jvm_stream_reads_the_rows_the_python_source_reads(
    spark: SparkSession, broker: LocalBroker, client: Client
) -> None:
    topic = "same-rows"
    client.create_topic(topic, queues=3)
    with client.producer() as producer:
        futures = [
            producer.send(
                topic,
                bytes([i % 256]) * (i % 7) + f"b{i}".encode(),
                tags=None if i % 3 == 0 else f"t{i % 2}",
                keys=[f"k{i}", "both"] if i % 5 == 0 else [],
                properties={"n": str(i), "é": "ü"} if i % 4 else {},
                queue_id=i % 3,
            )
            for i in range(300)
        ]
        for future in futures:
            future.result(30)
    base = {"endpoint": broker.endpoint, "topic": topic}
    cases = [
        {},
        {"tags": "t1", "batch_rows": "11", "minPartitions": "4"},
        {"keys": "both", "startingOffsets": '{"same-rows": {"0": 40, "1": -2, "2": -1}}'},
    ]
    for options in cases:
        jvm = collect(spark, {**base, **options})
        python = collect(spark, {**base, **options}, source="rmq_python")
        assert len(jvm) > 0, options
        assert jvm[0].asDict().keys() == python[0].asDict().keys()
        assert _rows(jvm) == _rows(python), options

    query = (
        spark.readStream.format("rmq")
        .options(**base)
        .load()
        .writeStream.format("noop")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    descriptions = [source["description"] for source in query.lastProgress["sources"]]
    assert descriptions == [f"rmq JVM stream of topic {topic} at {broker.endpoint}"]


def test_a_checkpoint_of_either_stream_resumes_on_the_other(
    spark: SparkSession, broker: LocalBroker, client: Client, tmp_path: Path
) -> None:
    topic = "handed-over"
    client.create_topic(topic, queues=2)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    sent: list[str] = []
    for round_number, source in enumerate(["rmq_python", "rmq", "rmq_python", "rmq"]):
        bodies = [f"r{round_number}-{i}" for i in range(150)]
        send_all(client, topic, bodies)
        sent += bodies
        frame = (
            spark.readStream.format(source)
            .option("endpoint", broker.endpoint)
            .option("topic", topic)
            .option("maxOffsetsPerTrigger", "100")
            .load()
        )
        run_available_now(frame, out, checkpoint)
        rows = spark.read.parquet(str(out)).select("body").collect()
        assert sorted(bytes(row.body).decode() for row in rows) == sorted(sent), source


def test_both_streams_refuse_bad_options_with_the_same_messages(
    spark: SparkSession, broker: LocalBroker, client: Client
) -> None:
    topic = "refused"
    client.create_topic(topic, queues=2)
    send_all(client, topic, ["one"])
    base = {"endpoint": broker.endpoint, "topic": topic}
    cases = [
        ({"startingOffsets": '{"other": {"0": 1}}'}, r"with the one key 'refused'"),
        ({"startingOffsets": '{"refused": {"x": 1}}'}, "is not a queue id and an integer offset"),
        ({"startingOffsets": '{"refused": {"0": -3, "1": 0}}'}, "offset -3 of queue 0 is below -2"),
        (
            {"startingOffsets": '{"refused": {"0": 5, "1": 0}}'},
            r"offset 5 of queue 0 of 'refused' is past its end \(\d\)",
        ),
        ({"maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger=0 is below 1"),
        ({"failOnDataLoss": "maybe"}, "failOnDataLoss='maybe' is not true or false"),
        ({"startingOffset": "latest"}, "unknown streaming option"),
    ]
    for options, message in cases:
        for source in ("rmq", "rmq_python"):
            query = None
            try:
                frame = spark.readStream.format(source).options(**base, **options).load()
                query = frame.writeStream.format("noop").trigger(availableNow=True).start()
                query.awaitTermination(60)
                error = str(query.exception())
            except Exception as raised:
                error = str(raised)
            finally:
                if query is not None:
                    query.stop()
            assert re.search(message, error), (source, options, error)


@pytest.mark.parametrize("source", ["rmq", "rmq_python"])
def test_a_broker_stream_reports_data_loss_and_skips_it_when_told(
    spark: SparkSession, tmp_path: Path, source: str
) -> None:
    """Retention deletes segments the query has not read yet: the next run fails with a
    data-loss error naming failOnDataLoss, and with failOnDataLoss=false it goes on from
    what is left, nothing read twice."""
    data, out, checkpoint = tmp_path / "data", tmp_path / "out", tmp_path / "checkpoint"
    small_segments = ["--store-option", f"commitlog_segment_size={64 * 1024}"]
    topic = "lost"

    def stream(**options: str) -> Any:
        return (
            spark.readStream.format(source)
            .options(endpoint=broker.endpoint, topic=topic, **options)
            .load()
        )

    with LocalBroker(data, shards=1, args=small_segments) as broker, Client(broker.endpoint) as c:
        c.create_topic(topic, queues=2)
        send_all(c, topic, [f"a{i}" * 40 for i in range(1000)], batch_max_messages=128)
        run_available_now(stream(), out, checkpoint)
        send_all(c, topic, [f"b{i}" * 40 for i in range(1000)], batch_max_messages=128)

    # Retention runs while the broker is down: every segment but the last goes, among them
    # the ones holding the b messages the query has not reached.
    with rmq.Store(data / "shard-0", commitlog_segment_size=64 * 1024) as store:
        assert store.run_retention(now_ms=int(time.time() * 1000) + 10**9).deleted
        survivors = {
            bytes(message.body).decode()
            for queue in range(2)
            for message in store.get(topic, queue, store.min_offset(topic, queue), 1000)
        }
    assert 0 < len(survivors) < 1000 and all(body.startswith("b") for body in survivors)

    with LocalBroker(data, shards=1, args=small_segments) as broker:
        with pytest.raises(Exception, match=r"data loss: .*failOnDataLoss=false"):
            run_available_now(stream(), out, checkpoint)
        run_available_now(stream(failOnDataLoss="false"), out, checkpoint)
    bodies = [bytes(row.body).decode() for row in spark.read.parquet(str(out)).collect()]
    assert len(bodies) == len(set(bodies))
    assert set(bodies) == {f"a{i}" * 40 for i in range(1000)} | survivors
