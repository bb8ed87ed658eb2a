"""Helpers the Spark streaming tests share: sending to a topic, running a query until it
has read what the source held (into Parquet or memory), and a sender that keeps a
producer busy while a query runs."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery
from rmq.client import Client, SendFuture

from bench.spark_stream import start_into_parquet

_names = itertools.count()


def query_name(prefix: str) -> str:
    """A memory-sink table name no other query of this process uses."""
    return f"{prefix}_{next(_names)}"


def send_all(
    client: Client, topic: str, bodies: list[str], *, batch_max_messages: int = 2048, **fields: Any
) -> None:
    """Send ``bodies`` (with ``fields`` each) and wait until all are stored; a smaller
    ``batch_max_messages`` keeps batches inside a test's small commit-log segments."""
    with client.producer(batch_max_messages=batch_max_messages) as producer:
        futures = [producer.send(topic, body.encode(), **fields) for body in bodies]
        for future in futures:
            future.result(30)


def run_available_now(frame: DataFrame, out: Path, checkpoint: Path) -> StreamingQuery:
    """Run a query into Parquet until it has read what the source held when it started."""
    query: StreamingQuery = start_into_parquet(frame, out, checkpoint)
    query.awaitTermination(120)
    assert not query.isActive, "the query did not finish"
    if query.exception() is not None:
        raise AssertionError(str(query.exception()))
    return query


def collect(
    spark: SparkSession,
    options: dict[str, str],
    schema: str | None = None,
    source: str = "rmq",
) -> list[Any]:
    """Every row an AvailableNow query with ``options`` reads (memory sink) from ``source``
    (``rmq``: the JVM stream for an endpoint; ``rmq_python``: the Python source)."""
    name = query_name("collected")
    reader = spark.readStream.format(source).options(**options)
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


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
