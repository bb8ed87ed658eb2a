"""The JVM reader of ``spark.read.format("rmq")`` (crates/rmqjvm) against the Python source
(``rmq_python`` beside it) on the same real store: the same rows, the same corrupt-record
error, only the needed columns decoded, clear errors at planning; and, in a Spark without
the jar, ``format("rmq")`` still reads through the Python source."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import rmq.spark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tests.test_spark_source import SEGMENT_SIZE, spark_rows, write_shard

PYTHON_SOURCE = "rmq_python"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("jvm-reader-data")
    write_shard(root / "shard-0", "127.0.0.1:10911", seed=3)
    write_shard(root / "shard-1", "[::1]:10912", seed=4)
    return root


def plan(frame: DataFrame) -> str:
    return str(frame._jdf.queryExecution().executedPlan().toString())


def body_bytes(spark: SparkSession) -> int:
    """Body bytes the JVM readers of this (local-mode) JVM have decoded so far."""
    return int(spark._jvm.rmq.spark.ReadCounters.bodyBytes())  # type: ignore[union-attr]


def test_the_session_reads_rmq_through_the_jvm_reader(spark: SparkSession, data_dir: Path) -> None:
    assert rmq.spark.jvm_reader_loaded(spark)
    assert "native decoder" in plan(spark.read.format("rmq").load(str(data_dir)))
    assert "native decoder" not in plan(spark.read.format(PYTHON_SOURCE).load(str(data_dir)))


def test_every_row_equals_the_python_sources(spark: SparkSession, data_dir: Path) -> None:
    def rows(source: str, **options: str) -> list[dict[str, Any]]:
        frame = spark.read.format(source).options(**options).load(str(data_dir))
        found = spark_rows(frame)
        return sorted(found, key=lambda row: (row["shard"], row["commitlog_offset"]))

    jvm = rows("rmq")
    assert len(jvm) == 800
    assert jvm == rows(PYTHON_SOURCE)
    # Unicode tags, several keys, properties, hosts of both families, empty bodies.
    assert {row["tags"] for row in jvm} >= {None, "TagA", "标签", "тег-1"}
    assert any(len(row["keys"]) == 3 for row in jvm)
    assert any(row["properties"] for row in jvm)
    assert {row["queue_id"] for row in jvm} == {0, 1, 2, 3}
    assert any(row["body_size"] == 0 for row in jvm)
    unchecked = {"verify_crc": "false", "split_size": "8192"}
    assert rows("rmq", **unchecked) == rows(PYTHON_SOURCE, **unchecked)


def test_a_count_decodes_no_body_and_a_projection_only_its_columns(
    spark: SparkSession, data_dir: Path
) -> None:
    frame = spark.read.format("rmq").load(str(data_dir))
    before = body_bytes(spark)
    assert frame.count() == 800
    assert frame.groupBy("topic").count().count() == 3
    assert frame.select("topic", "keys", "properties").where(F.col("queue_id") == 1).count()
    assert body_bytes(spark) == before, "no query above needs the body"
    total = sum(row.body_size for row in frame.select("body_size").collect())
    assert body_bytes(spark) == before
    assert sum(len(row.body) for row in frame.select("body").collect()) == total
    assert body_bytes(spark) == before + total


def damage(data_dir: Path, copy: Path) -> tuple[Path, int]:
    """A copy of shard-0 with a record in the middle of its first segment made invalid."""
    shutil.copytree(data_dir / "shard-0", copy / "shard-0")
    segment = copy / "shard-0" / "commitlog" / f"{0:020d}"
    with rmq.Store(copy / "shard-0", read_only=True) as store:
        offsets = sorted(
            message.commitlog_offset
            for topic in store.topics()
            for queue in range(4)
            for message in store.get(topic, queue, store.min_offset(topic, queue), 1000)
            if message.commitlog_offset < SEGMENT_SIZE
        )
    bad = offsets[len(offsets) // 2]
    with segment.open("r+b") as file:
        file.seek(bad)
        (length,) = struct.unpack(">i", file.read(4))
        file.seek(bad)
        file.write(struct.pack(">i", length + 3))
    return segment, bad


def test_a_corrupt_record_fails_the_task_with_the_python_sources_message(
    spark: SparkSession, data_dir: Path, tmp_path: Path
) -> None:
    segment, bad = damage(data_dir, tmp_path / "damaged")
    messages = {}
    for source in ("rmq", PYTHON_SOURCE):
        with pytest.raises(Exception) as raised:
            spark.read.format(source).load(str(tmp_path / "damaged")).count()
        text = str(raised.value)
        start = text.index(f"corrupt data in {segment} at offset {bad}")
        messages[source] = text[start:].splitlines()[0]
    assert messages["rmq"] == messages[PYTHON_SOURCE]
    stopped = {
        source: spark.read.format(source)
        .option("on_corrupt", "stop")
        .load(str(tmp_path / "damaged"))
        .count()
        for source in ("rmq", PYTHON_SOURCE)
    }
    assert stopped["rmq"] == stopped[PYTHON_SOURCE] > 0


def planning_error(spark: SparkSession, frame: DataFrame) -> str:
    """The error of planning ``frame`` (no task runs: planning fails first)."""
    with pytest.raises(Exception) as raised:
        frame._jdf.queryExecution().executedPlan()  # type: ignore[operator]
    return str(raised.value)


def test_a_missing_directory_or_a_bad_option_fails_at_planning(
    spark: SparkSession, data_dir: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere"
    text = planning_error(spark, spark.read.format("rmq").load(str(missing)))
    assert f"no such file or directory: {missing}" in text
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no commit log under" in planning_error(spark, spark.read.format("rmq").load(str(empty)))
    cases = {
        "unknown option(s) topic": {"topic": "x"},
        "option batch_rows=0 is below 1": {"batch_rows": "0"},
        "option on_corrupt='skip' is not one of fail, stop": {"on_corrupt": "skip"},
        "option verify_crc='maybe' is not true or false": {"verify_crc": "maybe"},
        "is neither epoch milliseconds nor an ISO 8601 time": {"store_time_start": "soon"},
    }
    for message, options in cases.items():
        frame = spark.read.format("rmq").options(**options).load(str(data_dir))
        assert message in planning_error(spark, frame), options


def test_without_the_jar_format_rmq_reads_through_the_python_source(
    data_dir: Path, tmp_path: Path
) -> None:
    # A Spark of its own (this process's JVM has the jar): no spark.jars.
    script = textwrap.dedent(
        f"""
        import rmq.spark
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.driver.host", "127.0.0.1").getOrCreate())
        rmq.spark.register(spark)
        assert not rmq.spark.jvm_reader_loaded(spark)
        frame = spark.read.format("rmq").load({str(data_dir)!r})
        plan = str(frame._jdf.queryExecution().executedPlan().toString())
        print("rows", frame.count(), "jvm" if "native decoder" in plan else "python")
        spark.stop()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYSPARK_SUBMIT_ARGS": "pyspark-shell"},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rows 800 python" in done.stdout
