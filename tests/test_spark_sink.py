"""``df.write.format("rmq")`` and ``df.writeStream.format("rmq")`` into a real broker
(``rmq serve``): every row stored with its tags, keys, properties and sharding key; a row
that cannot be stored fails the job; a streaming copy of a topic writes each message once
across two runs from one checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from rmq.client import Client
from rmq.cluster.local import LocalBroker

from tests.support.spark_streams import collect, send_all


def test_a_batch_write_stores_every_row_and_a_failure_fails_the_job(
    spark: SparkSession, broker: LocalBroker, client: Client
) -> None:
    client.create_topic("written", queues=3)
    rows = [
        ("written", f"w{i}", "T" if i % 3 else None, [f"k{i}", "all"], {"n": str(i)}, f"s{i % 5}")
        for i in range(300)
    ]
    frame = spark.createDataFrame(
        rows,
        "topic string, body string, tags string, keys array<string>, "
        "properties map<string,string>, sharding_key string",
    ).repartition(3)
    frame.write.format("rmq").option("endpoint", broker.endpoint).mode("append").save()

    stored = collect(spark, {"endpoint": broker.endpoint, "topic": "written"})
    assert sorted(bytes(row.body).decode() for row in stored) == sorted(r[1] for r in rows)
    by_body = {bytes(row.body).decode(): row for row in stored}
    for _, body, tags, keys, properties, _key in rows:
        row = by_body[body]
        assert (row.tags, list(row["keys"]), row.properties["n"]) == (tags, keys, properties["n"])
    queue_of_key: dict[str, set[int]] = {}
    for _, body, *_, shard_key in rows:
        queue_of_key.setdefault(shard_key, set()).add(by_body[body].queue_id)
    assert all(len(queues) == 1 for queues in queue_of_key.values())

    writer = spark.createDataFrame([("nowhere", b"x")], "topic string, body binary").write
    with pytest.raises(Exception, match="not stored"):
        writer.format("rmq").option("endpoint", broker.endpoint).mode("append").save()
    wrong = spark.createDataFrame([("written", b"x", 1)], "topic string, body binary, tag int")
    with pytest.raises(Exception, match="column 'tag' means nothing"):
        wrong.write.format("rmq").option("endpoint", broker.endpoint).mode("append").save()


def test_a_streaming_write_copies_a_topic_once(
    spark: SparkSession, broker: LocalBroker, client: Client, tmp_path: Path
) -> None:
    client.create_topic("copy-src", queues=2)
    client.create_topic("copy-dst", queues=3)
    send_all(client, "copy-src", [f"c{i}" for i in range(400)], tags="X")
    source = (
        spark.readStream.format("rmq")
        .option("endpoint", broker.endpoint)
        .option("topic", "copy-src")
        .load()
        .select(F.lit("copy-dst").alias("topic"), "body", "tags", "keys")
    )

    def copy() -> None:
        query = (
            source.writeStream.format("rmq")
            .option("endpoint", broker.endpoint)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()

    copy()
    send_all(client, "copy-src", [f"d{i}" for i in range(100)], tags="X")
    copy()
    copied = collect(spark, {"endpoint": broker.endpoint, "topic": "copy-dst"})
    bodies = sorted(bytes(row.body).decode() for row in copied)
    assert bodies == sorted([f"c{i}" for i in range(400)] + [f"d{i}" for i in range(100)])
    assert {row.tags for row in copied} == {"X"}
