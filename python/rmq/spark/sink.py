"""``df.write.format("rmq")`` and ``df.writeStream.format("rmq")``: rows sent to a broker
through the batching producer (``rmq.client.Producer``), one producer per task, in
``send_batch`` calls of rows that share a topic and sharding key.

A task returns only once the broker stored every row it sent, and fails if any send
failed: the first error is raised (Spark shows it as the task's failure and retries or
fails the job), never dropped. Delivery is at least once, as with Kafka's sink: a task
that fails after some rows were stored, and is retried, sends them again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    MapType,
    StringType,
    StructType,
)

from rmq._rmqcore import Message, SendBatchFuture, SendFuture
from rmq.client import Client, Producer
from rmq.client.batch_limits import within_batch_limits
from rmq.errors import BrokerError, InvalidArgumentError
from rmq.spark.options import _int

__all__ = [
    "RmqStreamWriter", "RmqWriter", "WriteOptions", "check_broker", "parse_write_options",
    "sink_columns",
]  # fmt: skip

log = logging.getLogger("rmq.spark")

_STRING = StringType()
_BINARY = BinaryType()
#: Column -> the types it may have.
_COLUMNS: dict[str, tuple[DataType, ...]] = {
    "topic": (_STRING,),
    "body": (_BINARY, _STRING),
    "tags": (_STRING,),
    "keys": (ArrayType(_STRING), _STRING),
    "properties": (MapType(_STRING, _STRING),),
    "sharding_key": (_STRING, _BINARY),
}
# The source's other columns: a DataFrame read from rmq can be written back as it is.
_IGNORED = (
    "shard", "queue_id", "queue_offset", "commitlog_offset", "msg_id", "body_size",
    "born_timestamp", "store_timestamp", "born_host", "store_host", "sys_flag", "flag",
    "reconsume_times", "body_crc_ok",
)  # fmt: skip
# Options Spark passes on to a sink along with the sink's own.
_SPARKS_OWN = {"path", "checkpointlocation", "queryname"}
#: Bytes of one request to the broker, as the producer's default.
_BATCH_MAX_BYTES = 1024 * 1024
_KNOWN_OPTIONS = ("endpoint", "topic", "token", "batch_max_messages", "linger_ms", "timeout")


@dataclass(frozen=True)
class WriteOptions:
    endpoint: str
    #: Every row goes to this topic (overriding a ``topic`` column), as Kafka's option.
    topic: str | None
    token: str | None
    batch_max_messages: int
    linger_ms: int
    #: Seconds a task waits for the broker to store what it sent.
    timeout: int


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    lowered = {name.lower(): value for name, value in options.items()}
    unknown = sorted(set(lowered) - set(_KNOWN_OPTIONS) - _SPARKS_OWN)
    if unknown:
        raise InvalidArgumentError(
            f"unknown write option(s) {', '.join(unknown)}; known: {', '.join(_KNOWN_OPTIONS)}",
            argument=unknown[0],
        )
    endpoint = lowered.get("endpoint", "").strip()
    if not endpoint:
        raise InvalidArgumentError(
            "writing to rmq needs the option endpoint (a running rmq serve, host:port)",
            argument="endpoint",
        )
    return WriteOptions(
        endpoint=endpoint,
        topic=lowered.get("topic", "").strip() or None,
        token=lowered.get("token") or None,
        batch_max_messages=_int("batch_max_messages", lowered.get("batch_max_messages", "512"), 1),
        linger_ms=_int("linger_ms", lowered.get("linger_ms", "5"), 0),
        timeout=_int("timeout", lowered.get("timeout", "120"), 1),
    )


def _loose(data_type: DataType) -> DataType:
    if isinstance(data_type, ArrayType):
        return ArrayType(_loose(data_type.elementType))
    if isinstance(data_type, MapType):
        return MapType(_loose(data_type.keyType), _loose(data_type.valueType))
    return data_type


def sink_columns(schema: StructType, options: WriteOptions) -> list[str]:
    """The columns the sink sends, checked against ``schema``; raises naming what is wrong."""
    used = []
    for field in schema.fields:
        if field.name in _IGNORED:
            continue
        allowed = _COLUMNS.get(field.name)
        if allowed is None:
            raise InvalidArgumentError(
                f"column {field.name!r} means nothing to the rmq sink; it takes "
                f"{', '.join(_COLUMNS)} (and ignores the rmq source's other columns)",
                argument="schema",
            )
        if _loose(field.dataType) not in allowed:
            raise InvalidArgumentError(
                f"column {field.name!r} is {field.dataType.simpleString()}; the rmq sink takes "
                + " or ".join(t.simpleString() for t in allowed),
                argument="schema",
            )
        used.append(field.name)
    if "body" not in used:
        raise InvalidArgumentError("the rmq sink needs a body column", argument="schema")
    if "topic" not in used and options.topic is None:
        raise InvalidArgumentError(
            "the rmq sink needs a topic column or the option topic", argument="topic"
        )
    return used


def check_broker(options: WriteOptions) -> None:
    """Fail the write before any task runs if the broker cannot be reached or the topic
    given as an option does not exist."""
    with Client(options.endpoint, token=options.token, retry_timeout=5.0) as client:
        try:
            if options.topic is not None:
                client.route(options.topic)
            else:
                client.topics()
        except BrokerError as error:
            raise type(error)(
                f"rmq sink (endpoint {options.endpoint}): {error}", error.code
            ) from None


@dataclass(frozen=True)
class Written(WriterCommitMessage):
    """What one task stored."""

    rows: int


def send_batches(options: WriteOptions, batches: Iterator[Any]) -> Written:
    """Send every row; return once all are stored, or raise the first failure."""
    failures: list[BaseException] = []
    lock = threading.Lock()

    def done(future: SendFuture | SendBatchFuture) -> None:
        error = future.exception()
        if error is not None:
            with lock:
                failures.append(error)

    rows = 0
    with Client(options.endpoint, token=options.token) as client:
        producer = client.producer(
            batch_max_messages=options.batch_max_messages,
            batch_max_bytes=_BATCH_MAX_BYTES,
            linger_ms=options.linger_ms,
        )
        try:
            for batch in batches:
                columns = {name: batch.column(name).to_pylist() for name in batch.schema.names}
                rows += _send_rows(producer, options, columns, batch.num_rows, done)
                if failures:
                    break
            if not failures and not producer.flush(options.timeout):
                raise TimeoutError(
                    f"rmq sink: the broker at {options.endpoint} did not store the rows sent "
                    f"within {options.timeout} s (option timeout)"
                )
        finally:
            producer.close(options.timeout)
    if failures:
        raise BrokerError(
            f"rmq sink: {len(failures)} row(s) were not stored; the first error: {failures[0]}"
        ) from failures[0]
    return Written(rows)


def _send_rows(
    producer: Any, options: WriteOptions, columns: dict[str, list[Any]], count: int, done: Any
) -> int:
    """Send one Arrow batch's rows as ``send_batch`` calls: rows grouped by topic and
    sharding key (one queue per batch, so a key's rows stay in order), each group split
    within the producer's batch limits. One call per batch, not per row, is what the
    task's CPU goes on."""
    topics = columns.get("topic")
    bodies = [body.encode() if isinstance(body, str) else body for body in columns["body"]]
    tags = columns.get("tags")
    keys = columns.get("keys")
    properties = columns.get("properties")
    sharding = columns.get("sharding_key")
    groups: dict[tuple[str, Any], list[int]] = {}
    for row in range(count):
        topic = options.topic or (topics[row] if topics is not None else None)
        if topic is None or bodies[row] is None:
            raise InvalidArgumentError(
                f"rmq sink: a row has a null {'topic' if topic is None else 'body'}",
                argument="topic" if topic is None else "body",
            )
        sharding_key = sharding[row] if sharding is not None else None
        groups.setdefault((topic, sharding_key), []).append(row)
    for (topic, sharding_key), rows in groups.items():
        for batch in within_batch_limits(
            rows, lambda row: len(bodies[row]), options.batch_max_messages, _BATCH_MAX_BYTES
        ):
            if len(batch) == 1 and len(bodies[batch[0]]) + Producer.MESSAGE_OVERHEAD > (
                _BATCH_MAX_BYTES
            ):
                # Too big for a batch: sent alone, as the broker's message limit decides.
                row = batch[0]
                future: Any = producer.send(
                    topic,
                    bodies[row],
                    tags=tags[row] if tags is not None else None,
                    keys=keys[row] if keys is not None else None,
                    properties=dict(properties[row]) if properties and properties[row] else None,
                    sharding_key=sharding_key,
                )
            elif properties is not None:
                future = producer.send_batch(
                    topic,
                    [
                        Message(
                            bodies[row],
                            tags=tags[row] if tags is not None else None,
                            keys=_key_list(keys[row]) if keys is not None else None,
                            properties=dict(properties[row]) if properties[row] else None,
                        )
                        for row in batch
                    ],
                    sharding_key=sharding_key,
                )
            else:
                future = producer.send_batch(
                    topic,
                    [bodies[row] for row in batch],
                    tags=[tags[row] for row in batch] if tags is not None else None,
                    keys=[keys[row] for row in batch] if keys is not None else None,
                    sharding_key=sharding_key,
                )
            future.add_done_callback(done)
    return count


def _key_list(keys: Sequence[str] | str | None) -> Sequence[str] | None:
    """A ``keys`` cell as ``rmq.Message`` takes it: a string column holds one key."""
    return [keys] if isinstance(keys, str) else keys


class RmqWriter(DataSourceArrowWriter):
    """``df.write.format("rmq")`` (batch)."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> Written:
        return send_batches(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        rows = sum(m.rows for m in messages if isinstance(m, Written))
        log.info("rmq sink: %d rows stored by the broker at %s", rows, self.options.endpoint)


class RmqStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("rmq")``: each micro-batch as a batch write."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> Written:
        return send_batches(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        rows = sum(m.rows for m in messages if isinstance(m, Written))
        log.info(
            "rmq sink: micro-batch %d: %d rows stored by the broker at %s",
            batchId, rows, self.options.endpoint,
        )  # fmt: skip
