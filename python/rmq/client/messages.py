"""Plain values the client hands out. (A message a consumer pulled or a lookup found is
the engine's ``rmq._rmqcore.ReceivedMessage``, read from the response's bytes.)

``SendResult`` is the engine's (``rmq._rmqcore.SendResult``): a ``SendFuture`` makes it
when asked for its result.
"""

from __future__ import annotations

from dataclasses import dataclass

from rmq._rmqcore import SendResult
from rmq.proto.v1 import broker_pb2 as pb

__all__ = ["QueueInfo", "QueueRoute", "SendResult", "ShardProcessInfo", "TopicRoute"]


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
    """One shard process of a broker: the supervisor's view, and ``cluster_info``'s answer."""

    process: int
    endpoint: str
    shards: tuple[int, ...]
    pid: int
    serving: bool
    restarts: int
