"""Protobuf <-> engine values; the store never sees protobuf and the wire never sees
engine objects."""

from __future__ import annotations

from collections.abc import Sequence

import rmq
from rmq.broker.validation import Limits, check_batch_size, check_message
from rmq.proto.v1 import broker_pb2 as pb


def engine_messages(messages: Sequence[pb.Message], limits: Limits) -> list[bytes | rmq.Message]:
    """Check a batch and build the engine's messages (plain bodies where nothing else is set)."""
    total = 0
    for message in messages:
        total += len(message.body)
    check_batch_size(len(messages), total, limits)
    out: list[bytes | rmq.Message] = []
    for index, message in enumerate(messages):
        tags = message.tags if message.HasField("tags") else None
        keys = list(message.keys)
        properties = dict(message.properties)
        check_message(index, message.body, tags, keys, properties, limits)
        if (
            tags is None
            and not keys
            and not properties
            and not message.flag
            and not message.born_timestamp
        ):
            out.append(message.body)
        else:
            out.append(
                rmq.Message(
                    message.body,
                    tags=tags,
                    keys=keys or None,
                    properties=properties or None,
                    flag=message.flag,
                    # 0 means "now" on the wire (broker.proto) and to the store.
                    born_timestamp=message.born_timestamp or None,
                )
            )
    return out


def send_response(
    results: Sequence[rmq.PutResult] | rmq.PutResults, sequence: int = 0
) -> pb.SendResponse:
    return pb.SendResponse(
        msg_ids=[r.msg_id for r in results],
        commitlog_offsets=[r.commitlog_offset for r in results],
        queue_offsets=[r.queue_offset for r in results],
        store_timestamps=[r.store_timestamp for r in results],
        store_sizes=[r.store_size for r in results],
        sequence=sequence,
    )


def encoded_pull_response(result: rmq.EncodedPull) -> bytes:
    """A serialized ``PullResponse``: the engine encoded the messages (field 1); protobuf
    merges fields that follow one another, so the scalars are encoded after them."""
    tail = pb.PullResponse(
        next_offset=result.next_offset,
        min_offset=result.min_offset,
        max_offset=result.max_offset,
    )
    return result.messages + tail.SerializeToString()


def stored_message(message: rmq.Message) -> pb.StoredMessage:
    out = pb.StoredMessage(
        topic=message.topic,
        queue_id=message.queue_id,
        queue_offset=message.queue_offset,
        commitlog_offset=message.commitlog_offset,
        store_size=message.store_size,
        body=message.body,
        keys=message.keys,
        properties=message.properties,
        born_timestamp=message.born_timestamp,
        store_timestamp=message.store_timestamp,
        born_host=message.born_host,
        store_host=message.store_host,
        msg_id=message.msg_id,
        flag=message.flag,
        sys_flag=message.sys_flag,
        reconsume_times=message.reconsume_times,
    )
    if message.tags is not None:
        out.tags = message.tags
    return out
