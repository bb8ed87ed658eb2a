"""Spark pipelines through rmq: ``spark.readStream.format("rmq")`` from a real broker
(``rmq serve``) and from store files, ``df.write`` / ``df.writeStream`` into a broker.

The end-to-end test keeps a producer sending while a query writes the topic to Parquet
with a checkpoint; the query is stopped and restarted, and once run in a child driver
process on a Spark standalone master and worker (on loopback) and killed there with
SIGKILL; the Parquet output must equal what was sent, with no gap and no duplicate.

Spark sessions are slow to start, so the tests share one (local[2]) and one broker.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# pyspark, pyarrow and a JDK are test requirements (scripts/test-all installs the first
# two; Java 17 is a prerequisite of the README): missing, the tests fail, never skip.
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.fail("Spark needs Java 17 (java on PATH or JAVA_HOME)", pytrace=False)

import pyspark
import rmq
import rmq.spark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from rmq.client import Client, SendFuture
from rmq.cluster.local import LocalBroker
from rmq.spark.offsets import QueueRange, cap_offsets, group_ranges, plan_ranges
from rmq.spark.stream_options import parse_stream_options

from tests.support.brokers import Brokers
from tests.support.spark_session import local_spark

ROOT = Path(__file__).resolve().parent.parent
_names = itertools.count()


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with local_spark("rmq-spark-streaming-tests") as session:
        yield session


@pytest.fixture(scope="module")
def broker(module_brokers: Brokers) -> LocalBroker:
    return module_brokers.start(shards=2)


@pytest.fixture(scope="module")
def client(module_brokers: Brokers, broker: LocalBroker) -> Client:
    return module_brokers.client(broker)


def send_all(client: Client, topic: str, bodies: list[str], **fields: Any) -> None:
    with client.producer() as producer:
        futures = [producer.send(topic, body.encode(), **fields) for body in bodies]
        for future in futures:
            future.result(30)


def run_available_now(frame: DataFrame, out: Path, checkpoint: Path) -> StreamingQuery:
    """Run a query into Parquet until it has read what the source held when it started."""
    query = (
        frame.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert not query.isActive, "the query did not finish"
    if query.exception() is not None:
        raise AssertionError(str(query.exception()))
    return query


def collect(spark: SparkSession, options: dict[str, str], schema: str | None = None) -> list[Any]:
    """Every row an AvailableNow query with ``options`` reads (memory sink)."""
    name = f"collected_{next(_names)}"
    reader = spark.readStream.format("rmq").options(**options)
    if schema is not None:
        reader = reader.schema(schema)
    query = (
        reader.load().writeStream.format("memory").queryName(name).trigger(availableNow=True)
    ).start()
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    rows = spark.table(name).collect()
    spark.catalog.dropTempView(name)
    return rows


class Sender(threading.Thread):
    """Keeps sending numbered messages until stopped; ``sent`` is what the broker stored."""

    def __init__(self, client: Client, topic: str) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.topic = topic
        self.stopping = threading.Event()
        self.sent: list[str] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.client.producer() as producer:
                futures: list[tuple[str, SendFuture]] = []
                for number in itertools.count():
                    if self.stopping.is_set():
                        break
                    body = f"m{number}"
                    futures.append((body, producer.send(self.topic, body.encode())))
                    if number % 10 == 9:
                        time.sleep(0.02)  # about 500 messages a second
                for body, future in futures:
                    future.result(30)
                    self.sent.append(body)
        except BaseException as error:
            self.error = error

    def stop(self) -> list[str]:
        self.stopping.set()
        self.join(60)
        assert self.error is None, self.error
        return self.sent


def committed_batches(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.exists() else 0


def wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def job_command(master: str, endpoint: str, topic: str, out: Path, checkpoint: Path) -> list[str]:
    return [
        sys.executable, "-m", "tests.support.spark_stream_job", "--master", master,
        "--endpoint", endpoint, "--topic", topic, "--out", str(out),
        "--checkpoint", str(checkpoint),
    ]  # fmt: skip


def job_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), str(ROOT), *sys.path])
    return env


def test_a_query_stopped_restarted_and_killed_on_a_cluster_writes_every_message_once(
    spark: SparkSession, broker: LocalBroker, client: Client, tmp_path: Path
) -> None:
    topic = "flow"
    client.create_topic(topic, queues=4)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    cluster = StandaloneCluster(tmp_path)
    cluster.start()
    sender = Sender(client, topic)
    sender.start()
    try:
        # 1. In this process, stopped after a few micro-batches while the producer sends.
        frame = (
            spark.readStream.format("rmq")
            .option("endpoint", broker.endpoint)
            .option("topic", topic)
            .option("maxOffsetsPerTrigger", "300")
            .load()
        )
        query = (
            frame.writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds")
            .start()
        )
        wait_for(lambda: committed_batches(checkpoint) >= 2, 90, "two micro-batches")
        query.stop()
        assert query.exception() is None

        # 2. In a child process, on the standalone cluster (its executor reads rmq), killed
        # with SIGKILL once it has committed a batch.
        before = committed_batches(checkpoint)
        command = job_command(cluster.ready(), broker.endpoint, topic, out, checkpoint)
        child = subprocess.Popen(
            command, cwd=ROOT, env=job_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        try:
            wait_for(
                lambda: committed_batches(checkpoint) > before or child.poll() is not None,
                120,
                "the child's first batch",
            )
            assert child.poll() is None, child.stdout.read().decode() if child.stdout else ""
            time.sleep(0.3)  # land the kill anywhere in the next batch
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(30)
        assert cluster.executor_logs(), "no executor ran on the worker"
    finally:
        sent = sender.stop()
        cluster.stop()

    # 3. Restarted here once more, reading up to the end.
    assert len(sent) > 1000
    run_available_now(
        spark.readStream.format("rmq")
        .option("endpoint", broker.endpoint)
        .option("topic", topic)
        .load(),
        out,
        checkpoint,
    )
    rows = spark.read.parquet(str(out)).select("body", "queue_id", "queue_offset").collect()
    bodies = Counter(bytes(row.body).decode() for row in rows)
    assert [body for body, count in bodies.items() if count > 1] == []
    assert sorted(bodies) == sorted(sent)
    for queue in range(4):
        offsets = sorted(row.queue_offset for row in rows if row.queue_id == queue)
        assert offsets == list(range(len(offsets)))


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
    spark: SparkSession, broker: LocalBroker, client: Client, tmp_path: Path
) -> None:
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
    cases = [
        ({**good, "startingOffsets": '{"other": {"0": 1}}'}, "one key 't'"),
        ({**good, "startingOffsets": '{"t": {"x": 1}}'}, "not a queue id"),
        ({**good, "startingOffsets": '{"t": {"0": -3}}'}, "below -2"),
        ({**good, "startingOffsets": "latest", "startingTimestamp": "0"}, "not both"),
        ({**good, "maxOffsetsPerTrigger": "0"}, "below 1"),
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
    filtered = collect(spark, {**base, "tags": "A", "keys": "k5,k8,k9,nope"})
    assert bodies(filtered) == ["b5", "b9"]  # k8 is tagged B
    from_json = collect(spark, {**base, "startingOffsets": json.dumps({topic: {"0": 60, "1": -1}})})
    assert bodies(from_json) == sorted(f"b{i}" for i in range(120, 200, 2))
    cut = results[150].store_timestamp
    after = collect(spark, {**base, "startingTimestamp": str(cut)})
    assert bodies(after) == sorted(
        f"b{i}" for i, result in enumerate(results) if result.store_timestamp >= cut
    )

    name = f"limited_{next(_names)}"
    query = (
        spark.readStream.format("rmq")
        .options(**base, maxOffsetsPerTrigger="90")
        .load()
        .writeStream.format("memory")
        .queryName(name)
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


class Daemon:
    """A Spark standalone daemon (master or worker) started with ``spark-class``."""

    def __init__(self, log: Path, *args: str) -> None:
        spark_home = Path(pyspark.__file__).parent
        env = dict(os.environ, SPARK_HOME=str(spark_home), SPARK_DAEMON_MEMORY="256m")
        env.update(SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=job_env()["PYTHONPATH"])
        self.log = log
        self._file = log.open("wb")
        self.process = subprocess.Popen(
            [str(spark_home / "bin" / "spark-class"), *args],
            stdout=self._file,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def wait_for_line(self, pattern: str, timeout: float = 90) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.log.read_text(errors="replace"))
            if found:
                return found
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"no {pattern!r} in {self.log}:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._file.close()


class StandaloneCluster(threading.Thread):
    """A Spark standalone master and one worker (one core) on loopback, started in the
    background (``url`` once ``join`` returns) while the test does other things."""

    def __init__(self, directory: Path) -> None:
        super().__init__(daemon=True)
        self.directory = directory
        self.daemons: list[Daemon] = []
        self.url = ""
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            master = Daemon(
                self.directory / "master.log", "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
            )  # fmt: skip
            self.daemons.append(master)
            url = master.wait_for_line(r"Starting Spark master at (spark://\S+)").group(1)
            worker = Daemon(
                self.directory / "worker.log", "org.apache.spark.deploy.worker.Worker", url,
                "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0",
                "--work-dir", str(self.directory / "work"),
            )  # fmt: skip
            self.daemons.append(worker)
            worker.wait_for_line(r"Successfully registered with master")
            self.url = url
        except BaseException as error:
            self.error = error

    def ready(self) -> str:
        self.join(120)
        assert self.error is None and self.url, self.error
        return self.url

    def executor_logs(self) -> list[Path]:
        return list((self.directory / "work").rglob("stderr"))

    def stop(self) -> None:
        self.join(120)
        for daemon in reversed(self.daemons):
            daemon.stop()
