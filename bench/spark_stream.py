"""``spark``'s streaming cases: a topic pre-loaded into a running broker, read by a
streaming query into Parquet with a checkpoint.

rmq: ``rmq serve --shards 2``, a topic of ``QUEUES`` queues, read with
``spark.readStream.format("rmq").option("endpoint", ...)``. Kafka: Kafka 4.1 (KRaft, as in
``bench grpc``), a topic of ``QUEUES`` partitions, read with Spark's own
``spark.readStream.format("kafka")``. Both hold the same ``N`` messages with the same body
(one printable payload of ``BODY`` bytes; Kafka's records have no key), loaded once per
run, before anything is timed. Each round starts a new query from the earliest offsets
with a new checkpoint, ``maxOffsetsPerTrigger`` = N / ``BATCHES`` and
``Trigger.AvailableNow``, so the query ends when it has read the N messages in about
``BATCHES`` micro-batches.

Like with like: both queries get the same explicit options (``startingOffsets``,
``maxOffsetsPerTrigger``, the trigger) and every other option at its default, so each
source plans its micro-batches as a user gets: Kafka's one Spark partition per topic
partition (8 tasks a micro-batch) and ~N / ``BATCHES`` / ``QUEUES`` offsets per partition
(its rounding gives one micro-batch more), rmq's partitions of ``minRowsPerPartition``
(10,000: 2 tasks a micro-batch of the quick size).

Figures: rows/s over the query's whole life (``start()`` to its end: planning, offsets,
every micro-batch and its commit); the steady rate, rows/s of the micro-batches after the
first over their own durations (what a long-running pipeline sees: each source's one-off
start-up cost is left out, wherever it falls); and the micro-batches' durations
(``durationMs.triggerExecution`` of ``query.recentProgress``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.basics import NotMeasurable
from bench.harness import Case, Metrics, percentile

QUEUES = 8
BATCHES = 10
QUERY_TIMEOUT = 1800.0
_topics = itertools.count()

#: Per source, the columns of the "same columns" case: topic, queue, offset, body, time.
RMQ_SAME_COLUMNS = (
    "topic string, queue_id int, queue_offset long, body binary, store_timestamp timestamp"
)
KAFKA_SAME_COLUMNS = ("topic", "partition", "offset", "value", "timestamp")


def payload(size: int) -> bytes:
    """One printable body (no newline: Kafka's producer tool splits its payload file on it)."""
    return os.urandom(size).hex()[:size].encode()


def _topic() -> str:
    return f"spark_stream_{os.getpid()}_{next(_topics)}"


class RmqStreamBroker:
    """``rmq serve --shards 2`` holding one topic of ``messages`` messages, started and
    loaded on first use (so a broker that cannot start fails the streaming cases only)."""

    def __init__(self, messages: int, body: bytes) -> None:
        self.messages = messages
        self.body = body
        self.broker: Any = None
        self.topic = ""

    def ensure(self) -> None:
        if self.broker is not None:
            return
        from bench.grpc_systems import RmqBroker, client_class

        broker = RmqBroker()
        broker.setup()
        self.broker = broker
        self.topic = _topic()
        client = client_class()(broker.endpoint)
        try:
            client.create_topic(self.topic, queues=QUEUES)
            with client.producer() as producer:
                for _ in range(self.messages):
                    producer.send(self.topic, self.body)
                if not producer.flush(300):
                    raise RuntimeError("rmq producer: messages unsent after 300 s")
        finally:
            client.close()

    def frame(self, spark: Any, same_columns: bool, per_trigger: int, source: str = "rmq") -> Any:
        """The query's DataFrame through ``source``: ``rmq`` is what a user gets (the JVM
        stream when the jar is loaded), ``rmq_python`` the Python source beside it."""
        self.ensure()
        reader = (
            spark.readStream.format(source)
            .option("endpoint", self.broker.endpoint)
            .option("topic", self.topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", str(per_trigger))
        )
        if same_columns:
            reader = reader.schema(RMQ_SAME_COLUMNS)
        return reader.load()

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.teardown()
            self.broker = None


class RmqPythonStream:
    """The same broker and topic read through the Python source (``rmq_python``, beside the
    JVM stream that ``format("rmq")`` is once the jar is loaded)."""

    def __init__(self, broker: RmqStreamBroker) -> None:
        self.broker = broker

    def frame(self, spark: Any, same_columns: bool, per_trigger: int) -> Any:
        import rmq.spark as rmq_spark

        name = "rmq_python" if rmq_spark.jvm_reader_loaded(spark) else "rmq"
        return self.broker.frame(spark, same_columns, per_trigger, source=name)


class KafkaStreamBroker:
    """Kafka 4.1 holding one topic of ``messages`` records, started and loaded on first use."""

    def __init__(self, messages: int, body: bytes) -> None:
        self.messages = messages
        self.body = body
        self.kafka: Any = None
        self.topic = ""

    def ensure(self) -> None:
        if self.kafka is not None:
            return
        from bench.peers.kafka import Kafka

        kafka = Kafka()
        try:
            kafka.start()
        except BaseException:
            kafka.stop()
            raise
        self.kafka = kafka
        self.topic = _topic()
        kafka.create_topic(self.topic, QUEUES)
        sent = kafka.produce(self.topic, self.messages, len(self.body), payload=self.body)
        if int(sent["messages"]) != self.messages:
            raise RuntimeError(f"Kafka producer sent {sent['messages']} of {self.messages}")

    def frame(self, spark: Any, same_columns: bool, per_trigger: int) -> Any:
        self.ensure()
        frame = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", self.kafka.bootstrap)
            .option("subscribe", self.topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", str(per_trigger))
            .load()
        )
        return frame.select(*KAFKA_SAME_COLUMNS) if same_columns else frame

    def stop(self) -> None:
        if self.kafka is not None:
            self.kafka.stop()
            self.kafka = None


def start_into_parquet(frame: Any, out: Path, checkpoint: Path) -> Any:
    """An AvailableNow query of ``frame`` into Parquet files under ``out``, started: it
    reads what the source held when it started, then ends (the tests run it too)."""
    return (
        frame.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )


def run_query(frame: Any, workdir: Path, expected: int) -> Metrics:
    """Run one AvailableNow query of ``frame`` into Parquet under ``workdir``; its figures."""
    out, checkpoint = workdir / "out", workdir / "checkpoint"
    shutil.rmtree(workdir, ignore_errors=True)
    t0 = time.perf_counter()
    query = start_into_parquet(frame, out, checkpoint)
    try:
        query.awaitTermination(QUERY_TIMEOUT)
    finally:
        if query.isActive:
            query.stop()
    seconds = time.perf_counter() - t0
    failure = query.exception()
    if failure is not None:
        raise RuntimeError(f"streaming query failed: {failure}")
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    rows = sum(int(p["numInputRows"]) for p in batches)
    written = frame.sparkSession.read.parquet(str(out)).count()
    if rows != expected or written != expected:
        raise RuntimeError(f"read {rows} and wrote {written} rows, expected {expected}")
    durations = sorted(float(p["durationMs"]["triggerExecution"]) for p in batches)
    # A pipeline runs for hours: what it sees is the rate once the query is going. Each
    # source pays a start-up cost once (rmq: Spark starting a Python worker for the query
    # before its first micro-batch; Kafka: its consumers inside its first micro-batch), so
    # the steady rate leaves out everything up to the end of the first micro-batch.
    later = batches[1:]
    later_ms = sum(float(p["durationMs"]["triggerExecution"]) for p in later)
    return {
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "batches": float(len(batches)),
        "batch_p50_ms": percentile(durations, 50),
        "batch_p99_ms": percentile(durations, 99),
        "in_batches_s": sum(durations) / 1000,
        "steady_rows_per_s": sum(int(p["numInputRows"]) for p in later) * 1000 / later_ms
        if later_ms > 0
        else 0.0,
    }


def stream_runner(
    spark: Callable[[], Any],
    source: RmqStreamBroker | RmqPythonStream | KafkaStreamBroker,
    messages: int,
    warmed: set[str],
    batches: int = BATCHES,
    warm_up: bool = True,
) -> Callable[[Case, Path], Metrics]:
    """A system's ``run`` for the streaming cases, in about ``batches`` micro-batches. With
    ``warm_up``, the first query of each case per session is run once untimed (JVM, Python
    workers and the broker's caches warm up)."""
    per_trigger = max(1, -(-messages // batches))

    def run(case: Case, workdir: Path) -> Metrics:
        session = spark()
        if session is None:
            raise NotMeasurable("no Spark session")
        same = bool(case.params["same_columns"])
        key = f"{type(source).__name__}:{case.label}"
        if warm_up and key not in warmed:
            run_query(source.frame(session, same, per_trigger), workdir / "warm-up", messages)
            warmed.add(key)
        return run_query(source.frame(session, same, per_trigger), workdir / "query", messages)

    return run
