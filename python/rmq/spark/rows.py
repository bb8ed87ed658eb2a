"""Messages read through a queue (``rmq.Message`` from a store, ``ReceivedMessage`` from
a broker) as Arrow record batches of the source's schema.

The streaming source reads by queue offset, not by commit-log position, so its rows come
as message objects rather than as the segment decoder's column buffers; this turns a
list of them into one batch, building only the columns the schema asks for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from rmq._rmqcore import Message, ReceivedMessage
from rmq.spark.arrow import ARROW_SCHEMA

__all__ = ["QueueMessage", "messages_to_batch"]

_MILLIS = pa.timestamp("ms", tz="UTC")


QueueMessage = Message | ReceivedMessage
"""What ``rmq.Message`` and ``rmq.client.ReceivedMessage`` both are."""


def _values(name: str) -> Callable[[Sequence[QueueMessage]], list[Any]]:
    def values(messages: Sequence[QueueMessage]) -> list[Any]:
        return [getattr(message, name) for message in messages]

    return values


_COLUMNS: dict[str, Callable[[Sequence[QueueMessage]], list[Any]]] = {
    name: _values(name)
    for name in (
        "topic", "queue_id", "queue_offset", "commitlog_offset", "msg_id", "tags", "body",
        "born_host", "store_host", "sys_flag", "flag", "reconsume_times",
    )
}  # fmt: skip
_COLUMNS["keys"] = lambda messages: [list(m.keys) for m in messages]
_COLUMNS["properties"] = lambda messages: [list(m.properties.items()) for m in messages]
_COLUMNS["body_size"] = lambda messages: [len(m.body) for m in messages]


def messages_to_batch(
    messages: Sequence[QueueMessage], shard: str, schema: pa.Schema = ARROW_SCHEMA
) -> pa.RecordBatch:
    """One record batch of ``schema`` (``ARROW_SCHEMA`` or some of its columns).

    ``body_crc_ok`` is null: a read through a queue does not report the CRC check (the
    store checks what it hands out and raises on a mismatch instead).
    """
    rows = len(messages)
    arrays = []
    for field in schema:
        name = field.name
        if name == "shard":
            array = pa.repeat(shard, rows).cast(pa.string())
        elif name == "body_crc_ok":
            array = pa.nulls(rows, pa.bool_())
        elif name in ("born_timestamp", "store_timestamp"):
            millis = pa.array(_values(name)(messages), type=pa.int64())
            array = millis.cast(_MILLIS)
        else:
            array = pa.array(_COLUMNS[name](messages), type=ARROW_SCHEMA.field(name).type)
        arrays.append(array if array.type.equals(field.type) else array.cast(field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
