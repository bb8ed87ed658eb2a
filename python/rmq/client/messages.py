"""Plain values the client hands out."""

from __future__ import annotations

from dataclasses import dataclass

from rmq.proto.v1 import broker_pb2 as pb


@dataclass(frozen=True, slots=True)
class SendResult:
    """Where the broker stored one message."""

    topic: str
    queue_id: int
    queue_offset: int
    msg_id: str
    commitlog_offset: int
    store_timestamp: int


@dataclass(frozen=True, slots=True)
class ReceivedMessage:
    """A message read from the broker (the fields of ``rmq.Message``)."""

    topic: str
    queue_id: int
    queue_offset: int
    commitlog_offset: int
    store_size: int
    body: bytes
    tags: str | None
    keys: tuple[str, ...]
    properties: dict[str, str]
    born_timestamp: int
    store_timestamp: int
    born_host: str
    store_host: str
    msg_id: str
    flag: int
    sys_flag: int
    reconsume_times: int

    @classmethod
    def from_proto(cls, m: pb.StoredMessage) -> ReceivedMessage:
        return cls(
            topic=m.topic,
            queue_id=m.queue_id,
            queue_offset=m.queue_offset,
            commitlog_offset=m.commitlog_offset,
            store_size=m.store_size,
            body=m.body,
            tags=m.tags if m.HasField("tags") else None,
            keys=tuple(m.keys),
            properties=dict(m.properties),
            born_timestamp=m.born_timestamp,
            store_timestamp=m.store_timestamp,
            born_host=m.born_host,
            store_host=m.store_host,
            msg_id=m.msg_id,
            flag=m.flag,
            sys_flag=m.sys_flag,
            reconsume_times=m.reconsume_times,
        )


@dataclass(frozen=True, slots=True)
class QueueRoute:
    queue_id: int
    shard: int
    endpoint: str


@dataclass(frozen=True, slots=True)
class TopicRoute:
    topic: str
    queues: tuple[QueueRoute, ...]

    @classmethod
    def from_proto(cls, route: pb.TopicRoute) -> TopicRoute:
        queues = sorted(
            (QueueRoute(q.queue_id, q.shard, q.endpoint) for q in route.queues),
            key=lambda q: q.queue_id,
        )
        return cls(route.topic, tuple(queues))


@dataclass(frozen=True, slots=True)
class QueueInfo:
    queue_id: int
    shard: int
    endpoint: str
    min_offset: int
    max_offset: int


@dataclass(frozen=True, slots=True)
class ShardProcessInfo:
    process: int
    endpoint: str
    shards: tuple[int, ...]
    pid: int
    serving: bool
    restarts: int
