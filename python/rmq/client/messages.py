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


class ReceivedMessage:
    """A message read from the broker, with the fields of ``rmq.Message``.

    A view of the decoded Pull response: fields are read from it when asked for, because
    copying seventeen fields into an object per message cost a consumer more than
    receiving the message. Read-only; equal when every field is equal.
    """

    __slots__ = ("_proto",)

    def __init__(self, proto: pb.StoredMessage) -> None:
        self._proto = proto

    @classmethod
    def from_proto(cls, m: pb.StoredMessage) -> ReceivedMessage:
        return cls(m)

    @property
    def topic(self) -> str:
        return self._proto.topic

    @property
    def queue_id(self) -> int:
        return self._proto.queue_id

    @property
    def queue_offset(self) -> int:
        return self._proto.queue_offset

    @property
    def commitlog_offset(self) -> int:
        return self._proto.commitlog_offset

    @property
    def store_size(self) -> int:
        return self._proto.store_size

    @property
    def body(self) -> bytes:
        return self._proto.body

    @property
    def tags(self) -> str | None:
        return self._proto.tags if self._proto.HasField("tags") else None

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self._proto.keys)

    @property
    def properties(self) -> dict[str, str]:
        return dict(self._proto.properties)

    @property
    def born_timestamp(self) -> int:
        return self._proto.born_timestamp

    @property
    def store_timestamp(self) -> int:
        return self._proto.store_timestamp

    @property
    def born_host(self) -> str:
        return self._proto.born_host

    @property
    def store_host(self) -> str:
        return self._proto.store_host

    @property
    def msg_id(self) -> str:
        return self._proto.msg_id

    @property
    def flag(self) -> int:
        return self._proto.flag

    @property
    def sys_flag(self) -> int:
        return self._proto.sys_flag

    @property
    def reconsume_times(self) -> int:
        return self._proto.reconsume_times

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReceivedMessage):
            return NotImplemented
        return bool(self._proto == other._proto)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking fields (a dict)

    def __repr__(self) -> str:
        return (
            f"ReceivedMessage(topic={self.topic!r}, queue_id={self.queue_id}, "
            f"queue_offset={self.queue_offset}, msg_id={self.msg_id!r}, tags={self.tags!r}, "
            f"keys={self.keys!r}, body=<{len(self.body)} bytes>)"
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
