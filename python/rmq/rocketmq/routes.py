"""Topics as RocketMQ v2 clients see them: each queue on a broker with endpoints.

Each shard directory is a broker (``rmq-shard-<n>``, always a master) reached at the
endpoint of the shard process that serves it; that process serves both rmq's own API and
this protocol on the same port. Where the queue layout comes from is a
:class:`Topology`: the supervisor's route table in the supervisor, a call to the
supervisor's Route service in a shard process.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Protocol

import rmq
from rmq.client.messages import QueueRoute
from rmq.rocketmq.wire import v2

# A queue takes the message types rmq stores; the clients check a send against these.
ACCEPTED_TYPES = (v2.NORMAL, v2.FIFO)


class Topology(Protocol):
    def queues(self, topic: str) -> Sequence[QueueRoute]:
        """Every queue of ``topic`` with its shard and endpoint; ``NotFoundError`` when the
        topic does not exist."""
        ...

    def ensure_topic(self, topic: str, queues: int) -> None:
        """Create ``topic`` unless it exists."""
        ...


class ClientTopology:
    """The layout as the supervisor's Route service tells it (for shard processes)."""

    def __init__(self, client: rmq.Client) -> None:
        self._client = client

    def queues(self, topic: str) -> Sequence[QueueRoute]:
        return self._client.route(topic, refresh=True).queues

    def ensure_topic(self, topic: str, queues: int) -> None:
        self._client.create_topic(topic, queues)


def message_queues(topic: str, queues: Sequence[QueueRoute]) -> list[v2.MessageQueue]:
    return [
        v2.MessageQueue(
            topic=v2.Resource(name=topic),
            id=queue.queue_id,
            permission=v2.READ_WRITE,
            broker=v2.Broker(
                name=f"rmq-shard-{queue.shard}", id=0, endpoints=endpoints(queue.endpoint)
            ),
            accept_message_types=ACCEPTED_TYPES,
        )
        for queue in queues
    ]


def endpoints(endpoint: str) -> v2.Endpoints:
    """``host:port`` or ``[v6]:port`` as the protocol's ``Endpoints``."""
    host, _, port = endpoint.rpartition(":")
    host = host.strip("[]")
    try:
        scheme = v2.IPv6 if ipaddress.ip_address(host).version == 6 else v2.IPv4
    except ValueError:
        scheme = v2.DOMAIN_NAME
    return v2.Endpoints(scheme=scheme, addresses=[v2.Address(host=host, port=int(port))])
