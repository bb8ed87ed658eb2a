"""The producer's native core: batching, queue choice, sends and their results."""

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, final

from typing_extensions import disjoint_base

from ._message import Message

@final
class SendResult:
    """Where the broker stored one message a producer sent (``rmq.client.SendResult``)."""

    def __new__(
        cls,
        topic: str,
        queue_id: int,
        queue_offset: int,
        msg_id: str,
        commitlog_offset: int,
        store_timestamp: int,
    ) -> SendResult: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    @property
    def topic(self) -> str: ...
    @property
    def queue_id(self) -> int: ...
    @property
    def queue_offset(self) -> int: ...
    @property
    def msg_id(self) -> str: ...
    @property
    def commitlog_offset(self) -> int: ...
    @property
    def store_timestamp(self) -> int: ...

@final
class SendFuture:
    """The pending result of one ``Producer.send``, resolved with its batch. The methods
    are those of ``concurrent.futures.Future`` that make sense for a send (a queued send
    cannot be cancelled); ``concurrent.futures.wait`` and ``as_completed`` need real
    ``Future`` objects and do not accept these."""

    def done(self) -> bool: ...
    def running(self) -> bool: ...
    def cancel(self) -> bool:
        """A queued send cannot be taken back: always False."""
    def cancelled(self) -> bool: ...
    def result(self, timeout: float | None = None) -> SendResult:
        """Where the broker stored the message; raises what the send failed with, or
        ``TimeoutError`` if ``timeout`` seconds pass first."""
    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The exception the send failed with, or None once it succeeded."""
    def add_done_callback(self, callback: Callable[[SendFuture], object]) -> None:
        """Call ``callback(future)`` once the send has a result (at once if it has); a
        callback that raises is logged and harms no other."""

@final
class SendBatchFuture:
    """The pending result of one ``Producer.send_batch``: its messages travel as one
    request, so they are stored or fail together. The methods are those of
    ``SendFuture``; ``len`` is the number of messages."""

    def done(self) -> bool: ...
    def running(self) -> bool: ...
    def cancel(self) -> bool:
        """A queued batch cannot be taken back: always False."""
    def cancelled(self) -> bool: ...
    def result(self, timeout: float | None = None) -> list[SendResult]:
        """Where the broker stored each message, in the order given; raises what the
        batch failed with, or ``TimeoutError`` if ``timeout`` seconds pass first."""
    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The exception the batch failed with, or None once it was stored."""
    def add_done_callback(self, callback: Callable[[SendBatchFuture], object]) -> None:
        """Call ``callback(future)`` once the batch has a result (at once if it has); a
        callback that raises is logged and harms no other."""
    def __len__(self) -> int: ...

@disjoint_base
class ProducerCore:
    """The producer's core (crates/rmqnet/src/client/): queue choice, batching, the calls
    to the shards and their retries; ``rmq.client.Producer`` extends it with a thread
    that looks up the routes it asks for (``_routes_wanted``) and pushes them in
    (``_set_route``, ``_route_failed``)."""

    MESSAGE_OVERHEAD: ClassVar[int]
    """Bytes a message counts against ``batch_max_bytes`` besides its body."""
    def __new__(cls, *args: Any, **kwargs: Any) -> ProducerCore: ...
    def _configure(
        self,
        *,
        batch_max_messages: int,
        batch_max_bytes: int,
        linger: float,
        max_buffered_bytes: int,
        max_buffered_messages: int,
        retry_timeout: float = 30.0,
        callback_log: logging.Logger | None = None,
    ) -> None: ...
    def send(
        self,
        topic: str,
        body: bytes,
        *,
        tags: str | None = None,
        keys: str | Sequence[str] | None = None,
        properties: Mapping[str, str] | None = None,
        sharding_key: str | bytes | None = None,
        queue_id: int | None = None,
    ) -> SendFuture:
        """Queue one message; the future resolves once the broker stored it.

        The queue is ``queue_id`` if given, else chosen by ``sharding_key`` (the same key
        always goes to the same queue, so its messages stay in order), else round-robin.
        Blocks while ``max_buffered_bytes`` are waiting to be sent."""
    def send_batch(
        self,
        topic: str,
        messages: Sequence[bytes | Message],
        *,
        tags: str | Sequence[str | None] | None = None,
        keys: Sequence[str | Sequence[str] | None] | None = None,
        sharding_key: str | bytes | None = None,
        queue_id: int | None = None,
    ) -> SendBatchFuture:
        """Queue a batch for one queue, sent at once as one request of its own; the
        future resolves once the broker stored all of it.

        Bytes bodies take ``tags`` (one for all, or one per message) and ``keys`` (one
        entry per message, as ``Store.put_batch`` takes them); an ``rmq.Message`` carries
        its own fields. A message breaking the broker's field rules, or a batch over the
        producer's batch limits, raises ``InvalidArgumentError`` naming it, and nothing is
        sent. The queue is chosen as for ``send``."""
    def flush(self, timeout: float | None = None) -> bool:
        """Send everything queued now and wait until each has a result; False on
        timeout."""
    @property
    def closed(self) -> bool: ...
    @property
    def pending(self) -> int:
        """Messages sent whose result is not known yet."""
    def _close(self) -> None: ...
    def _begin_flush(self) -> None: ...
    def _end_flush(self) -> None: ...
    def _open_batch(self, topic: str, queue_id: int) -> bytes | None:
        """The ``rmq.v1.SendRequest`` the queue's open batch would send; None without
        one."""
    def _start(
        self,
        *,
        timeout: float,
        metadata: list[tuple[str, str]],
        tls: bool = False,
        root_cert: bytes | None = None,
        server_name: str | None = None,
    ) -> None: ...
    def _stop(self, timeout: float | None = None) -> None: ...
    @property
    def _calls_made(self) -> int:
        """How many SendBatches calls the running sender made."""
    def _routes_wanted(self) -> list[str] | None: ...
    def _set_route(self, topic: str, endpoints: list[str], fresh: bool = True) -> None: ...
    def _route_failed(self, topic: str, error: BaseException, retryable: bool) -> None: ...
