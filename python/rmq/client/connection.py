"""What producers and consumers need of a client: :class:`Connection`.

:class:`rmq.client.Client` makes producers and consumers and hands itself to them. They
know it only through this protocol, so ``client.py`` imports ``producer.py`` and
``consumer.py`` and neither of them imports ``client.py`` back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import grpc

from rmq.client.channels import Credentials
from rmq.client.messages import TopicRoute
from rmq.proto.v1 import broker_pb2 as pb
from rmq.proto.v1 import broker_pb2_grpc as pb_grpc

T = TypeVar("T")


class Connection(Protocol):
    """A client's settings, routes and calls to shards (``Client`` is one)."""

    @property
    def timeout(self) -> float:
        """Seconds per call."""
        ...

    @property
    def retry_timeout(self) -> float:
        """How long calls that may hit a restarting shard are retried."""
        ...

    @property
    def credentials(self) -> Credentials: ...

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """What goes with every call (the token)."""
        ...

    def route(self, topic: str, *, refresh: bool = False) -> TopicRoute:
        """Where each queue of ``topic`` lives (cached; ``refresh`` asks again)."""
        ...

    def call(self, what: str, function: Callable[..., T], request: Any, **kwargs: Any) -> T:
        """``function(request)`` with the token and timeout, retried while retryable."""
        ...

    def shard_stub(self, endpoint: str) -> pb_grpc.ShardStub: ...

    def queue_offsets(self, topic: str, queue_id: int) -> tuple[int, int]:
        """(min offset, max offset) of one queue."""
        ...

    def encoded_pull(self, endpoint: str) -> grpc.UnaryUnaryMultiCallable[pb.PullRequest, bytes]:
        """``Shard.Pull`` answering with the response's bytes."""
        ...
