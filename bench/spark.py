"""``spark``: count and group by topic over a two-shard store, rmq source vs Parquet."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from bench.harness import (
    Benchmark,
    Case,
    Context,
    Metrics,
    NotMeasurable,
    System,
    rmq_store_class,
)

TOPICS = ("orders", "payments", "audit")
SHARDS = 2
QUEUES = 4
BODY = 256


def _check_source() -> None:
    rmq_store_class()
    try:
        import pyspark  # noqa: F401
    except Exception as exc:
        raise NotMeasurable(f"pyspark does not import ({exc}); pip install pyspark") from exc
    try:
        import rmq.spark  # noqa: F401
    except Exception as exc:
        raise NotMeasurable(
            f"rmq.spark does not import yet ({type(exc).__name__}: {exc}); "
            "Spark data source: issue 7"
        ) from exc


class SparkRun:
    """One SparkSession (local[2]) and one data set shared by the Spark systems."""

    def __init__(self, messages: int, work_dir: Path) -> None:
        self.messages = messages
        self.spark: Any = None
        self.root = work_dir / f"spark-data-{os.getpid()}"
        self.users = 0
        self.warmed: set[str] = set()

    def acquire(self) -> None:
        _check_source()
        if self.spark is None:
            self._write_data()
            import rmq.spark as rmq_spark
            from pyspark.sql import SparkSession

            self.spark = (
                SparkSession.builder.master("local[2]")
                .appName("rmq-bench")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.memory", "1g")
                .config("spark.sql.shuffle.partitions", "4")
                .getOrCreate()
            )
            register = getattr(rmq_spark, "register", None)
            if register is not None:
                register(self.spark)
        self.users += 1

    def release(self) -> None:
        self.users -= 1
        if self.users <= 0 and self.spark is not None:
            self.spark.stop()
            self.spark = None
            self.warmed.clear()
            shutil.rmtree(self.root, ignore_errors=True)

    def _write_data(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq
        import rmq

        shutil.rmtree(self.root, ignore_errors=True)
        data = self.root / "broker"
        rows: dict[str, list[Any]] = {
            "shard": [],
            "topic": [],
            "queue_id": [],
            "queue_offset": [],
            "tags": [],
            "body": [],
            "store_timestamp": [],
        }
        body = os.urandom(BODY)
        per_shard = self.messages // SHARDS
        for shard in range(SHARDS):
            with rmq.Store(str(data / f"shard-{shard}"), commitlog_segment_size=64 << 20) as st:
                for start in range(0, per_shard, 128):
                    n = min(128, per_shard - start)
                    topic = TOPICS[(start // 128) % len(TOPICS)]
                    batch = [rmq.Message(body, tags="TagA") for _ in range(n)]
                    st.put_batch(topic, (start // 128) % QUEUES, batch)
                for topic in TOPICS:
                    for q in range(QUEUES):
                        off = st.min_offset(topic, q)
                        while True:
                            msgs = st.get(topic, q, off, 1024)
                            if not msgs:
                                break
                            for m in msgs:
                                rows["shard"].append(shard)
                                rows["topic"].append(topic)
                                rows["queue_id"].append(q)
                                rows["queue_offset"].append(m.queue_offset)
                                rows["tags"].append(m.tags)
                                rows["body"].append(m.body)
                                rows["store_timestamp"].append(m.store_timestamp)
                            off += len(msgs)
        pq.write_table(pa.table(rows), str(self.root / "messages.parquet"))

    def frame(self, source: str) -> Any:
        if source == "rmq":
            return self.spark.read.format("rmq").load(str(self.root / "broker"))
        return self.spark.read.parquet(str(self.root / "messages.parquet"))


def build(ctx: Context) -> Benchmark:
    messages = ctx.pick(3_000, 300_000, 3_000_000)
    shared = SparkRun(messages, ctx.work_dir)

    def runner(source: str) -> Any:
        def run(case: Case, workdir: Path) -> Metrics:
            if source not in shared.warmed:  # first query of a source: JVM and caches warm up
                shared.frame(source).count()
                shared.warmed.add(source)
            t0 = time.perf_counter()
            df = shared.frame(source)
            if case.params["query"] == "count":
                n = df.count()
            else:
                n = sum(r["count"] for r in df.groupBy("topic").count().collect())
            seconds = time.perf_counter() - t0
            if n != messages // SHARDS * SHARDS:
                raise RuntimeError(f"{source}: {n} rows, expected {messages}")
            return {"seconds": seconds, "rows_per_s": n / seconds}

        return run

    def decoder(case: Case, workdir: Path) -> Metrics:
        rmq_store_class()
        import rmq._rmqcore as core

        decoder_cls = getattr(core, "SegmentDecoder", None)
        if decoder_cls is None:
            raise NotMeasurable("rmq._rmqcore has no SegmentDecoder yet (issue 7)")
        segments = sorted((shared.root / "broker").glob("shard-*/commitlog/*"))
        rows = 0
        scanned = 0
        t0 = time.perf_counter()
        for seg in segments:
            dec = decoder_cls(str(seg))
            pos = 0
            while True:
                batch = dec.decode(pos, verify_crc=True, max_rows=8192)
                rows += batch.num_rows
                scanned += batch.next_position - pos
                pos = batch.next_position
                if batch.end is not None:
                    if batch.end == "invalid":
                        raise RuntimeError(f"decoder stopped at an invalid record in {seg}")
                    break
        seconds = time.perf_counter() - t0
        if rows != messages // SHARDS * SHARDS:
            raise RuntimeError(f"decoder: {rows} rows, expected {messages}")
        return {
            "seconds": seconds,
            "rows_per_s": rows / seconds,
            "gb_per_s": scanned / seconds / 1e9,
        }

    return Benchmark(
        name="spark",
        title="Spark count and group by topic over shard files",
        description=(
            f"{messages:,} messages of {BODY} B over {len(TOPICS)} topics in {SHARDS} shard "
            "directories, read by Spark local[2]: through spark.read.format('rmq') and from "
            "a Parquet file of the same rows (written beforehand, not timed). The first query "
            "of each source runs once untimed (JVM warm-up). The native decoder alone reads "
            "the same segments without Spark."
        ),
        cases=[
            Case("count", {"query": "count"}),
            Case("group by topic", {"query": "group"}),
        ],
        systems=[
            System(
                "rmq source",
                runner("rmq"),
                role="rmq",
                setup=shared.acquire,
                teardown=shared.release,
                isolate=False,
            ),
            System(
                "parquet",
                runner("parquet"),
                role="peer",
                setup=shared.acquire,
                teardown=shared.release,
                isolate=False,
                note="same rows in one Parquet file (pyarrow), spark.read.parquet",
            ),
            System(
                "native decoder",
                decoder,
                role="baseline",
                setup=shared.acquire,
                teardown=shared.release,
                isolate=False,
                cases=["count"],
                note="rmq._rmqcore.SegmentDecoder over every segment, all columns, CRC "
                "checked, one thread (GB/s = record bytes decoded per second on one core)",
            ),
        ],
        primary="rows_per_s",
        parameters={"messages": messages, "body": BODY, "shards": SHARDS, "topics": TOPICS},
        columns={"rows_per_s": "rows/s", "seconds": "seconds", "gb_per_s": "GB/s"},
    )
