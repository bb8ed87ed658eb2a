"""The streaming source's options (``spark.readStream.format("rmq")``), checked when the
query starts. Names follow Spark's Kafka source where they mean the same thing
(``startingOffsets``, ``startingTimestamp``, ``maxOffsetsPerTrigger``, ``minPartitions``,
``failOnDataLoss``), so a Kafka pipeline moves over by changing its options."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from rmq.errors import InvalidArgumentError
from rmq.spark.options import _bool, _int, parse_time_ms

__all__ = ["EARLIEST", "LATEST", "StreamOptions", "parse_stream_options"]

#: In a per-queue ``startingOffsets`` JSON, as in Kafka's: the queue's first offset ...
EARLIEST = -2
#: ... and the offset the next message will get.
LATEST = -1

_KNOWN = (
    "endpoint", "path", "topic", "startingoffsets", "startingtimestamp",
    "maxoffsetspertrigger", "minpartitions", "failondataloss", "tags", "keys", "token",
    "batch_rows", "minrowsperpartition", "prefetchbatches",
)  # fmt: skip


@dataclass(frozen=True)
class StreamOptions:
    #: A running broker's supervisor (``host:port``), or ``None`` when reading ``path``.
    endpoint: str | None
    #: Store directories (a broker's data directory or one store), or ``None``.
    path: str | None
    topic: str
    #: ``"earliest"``, ``"latest"``, or per queue id an offset, ``EARLIEST`` or ``LATEST``.
    starting: str | dict[int, int]
    #: Start each queue at its first message stored at or after this (epoch ms).
    starting_timestamp: int | None
    max_offsets_per_trigger: int | None
    min_partitions: int
    fail_on_data_loss: bool
    #: Keep only messages with one of these tags (applied where the messages are read).
    tags: tuple[str, ...]
    #: Keep only messages with one of these keys.
    keys: tuple[str, ...]
    token: str | None
    #: Rows per Arrow batch handed to Spark, and the most a pull asks for (a broker gives
    #: at most its ``max_pull_messages``; consecutive pulls are joined up to this).
    batch_rows: int
    #: Small queue ranges share a partition until it holds about this many messages.
    min_rows_per_partition: int = 10_000
    #: Batches a partition's reader makes ahead of Spark on a thread (0: none).
    prefetch_batches: int = 4


def _words(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(word.strip() for word in text.split(",") if word.strip()))


def _starting_offsets(text: str, topic: str) -> str | dict[int, int]:
    """``earliest``, ``latest`` or Kafka's JSON form, ``{"topic": {"0": 23, "1": -2}}``."""
    if text.strip().lower() in ("earliest", "latest"):
        return text.strip().lower()
    try:
        document = json.loads(text)
    except ValueError as error:
        raise InvalidArgumentError(
            f"option startingOffsets is neither earliest, latest nor JSON ({error}): {text!r}; "
            f'per queue it reads {{"{topic}": {{"0": 42, "1": -2}}}} (-2 earliest, -1 latest)',
            argument="startingOffsets",
        ) from None
    if not isinstance(document, dict) or set(document) != {topic}:
        raise InvalidArgumentError(
            f"option startingOffsets must be a JSON object with the one key {topic!r} "
            f"(the topic read), not {text!r}",
            argument="startingOffsets",
        )
    queues = document[topic]
    if not isinstance(queues, dict) or not queues:
        raise InvalidArgumentError(
            f'option startingOffsets: {topic!r} must map queue ids to offsets, e.g. {{"0": 42}}',
            argument="startingOffsets",
        )
    offsets: dict[int, int] = {}
    for queue, offset in queues.items():
        if not str(queue).isdigit() or isinstance(offset, bool) or not isinstance(offset, int):
            raise InvalidArgumentError(
                f"option startingOffsets: queue {queue!r} -> {offset!r} is not a queue id "
                "and an integer offset",
                argument="startingOffsets",
            )
        if offset < EARLIEST:
            raise InvalidArgumentError(
                f"option startingOffsets: offset {offset} of queue {queue} is below -2",
                argument="startingOffsets",
            )
        offsets[int(queue)] = offset
    return offsets


def parse_stream_options(options: Mapping[str, str]) -> StreamOptions:
    """Check and convert the options (names are case-insensitive, as Spark passes them)."""
    lowered = {name.lower(): value for name, value in options.items()}
    unknown = sorted(set(lowered) - set(_KNOWN))
    if unknown:
        raise InvalidArgumentError(
            f"unknown streaming option(s) {', '.join(unknown)}; known: {', '.join(_KNOWN)}",
            argument=unknown[0],
        )
    endpoint = lowered.get("endpoint", "").strip() or None
    path = lowered.get("path", "").strip() or None
    if (endpoint is None) == (path is None):
        raise InvalidArgumentError(
            "give exactly one of the options endpoint (a running rmq serve, host:port) and "
            "path (store directories)",
            argument="endpoint",
        )
    topic = lowered.get("topic", "").strip()
    if not topic or "," in topic:
        raise InvalidArgumentError("option topic must name the one topic to read", argument="topic")
    if "startingoffsets" in lowered and "startingtimestamp" in lowered:
        raise InvalidArgumentError(
            "give startingOffsets or startingTimestamp, not both", argument="startingTimestamp"
        )
    timestamp = lowered.get("startingtimestamp")
    limit = lowered.get("maxoffsetspertrigger")
    return StreamOptions(
        endpoint=endpoint,
        path=path,
        topic=topic,
        starting=_starting_offsets(lowered.get("startingoffsets", "earliest"), topic),
        starting_timestamp=None if timestamp is None else parse_time_ms(
            "startingTimestamp", timestamp
        ),
        max_offsets_per_trigger=None if limit is None else _int(
            "maxOffsetsPerTrigger", limit, 1
        ),
        min_partitions=_int("minPartitions", lowered.get("minpartitions", "1"), 1),
        fail_on_data_loss=_bool("failOnDataLoss", lowered.get("failondataloss", "true")),
        tags=_words(lowered.get("tags", "")),
        keys=_words(lowered.get("keys", "")),
        token=lowered.get("token") or None,
        batch_rows=_int("batch_rows", lowered.get("batch_rows", "8192"), 1),
        min_rows_per_partition=_int(
            "minRowsPerPartition", lowered.get("minrowsperpartition", "10000"), 1
        ),
        prefetch_batches=_int("prefetchBatches", lowered.get("prefetchbatches", "4"), 0),
    )  # fmt: skip
