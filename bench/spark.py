"""``spark``: count and group by topic over a two-shard store, rmq source vs Parquet; and
streaming from a running broker into Parquet, rmq's stream source vs Spark's Kafka source
(``bench/spark_stream.py``)."""

from __future__ import annotations

import os
import shutil
import subprocess
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
from bench.spark_stream import (
    QUEUES as STREAM_QUEUES,
)
from bench.spark_stream import (
    KafkaStreamBroker,
    RmqPythonStream,
    RmqStreamBroker,
    payload,
    stream_runner,
)

TOPICS = ("orders", "payments", "audit")
SHARDS = 2
QUEUES = 4
BODY = 256
#: Builds the JVM reader's jar (what a user of ``format("rmq")`` gets when it is built).
BUILD_JVM_READER = Path(__file__).resolve().parent.parent / "scripts" / "build-spark-jvm"


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
    """One SparkSession (local[2]) and one data set shared by the Spark systems. With
    ``kafka``, the session gets Spark's Kafka source (fetched with Maven on first use);
    ``kafka_problem`` says why not when it cannot."""

    def __init__(self, messages: int, work_dir: Path, kafka: bool = False) -> None:
        self.messages = messages
        self.spark: Any = None
        self.root = work_dir / f"spark-data-{os.getpid()}"
        self.users = 0
        self.warmed: set[str] = set()
        self.kafka = kafka
        self.kafka_problem: str | None = None
        self.kafka_note = ""

    def acquire(self) -> None:
        _check_source()
        if self.spark is None:
            self._write_data()
            import rmq.spark as rmq_spark
            from pyspark.sql import SparkSession

            builder = (
                SparkSession.builder.master("local[2]")
                .appName("rmq-bench")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.driver.memory", "1g")
                .config("spark.sql.shuffle.partitions", "4")
            )
            jars = self._kafka_jars() + self._jvm_jars()
            if jars:
                builder = builder.config("spark.jars", ",".join(jars))
            self.spark = builder.getOrCreate()
            register = getattr(rmq_spark, "register", None)
            if register is not None:
                register(self.spark)
        self.users += 1

    def _jvm_jars(self) -> list[str]:
        """The JVM reader, built now (cargo and javac are incremental) so that the batch
        rows measure the current sources."""
        import rmq.spark as rmq_spark

        subprocess.run(["bash", str(BUILD_JVM_READER)], check=True, stdout=subprocess.DEVNULL)
        return rmq_spark.jvm_jars()

    def _kafka_jars(self) -> list[str]:
        if not self.kafka:
            return []
        from bench.peers.spark_kafka import connector

        try:
            found = connector()
        except NotMeasurable as exc:
            self.kafka_problem = str(exc)
            return []
        self.kafka_note = found.note
        return [str(jar) for jar in found.jars]

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
        import rmq.spark as rmq_spark

        if source == "rmq":
            return self.spark.read.format("rmq").load(str(self.root / "broker"))
        if source == "python":
            # The Python source, under the name it has beside the JVM reader.
            name = "rmq_python" if rmq_spark.jvm_reader_loaded(self.spark) else "rmq"
            return self.spark.read.format(name).load(str(self.root / "broker"))
        return self.spark.read.parquet(str(self.root / "messages.parquet"))


def build(ctx: Context) -> Benchmark:
    messages = ctx.pick(3_000, 300_000, 3_000_000)
    streamed = ctx.pick(1_000, 200_000, 1_000_000)
    # The tiny size (the smoke test) checks that the cases run, not how fast: two
    # micro-batches and no warm-up query.
    batches, warm_up = ctx.pick(2, 10, 10), ctx.size != "tiny"
    kafka_skipped = bool({"kafka", "java", "kafka source"} & ctx.skip)
    shared = SparkRun(messages, ctx.work_dir, kafka=not kafka_skipped)
    body = payload(BODY)
    rmq_broker = RmqStreamBroker(streamed, body)
    kafka_broker = KafkaStreamBroker(streamed, body)
    batch_cases = ["count", "group by topic"]
    stream_cases = ["stream, all columns", "stream, same columns"]

    parameters: dict[str, Any] = {
        "messages": messages,
        "streamed": streamed,
        "body": BODY,
        "shards": SHARDS,
        "topics": TOPICS,
        "stream_queues": STREAM_QUEUES,
        "goals": {
            "batch": "rmq source >= 1x parquet on count and group by",
            "stream": "rmq source >= 1.5x kafka source rows/s, micro-batch p99 no worse",
        },
    }

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

    batch_rmq = runner("rmq")
    batch_python = runner("python")
    stream_python = stream_runner(
        lambda: shared.spark,
        RmqPythonStream(rmq_broker),
        streamed,
        shared.warmed,
        batches,
        warm_up,
    )

    def python_run(case: Case, workdir: Path) -> Metrics:
        if case.params["query"] == "stream":
            return stream_python(case, workdir)
        return batch_python(case, workdir)

    stream_rmq = stream_runner(
        lambda: shared.spark, rmq_broker, streamed, shared.warmed, batches, warm_up
    )

    def rmq_run(case: Case, workdir: Path) -> Metrics:
        if case.params["query"] == "stream":
            return stream_rmq(case, workdir)
        return batch_rmq(case, workdir)

    def rmq_teardown() -> None:
        rmq_broker.stop()
        shared.release()

    def kafka_setup() -> None:
        shared.acquire()
        if shared.kafka_problem is not None:
            shared.release()
            raise NotMeasurable(shared.kafka_problem)
        parameters["kafka_source"] = shared.kafka_note

    def kafka_teardown() -> None:
        kafka_broker.stop()
        shared.release()

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

    def spark_system(name: str, run: Any, role: str, cases: list[str], note: str) -> System:
        return System(
            name,
            run,
            role=role,
            setup=shared.acquire,
            teardown=shared.release,
            isolate=False,
            cases=cases,
            note=note,
        )

    return Benchmark(
        name="spark",
        title="Spark over shard files (count, group by) and streaming from a broker",
        description=(
            f"Batch: {messages:,} messages of {BODY} B over {len(TOPICS)} topics in {SHARDS} "
            "shard directories, read by Spark local[2]: through spark.read.format('rmq') and "
            "from a Parquet file of the same rows (written beforehand, not timed). The first "
            "query of each source runs once untimed (JVM warm-up). The native decoder alone "
            f"reads the same segments without Spark. Streaming: {streamed:,} messages of "
            f"{BODY} B (one body) pre-loaded into rmq serve --shards 2 and into Kafka 4.1, "
            f"topics of {STREAM_QUEUES} queues (partitions); each round a streaming query "
            "reads them from the earliest offsets into Parquet with a new checkpoint "
            "(Trigger.AvailableNow, maxOffsetsPerTrigger = N/10; N/2 at size tiny). rows/s "
            "over the query's life (start() to its end); steady rows/s: the micro-batches after "
            "the first over their own durations; micro-batch p50/p99 of recentProgress's "
            "durationMs.triggerExecution. 'all columns': each source's whole row; 'same "
            "columns': topic, queue/partition, offset, body, timestamp (rmq through "
            ".schema(...), Kafka through select). The first query of each source and case "
            "runs once untimed. The brokers start at their first streaming case and stay up "
            "(idle) until the end."
        ),
        cases=[
            Case("count", {"query": "count"}),
            Case("group by topic", {"query": "group"}),
            Case("stream, all columns", {"query": "stream", "same_columns": False}),
            Case("stream, same columns", {"query": "stream", "same_columns": True}),
        ],
        systems=[
            System(
                "rmq source",
                rmq_run,
                role="rmq",
                setup=shared.acquire,
                teardown=rmq_teardown,
                isolate=False,
            ),
            spark_system(
                "parquet",
                runner("parquet"),
                "peer",
                batch_cases,
                "same rows in one Parquet file (pyarrow), spark.read.parquet",
            ),
            spark_system(
                "rmq python source",
                python_run,
                "baseline",
                batch_cases + stream_cases,
                "the Python data source (Python workers, Arrow batches of every column: "
                "PySpark's data source API prunes none), registered as 'rmq_python' beside "
                "the JVM reader and stream; 'rmq source' is the JVM reader and, for streams "
                "from a broker, the JVM stream (scripts/build-spark-jvm): no Python process; "
                "the reader decodes only the columns a batch query uses",
            ),
            spark_system(
                "native decoder",
                decoder,
                "baseline",
                ["count"],
                "rmq._rmqcore.SegmentDecoder over every segment, all columns, CRC "
                "checked, one thread (GB/s = record bytes decoded per second on one core)",
            ),
            System(
                "kafka source",
                stream_runner(
                    lambda: shared.spark, kafka_broker, streamed, shared.warmed, batches, warm_up
                ),
                role="peer",
                setup=kafka_setup,
                teardown=kafka_teardown,
                isolate=False,
                cases=stream_cases,
                tags=frozenset({"java", "kafka"}),
                note="Kafka 4.1.0 KRaft broker (512 MiB heap), topic of 8 partitions; "
                "spark.readStream.format('kafka') (spark-sql-kafka-0-10, fetched with Maven)",
            ),
        ],
        primary="rows_per_s",
        parameters=parameters,
        columns={
            "rows_per_s": "rows/s",
            "seconds": "seconds",
            "gb_per_s": "GB/s",
            "steady_rows_per_s": "steady rows/s",
            "batch_p50_ms": "batch p50 ms",
            "batch_p99_ms": "batch p99 ms",
            "batches": "batches",
        },
    )
