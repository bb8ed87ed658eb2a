"""The ``rmq`` Spark source over tiered stores (``tier_url``), in local mode, against a
real S3-compatible server (versitygw, bench/peers/s3.py): two shards laid out
as ``rmq serve --tier-url`` lays them out (``PREFIX/shard-N``), their sealed segments
uploaded and evicted, read straight from the bucket; read with their directories too,
each message once; a changed object fails the job naming it; bad options fail when the
query is planned."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rmq
import rmq.spark
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F
from rmq.spark.source import SCHEMA

from bench.peers.common import free_port
from bench.peers.s3 import S3Server
from tests.support.spark_session import local_spark  # fails these tests without Java

SEGMENT = 64 * 1024
TOPICS = ("orders", "payments", "audit")
PREFIX = "broker"


@pytest.fixture(scope="module")
def tier_env(s3_server: S3Server) -> Iterator[S3Server]:
    """The server's AWS_* variables in this process (the stores upload with them)."""
    s3_server.start()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in s3_server.aws_env().items():
            patch.setenv(name, value)
        yield s3_server


@pytest.fixture(scope="module")
def spark(tier_env: S3Server) -> Iterator[SparkSession]:
    # The test server's keys, not real ones.
    with local_spark("rmq-spark-tier-tests", tier_env.aws_env()) as session:
        yield session


def tiered_store(
    path: Path, server: S3Server, url: str, count: int, seed: int, **options: Any
) -> list[dict[str, Any]]:
    """Write ``count`` messages to a tiered store, upload its sealed segments and run
    retention; what was written, as rows."""
    written = []
    store = rmq.Store(
        str(path),
        commitlog_segment_size=SEGMENT,
        tier_url=url,
        tier_endpoint=server.endpoint,
        **options,
    )
    with store:
        for index in range(count):
            topic = TOPICS[index % len(TOPICS)]
            body = f"{seed}:{index} ".encode() * (1 + (index * 7 + seed) % 40)
            tags = None if index % 4 == 0 else f"t{index % 3}"
            keys = [f"k{seed}-{index}"]
            result = store.put(topic, body, queue_id=index % 2, tags=tags, keys=keys)
            written.append(
                {
                    "shard": path.name,
                    "topic": topic,
                    "queue_id": index % 2,
                    "queue_offset": result.queue_offset,
                    "commitlog_offset": result.commitlog_offset,
                    "msg_id": result.msg_id,
                    "tags": tags,
                    "keys": keys,
                    "body": body,
                }
            )
        assert store.upload_to_tier() >= 3
        store.run_retention()
    return written


@pytest.fixture(scope="module")
def broker(
    tier_env: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str, list[dict[str, Any]]]:
    """A broker's data directory of two tiered shards: shard-0 keeps only its active
    segment, shard-1 also keeps its last two uploaded ones (so they are in both
    places). The directory, the broker's tier url and every message written."""
    bucket = tier_env.create_bucket(f"spark-tier-{uuid.uuid4().hex[:12]}")
    url = f"s3://{bucket}/{PREFIX}"
    data = tmp_path_factory.mktemp("tiered")
    written = tiered_store(
        data / "shard-0", tier_env, f"{url}/shard-0", 1200, seed=1, local_retention_bytes=0
    )
    written += tiered_store(
        data / "shard-1",
        tier_env,
        f"{url}/shard-1",
        1500,
        seed=2,
        local_retention_bytes=3 * SEGMENT,
    )
    return data, url, written


def tier_read(spark: SparkSession, server: S3Server) -> DataFrameReader:
    """``spark.read.format("rmq")`` with the server's endpoint (the engine does not take
    an http endpoint from AWS_ENDPOINT_URL)."""
    return spark.read.format("rmq").option("tier_endpoint", server.endpoint)


def filtered_by_spark(frame: DataFrame) -> bool:
    """Whether Spark's physical plan still holds a Filter (the reader took none over)."""
    plan = str(frame._jdf.queryExecution().executedPlan().toString())
    return re.search(r"\bFilter\b", plan) is not None


def local_starts(store: Path) -> set[int]:
    return {int(p.name) for p in (store / "commitlog").iterdir()}


def bucket_starts(server: S3Server, url: str) -> set[int]:
    bucket, prefix = url.removeprefix("s3://").split("/", 1)
    listed = server.client().list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/commitlog/")
    return {int(item["Key"].rsplit("/", 1)[1]) for item in listed.get("Contents", [])}


def rows(frame: DataFrame) -> tuple[dict[tuple[str, int], dict[str, Any]], int]:
    """The rows by (shard, commitlog_offset), and how many partitions held them (one
    Spark job: each action plans the read again)."""
    found = {}
    partitions = set()
    for row in frame.select(*COLUMNS, F.spark_partition_id().alias("partition")).collect():
        values = row.asDict()
        partitions.add(values.pop("partition"))
        values["body"] = bytes(values["body"])
        found[(values["shard"], values["commitlog_offset"])] = values
    return found, len(partitions)


# The source's columns from the shard to the keys, and the body: what identifies a row and
# what it carries (the rest are derived or fixed for these messages).
COLUMNS = (*SCHEMA.fieldNames()[: SCHEMA.fieldNames().index("keys") + 1], "body")


def by_key(written: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(row["shard"], row["commitlog_offset"]): row for row in written}


def test_evicted_segments_are_read_from_the_bucket_as_written(
    spark: SparkSession, tier_env: S3Server, broker: tuple[Path, str, list[dict[str, Any]]]
) -> None:
    data, url, written = broker
    in_bucket = {name: bucket_starts(tier_env, f"{url}/{name}") for name in ("shard-0", "shard-1")}
    # shard-0 kept only its active segment: everything else is in the bucket only.
    assert len(local_starts(data / "shard-0")) == 1
    assert not local_starts(data / "shard-0") & in_bucket["shard-0"]
    assert len(in_bucket["shard-0"]) >= 3
    # Each object is queue-grouped (format.md §7.1.1): its footer's magic ends it, so
    # the rows below come from objects put back in log order by the native decoder.
    bucket, prefix = url.removeprefix("s3://").split("/", 1)
    for start in in_bucket["shard-0"]:
        key = f"{prefix}/shard-0/commitlog/{start:020d}"
        assert tier_env.object_path(bucket, key).read_bytes()[-4:] == b"RMQG", key

    # The broker's url: its shard-N prefixes, one partition per segment in the bucket.
    frame = tier_read(spark, tier_env).option("tier_url", url).load()
    uploaded = [
        row
        for row in written
        if any(
            start <= row["commitlog_offset"] < start + SEGMENT for start in in_bucket[row["shard"]]
        )
    ]
    assert len(uploaded) > len(written) // 2
    found, partitions = rows(frame)
    assert found == by_key(uploaded)
    assert partitions == sum(len(starts) for starts in in_bucket.values())

    # One shard's own url (the prefix's last part names the shard), filters pushed down
    # as for files.
    one = tier_read(spark, tier_env).option("tier_url", f"{url}/shard-1/").load()
    filtered = one.where(F.col("topic").isin("payments", "audit") & (F.col("shard") == "shard-1"))
    assert not filtered_by_spark(filtered)
    found, _ = rows(filtered)
    assert found == by_key(
        [r for r in uploaded if r["shard"] == "shard-1" and r["topic"] in ("payments", "audit")]
    )


def test_path_and_tier_url_read_each_message_once(
    spark: SparkSession, tier_env: S3Server, broker: tuple[Path, str, list[dict[str, Any]]]
) -> None:
    data, url, written = broker
    # shard-1's last uploaded segments are both local and in the bucket.
    assert local_starts(data / "shard-1") & bucket_starts(tier_env, f"{url}/shard-1")
    both = tier_read(spark, tier_env).option("tier_url", url).load(str(data))
    found, partitions = rows(both)
    assert len(found) == len(written) and found == by_key(written)
    in_bucket = sum(len(bucket_starts(tier_env, f"{url}/{s}")) for s in ("shard-0", "shard-1"))
    local = sum(len(local_starts(data / s)) for s in ("shard-0", "shard-1"))
    overlap = len(local_starts(data / "shard-1") & bucket_starts(tier_env, f"{url}/shard-1"))
    assert partitions == in_bucket + local - overlap

    # One store directory and its own tier; split_size cuts the local files only.
    split = (
        tier_read(spark, tier_env)
        .option("tier_url", f"{url}/shard-0")
        .option("split_size", "16384")
        .option("store_time_start", "0")
        .load(str(data / "shard-0"))
    )
    offsets = [row.commitlog_offset for row in split.select("commitlog_offset").collect()]
    assert sorted(offsets) == sorted(
        r["commitlog_offset"] for r in written if r["shard"] == "shard-0"
    )


def test_a_changed_object_fails_the_job_naming_it(
    spark: SparkSession, tier_env: S3Server, tmp_path: Path
) -> None:
    bucket = tier_env.create_bucket(f"spark-tier-changed-{uuid.uuid4().hex[:8]}")
    url = f"s3://{bucket}/store"
    written = tiered_store(tmp_path / "store", tier_env, url, 900, seed=3, local_retention_bytes=0)
    key = f"store/commitlog/{0:020d}"
    target = tier_env.object_path(bucket, key)
    data = bytearray(target.read_bytes())
    at = data.index(written[5]["body"])
    data[at] ^= 0x20  # still a well-formed record: only the object's CRC32 tells
    target.write_bytes(bytes(data))

    frame = tier_read(spark, tier_env).option("tier_url", url).load()
    with pytest.raises(Exception) as raised:
        frame.count()
    message = str(raised.value)
    assert "CorruptRecordError" in message and f"s3://{bucket}/{key}" in message
    assert "differs from the segment uploaded" in message

    # on_corrupt=stop salvages the other segments, none of the changed one's rows.
    stopped = tier_read(spark, tier_env).option("tier_url", url).option("on_corrupt", "stop").load()
    offsets = {row.commitlog_offset for row in stopped.select("commitlog_offset").collect()}
    assert offsets and min(offsets) >= SEGMENT
    assert offsets <= {row["commitlog_offset"] for row in written}


def test_bad_options_fail_when_the_query_is_planned(
    spark: SparkSession,
    tier_env: S3Server,
    broker: tuple[Path, str, list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    _, url, _ = broker
    bucket = url.removeprefix("s3://").split("/")[0]

    def fails(match: str, **options: str) -> None:
        reader = spark.read.format("rmq").option("tier_endpoint", tier_env.endpoint)
        for name, value in options.items():
            reader = reader.option(name, value)
        with pytest.raises(Exception, match=match):
            reader.load().count()

    fails(r"invalid tier_url", tier_url="http://not-s3/prefix")
    fails(r"bucket does not exist", tier_url="s3://no-such-bucket-here/x")
    fails(r"no segments in s3://", tier_url=f"s3://{bucket}/no-such-prefix")
    fails(r"could not be reached", tier_url=url, tier_endpoint=f"http://127.0.0.1:{free_port()}")
    fails(r"only applies with tier_url", path=str(tmp_path), tier_endpoint="http://x")
    fails(r"unknown option", tier_url=url, aws_secret_access_key="x")
    # The workers' keys are the first server's: a second one with another secret key
    # refuses them.
    with S3Server(tmp_path / "other", secret_key="another-secret-key-0123456789") as other:
        other.create_bucket(bucket)
        fails(r"secret key is wrong", tier_url=url, tier_endpoint=other.endpoint)
