"""Engine values -> protobuf, for the lookups the Python server answers (messages found
by key or msgId); sends and pulls are encoded by the engine (rmqnet's codec)."""

from __future__ import annotations

import rmq
from rmq.proto.v1 import broker_pb2 as pb


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
