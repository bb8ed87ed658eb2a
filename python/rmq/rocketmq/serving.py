"""Putting the RocketMQ v2 service together, in the supervisor and in a shard process."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence

import rmq
from rmq._rmqcore import LeaseBook
from rmq.broker.route_handler import Cluster
from rmq.broker.shard_handler import ShardHandler
from rmq.broker.validation import Limits
from rmq.client.messages import QueueRoute
from rmq.rocketmq.routes import ClientTopology
from rmq.rocketmq.servicer import MessagingServicer
from rmq.rocketmq.settings import ConsumerPolicy
from rmq.rocketmq.shard_backend import ShardBackend

log = logging.getLogger(__name__)


class ClusterTopology:
    """The layout straight from the supervisor's route table."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def queues(self, topic: str) -> Sequence[QueueRoute]:
        return [
            QueueRoute(queue_id, shard, self._cluster.endpoint_of(shard))
            for queue_id, shard in enumerate(self._cluster.layout(topic))
        ]

    def ensure_topic(self, topic: str, queues: int) -> None:
        self._cluster.create_topic(topic, queues)


class DeadLetters:
    """Sends dead letters through the broker's routes: a group's ``%DLQ%`` topic (one
    queue, created on first use) may live in any shard process."""

    def __init__(self, client: rmq.Client) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._producer: rmq.client.Producer | None = None
        self._topics: set[str] = set()

    def __call__(self, topic: str, message: rmq.Message) -> None:
        with self._lock:
            if topic not in self._topics:
                self._client.create_topic(topic, 1)
                self._topics.add(topic)
            if self._producer is None:
                self._producer = self._client.producer()
            producer = self._producer
        properties = dict(message.properties)
        properties["ORIGIN_MESSAGE_ID"] = message.msg_id
        producer.send_sync(
            topic,
            message.body,
            tags=message.tags,
            keys=list(message.keys) or None,
            properties=properties,
            timeout=10.0,
        )

    def close(self) -> None:
        with self._lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            producer.close(5.0)


def supervisor_servicer(
    cluster: Cluster, limits: Limits, policy: ConsumerPolicy
) -> MessagingServicer:
    return MessagingServicer(
        ClusterTopology(cluster), None, max_body_bytes=limits.max_body_bytes, policy=policy
    )


def shard_servicer(
    handler: ShardHandler,
    stores: Mapping[int, rmq.Store],
    supervisor: rmq.Client,
    limits: Limits,
    policy: ConsumerPolicy,
    books: Mapping[int, LeaseBook],
) -> tuple[MessagingServicer, ShardBackend, DeadLetters]:
    dead_letters = DeadLetters(supervisor)
    backend = ShardBackend(handler, stores, policy=policy, dead_letters=dead_letters, books=books)
    servicer = MessagingServicer(
        ClientTopology(supervisor), backend, max_body_bytes=limits.max_body_bytes, policy=policy
    )
    return servicer, backend, dead_letters
