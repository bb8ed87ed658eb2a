"""The ``rmq`` Spark data source, in local mode, against what ``rmq.Store`` reads back from
the same files: two shard directories written through ``rmq.Store`` with small segments
(so the log rolls), several topics and queues, unicode tags, keys and properties, empty
and large bodies, IPv4 and IPv6 hosts."""

from __future__ import annotations

import random
import re
import shutil
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import rmq
import rmq.spark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from rmq.spark.arrow import ARROW_SCHEMA

SEGMENT_SIZE = 64 * 1024
TOPICS = ("orders", "payments", "audit")
SHARDS = ("shard-0", "shard-1")


def write_shard(path: Path, store_host: str, seed: int) -> None:
    generator = random.Random(seed)
    with rmq.Store(path, commitlog_segment_size=SEGMENT_SIZE, store_host=store_host) as store:
        for index in range(400):
            topic = TOPICS[index % len(TOPICS)]
            size = 30_000 if index % 80 == 7 else generator.choice([0, 0, 1, 17, 300, 1000])
            body = bytes(generator.getrandbits(8) for _ in range(min(size, 64))) * (size // 64 + 1)
            store.put(
                topic,
                body[:size],
                queue_id=index % 4,
                tags=generator.choice([None, "TagA", "标签", "тег-1"]),
                keys=generator.choice([[], [f"k{index}"], [f"k{index}", "ключ", "キー"]]),
                properties={"n": str(index), "ü": "ö"} if index % 5 == 0 else None,
                flag=index % 3,
                born_host=generator.choice([None, "10.1.2.3:4567", "[2001:db8::5]:4242"]),
            )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("broker-data")
    write_shard(root / "shard-0", "127.0.0.1:10911", seed=1)
    write_shard(root / "shard-1", "[::1]:10912", seed=2)
    return root


def stored_rows(shard_dir: Path) -> list[dict[str, Any]]:
    """Every message of a shard as rmq.Store reads it, shaped like a Spark row."""
    found = []
    with rmq.Store(shard_dir, read_only=True) as store:
        for topic in store.topics():
            for queue_id in range(store.queue_count(topic)):
                offset = store.min_offset(topic, queue_id)
                while offset < store.max_offset(topic, queue_id):
                    messages = store.get(topic, queue_id, offset, 500)
                    found.extend(as_row(shard_dir.name, message) for message in messages)
                    offset += len(messages)
    return found


def as_row(shard: str, message: rmq.Message) -> dict[str, Any]:
    return {
        "shard": shard,
        "topic": message.topic,
        "queue_id": message.queue_id,
        "queue_offset": message.queue_offset,
        "commitlog_offset": message.commitlog_offset,
        "msg_id": message.msg_id,
        "tags": message.tags,
        "keys": message.keys,
        "properties": message.properties,
        "body": message.body,
        "body_size": len(message.body),
        "born_ms": message.born_timestamp,
        "store_ms": message.store_timestamp,
        "born_host": message.born_host,
        "store_host": message.store_host,
        "sys_flag": message.sys_flag,
        "flag": message.flag,
        "reconsume_times": message.reconsume_times,
        "body_crc_ok": True,
    }


@pytest.fixture(scope="module")
def expected(data_dir: Path) -> list[dict[str, Any]]:
    rows = [row for shard in SHARDS for row in stored_rows(data_dir / shard)]
    assert len(rows) == 800
    return rows


def spark_rows(frame: DataFrame) -> list[dict[str, Any]]:
    frame = frame.withColumn("born_ms", F.unix_millis("born_timestamp")).withColumn(
        "store_ms", F.unix_millis("store_timestamp")
    )
    rows = []
    for row in frame.drop("born_timestamp", "store_timestamp").collect():
        values = row.asDict()
        values["body"] = bytes(values["body"])
        rows.append(values)
    return rows


def key(row: dict[str, Any]) -> tuple[str, int]:
    return row["shard"], row["commitlog_offset"]


def filtered_by_spark(frame: DataFrame) -> bool:
    """Whether Spark's physical plan still holds a Filter (the reader took none over)."""
    plan = str(frame._jdf.queryExecution().executedPlan().toString())
    return re.search(r"\bFilter\b", plan) is not None


def test_the_schema_matches_the_arrow_batches_and_rejects_other_columns(
    spark: SparkSession, data_dir: Path
) -> None:
    frame = spark.read.format("rmq").load(str(data_dir))
    assert frame.schema == rmq.spark.SCHEMA
    assert to_arrow_schema(rmq.spark.SCHEMA, timezone="UTC").equals(ARROW_SCHEMA)
    for bad in ("topic string, nope int", "topic int", "tags string not null"):
        with pytest.raises(Exception, match="column"):
            spark.read.format("rmq").schema(bad).load(str(data_dir)).count()


def test_a_subset_schema_reads_only_those_columns(
    spark: SparkSession, data_dir: Path, expected: list[dict[str, Any]]
) -> None:
    frame = (
        spark.read.format("rmq")
        .schema("body_size int, topic string, keys array<string>, shard string")
        .load(str(data_dir))
    )
    got = sorted(
        (row.shard, row.topic, row.body_size, tuple(row["keys"]))
        for row in frame.where(F.col("topic") != "audit").collect()
    )
    wanted = sorted(
        (row["shard"], row["topic"], row["body_size"], tuple(row["keys"]))
        for row in expected
        if row["topic"] != "audit"
    )
    assert got == wanted


def test_every_row_equals_what_the_store_returns(
    spark: SparkSession, data_dir: Path, expected: list[dict[str, Any]]
) -> None:
    frame = spark.read.format("rmq").load(str(data_dir))
    assert frame.rdd.getNumPartitions() > 2 * len(SHARDS), "the data set must roll segments"
    actual = {key(row): row for row in spark_rows(frame)}
    assert len(actual) == len(expected)
    for row in expected:
        assert actual[key(row)] == row
    assert any(row["body_size"] == 0 for row in expected)
    assert any(row["body_size"] == 30_000 for row in expected)
    assert any("[" in row["store_host"] for row in expected)


def test_counts_by_topic_and_shard(
    spark: SparkSession, data_dir: Path, expected: list[dict[str, Any]]
) -> None:
    frame = spark.read.format("rmq").load(str(data_dir))
    assert frame.count() == len(expected)
    by_topic = {row["topic"]: row["count"] for row in frame.groupBy("topic").count().collect()}
    assert by_topic == Counter(row["topic"] for row in expected)
    by_shard = {row["shard"]: row["count"] for row in frame.groupBy("shard").count().collect()}
    assert by_shard == Counter(row["shard"] for row in expected)


def test_pushed_down_filters_return_what_the_store_holds(
    spark: SparkSession, data_dir: Path, expected: list[dict[str, Any]]
) -> None:
    frame = spark.read.format("rmq").load(str(data_dir))
    times = sorted(row["store_ms"] for row in expected)
    low, high = times[len(times) // 4], times[3 * len(times) // 4]
    low_ts = F.timestamp_millis(F.lit(low))
    high_ts = F.timestamp_millis(F.lit(high))
    cases = [
        (F.col("topic") == "orders", lambda r: r["topic"] == "orders"),
        (F.col("topic").isin("audit", "missing"), lambda r: r["topic"] == "audit"),
        (F.col("shard") == "shard-1", lambda r: r["shard"] == "shard-1"),
        (
            (F.col("store_timestamp") >= low_ts) & (F.col("store_timestamp") < high_ts),
            lambda r: low <= r["store_ms"] < high,
        ),
        (
            (F.col("store_timestamp") > low_ts)
            & (F.col("store_timestamp") <= high_ts)
            & (F.col("topic") == "payments"),
            lambda r: low < r["store_ms"] <= high and r["topic"] == "payments",
        ),
    ]
    for condition, predicate in cases:
        filtered = frame.where(condition)
        assert not filtered_by_spark(filtered), condition
        wanted = sorted(key(row) for row in expected if predicate(row))
        assert wanted, "each case must select something"
        got = sorted((row["shard"], row["commitlog_offset"]) for row in filtered.collect())
        assert got == wanted

    mixed = frame.where((F.col("topic") == "orders") & (F.col("queue_id") == 1))
    assert filtered_by_spark(mixed)  # queue_id is left to Spark
    assert mixed.count() == sum(
        1 for row in expected if row["topic"] == "orders" and row["queue_id"] == 1
    )
    assert frame.where(F.col("topic") == "nothing").count() == 0


def test_options_select_topics_and_a_store_time_range(
    spark: SparkSession, data_dir: Path, expected: list[dict[str, Any]]
) -> None:
    times = sorted(row["store_ms"] for row in expected)
    start, end = times[100], times[600]
    frame = (
        spark.read.format("rmq")
        .option("topics", "orders,payments")
        .option("store_time_start", str(start))
        .option("store_time_end", str(end))
        .load(str(data_dir))
    )
    wanted = [row for row in expected if row["topic"] != "audit" and start <= row["store_ms"] < end]
    assert frame.count() == len(wanted)
    unchecked = spark.read.format("rmq").option("verify_crc", "false").load(str(data_dir))
    assert unchecked.where(F.col("body_crc_ok").isNull()).count() == len(expected)
    without_pushdown = spark.read.format("rmq").option("filter_pushdown", "false")
    orders = without_pushdown.load(str(data_dir)).where(F.col("topic") == "orders")
    assert filtered_by_spark(orders)
    assert orders.count() == sum(1 for row in expected if row["topic"] == "orders")
    with pytest.raises(Exception, match="unknown option"):
        spark.read.format("rmq").option("topic", "x").load(str(data_dir)).count()


def test_segments_split_into_parts_return_the_same_rows(
    spark: SparkSession, data_dir: Path, expected: list[dict[str, Any]]
) -> None:
    whole = spark.read.format("rmq").load(str(data_dir))
    split = spark.read.format("rmq").option("split_size", "8192").load(str(data_dir))
    assert split.rdd.getNumPartitions() > 3 * whole.rdd.getNumPartitions()
    offsets = [(row["shard"], row["commitlog_offset"]) for row in split.collect()]
    assert sorted(offsets) == sorted(key(row) for row in expected)


def test_a_store_directory_and_a_single_segment_load_on_their_own(
    spark: SparkSession, data_dir: Path, expected: list[dict[str, Any]]
) -> None:
    shard = spark.read.format("rmq").load(str(data_dir / "shard-1"))
    assert shard.count() == sum(1 for row in expected if row["shard"] == "shard-1")
    assert {row["shard"] for row in shard.select("shard").distinct().collect()} == {"shard-1"}
    first = data_dir / "shard-0" / "commitlog" / f"{0:020d}"
    segment = spark.read.format("rmq").load(str(first))
    in_first = [
        r for r in expected if r["shard"] == "shard-0" and r["commitlog_offset"] < SEGMENT_SIZE
    ]
    assert segment.count() == len(in_first)


def test_a_corrupt_record_is_reported_and_the_rows_before_it_returned(
    spark: SparkSession, data_dir: Path, expected: list[dict[str, Any]], tmp_path: Path
) -> None:
    copy = tmp_path / "damaged"
    shutil.copytree(data_dir / "shard-0", copy / "shard-0")
    in_first = sorted(
        row["commitlog_offset"]
        for row in expected
        if row["shard"] == "shard-0" and row["commitlog_offset"] < SEGMENT_SIZE
    )
    bad = in_first[len(in_first) // 2]
    segment = copy / "shard-0" / "commitlog" / f"{0:020d}"
    with segment.open("r+b") as file:
        file.seek(bad)
        (length,) = struct.unpack(">i", file.read(4))
        file.seek(bad)
        file.write(struct.pack(">i", length + 3))  # TOTALSIZE no longer adds up

    frame = spark.read.format("rmq").load(str(copy))
    with pytest.raises(Exception) as raised:
        frame.count()
    message = str(raised.value)
    # CorruptRecordError from the Python source, CorruptRecordException from the JVM one.
    assert "CorruptRecord" in message
    assert str(segment) in message and f"offset {bad}" in message

    stopped = spark.read.format("rmq").option("on_corrupt", "stop").load(str(copy))
    offsets = sorted(
        row["commitlog_offset"] for row in stopped.select("commitlog_offset").collect()
    )
    shard_rows = sorted(row["commitlog_offset"] for row in expected if row["shard"] == "shard-0")
    assert offsets == [offset for offset in shard_rows if not bad <= offset < SEGMENT_SIZE]


def test_a_schema_without_body_crc_ok_returns_the_same_rows_from_a_damaged_body(
    spark: SparkSession, data_dir: Path, expected: list[dict[str, Any]], tmp_path: Path
) -> None:
    # Without body_crc_ok in the schema no CRC is checked (it would only fill that
    # column): the rows must still be those of the full read, a damaged body included.
    copy = tmp_path / "flipped"
    shutil.copytree(data_dir / "shard-0", copy / "shard-0")
    victim = next(
        row
        for row in expected
        if row["shard"] == "shard-0" and row["body_size"] == 1000
        and row["commitlog_offset"] < SEGMENT_SIZE
    )  # fmt: skip
    segment = copy / "shard-0" / "commitlog" / f"{0:020d}"
    data = bytearray(segment.read_bytes())
    at = data.find(victim["body"], victim["commitlog_offset"]) + 500
    data[at] ^= 0xFF
    segment.write_bytes(bytes(data))

    full = spark.read.format("rmq").load(str(copy))
    checked = {row.commitlog_offset: row.body_crc_ok for row in full.collect()}
    assert [offset for offset, ok in checked.items() if not ok] == [victim["commitlog_offset"]]
    narrow = "commitlog_offset bigint, topic string, body binary"
    wanted = sorted(
        tuple(row) for row in full.select("commitlog_offset", "topic", "body").collect()
    )
    got = sorted(
        tuple(row) for row in spark.read.format("rmq").schema(narrow).load(str(copy)).collect()
    )
    assert got == wanted and len(got) == len(checked)
