"""What producers and consumers need of a client: :class:`Connection`.

:class:`rmq.client.Client` makes producers and consumers and hands itself to them. They
know it only through this protocol, so ``client.py`` imports ``producer.py`` and
``consumer.py`` and neither of them imports ``client.py`` back.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from google.protobuf.message import Message

from rmq._rmqcore import Transport
from rmq.client.credentials import Credentials
from rmq.client.messages import TopicRoute

M = TypeVar("M", bound=Message)


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

    @property
    def transport(self) -> Transport:
        """The client's connections, for calls started without waiting (pulls)."""
        ...

    def route(self, topic: str, *, refresh: bool = False) -> TopicRoute:
        """Where each queue of ``topic`` lives (cached; ``refresh`` asks again)."""
        ...

    def call(self, what: str, endpoint: str, method: str, request: Message, answer: type[M]) -> M:
        """``method`` (a path, see ``rmq.client.transport.method_path``) on ``endpoint``
        with the token and timeout, retried while retryable."""
        ...

    def call_all_bytes(self, calls: list[tuple[str, str, str, bytes]]) -> list[bytes]:
        """``call_bytes`` for each (what, endpoint, method, request), all in flight at
        once (calls of any methods in one round trip)."""
        ...

    def call_bytes(
        self, what: str, endpoint: str, method: str, request: bytes, *, timeout: float | None = None
    ) -> bytes:
        """As ``call``, with the request's and the answer's bytes."""
        ...

    def queue_offsets(self, topic: str, queue_id: int) -> tuple[int, int]:
        """(min offset, max offset) of one queue."""
        ...
