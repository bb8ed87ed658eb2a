"""The producer: batches per queue, one call per shard for the batches ready, futures.

Messages for the same queue leave in the order ``send`` was called: each queue has at
most one batch in flight, and a batch that fails with a retryable status (the shard is
restarting, or the route is stale) is sent again before anything behind it. A retried
batch may have been stored the first time, so delivery is at least once.

Everything per message and per batch is ``rmq._rmqcore.ProducerCore``, which this class
extends: the queue choice, the encoding, the batching, the calls over the producer's own
HTTP/2 connections (TLS included), the retries (see crates/rmqnet/src/client/). What is
left here is the one thing the core cannot do itself: look routes up. A thread waits for
the topics the core wants a route for and pushes each route in as data.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence

from rmq import errors
from rmq._rmqcore import Message, ProducerCore, SendBatchFuture, SendFuture
from rmq.client.connection import Connection
from rmq.client.messages import SendResult
from rmq.client.status import is_retryable
from rmq.errors import BrokerError


class Producer(ProducerCore):
    """Thread-safe. Make one with :meth:`rmq.Client.producer`.

    ``batch_max_messages`` and ``batch_max_bytes`` bound one batch; ``linger_ms`` is how
    long a batch that is not full waits for more messages; ``max_buffered_bytes`` and
    ``max_buffered_messages`` make ``send`` block while that much is sent and not yet
    answered (once blocked, until half of it is answered); ``retry_timeout`` (seconds,
    default the client's) bounds how long a batch is retried while a shard is
    unavailable.

    The buffer limits bound a send's latency when the application sends faster than the
    broker stores: a message waits behind at most that much. The defaults (1 MiB, 2,048
    messages) keep it to tens of milliseconds on loopback while leaving every queue a
    batch in flight and the next one filling; raise them for throughput under bursts.

    ``send(topic, body, *, tags=None, keys=None, properties=None, sharding_key=None,
    queue_id=None)`` queues one message and returns a ``SendFuture`` that resolves once
    the broker stored it. The queue is ``queue_id`` if given, else chosen by
    ``sharding_key`` (the same key always goes to the same queue, so its messages stay in
    order), else round-robin. ``flush(timeout=None)`` sends everything queued now and
    waits until each has a result (False on timeout).

    ``send_batch(topic, messages, *, tags=None, keys=None, sharding_key=None,
    queue_id=None)`` sends many messages in one call, as RocketMQ's
    ``send(Collection<Message>)`` does: bytes bodies with ``tags`` (one for all, or one per
    message) and ``keys`` (one entry per message) as columns, or ``rmq.Message``s carrying
    their own fields. They go to one queue, in order, as one request of their own, which
    leaves at once: the broker stores all of them or none. The returned
    ``SendBatchFuture`` resolves to a ``SendResult`` per message. A message breaking the
    broker's field rules, or a batch over ``batch_max_messages`` or ``batch_max_bytes``,
    raises ``InvalidArgumentError`` naming it before anything is sent.
    """

    def __init__(
        self,
        client: Connection,
        *,
        batch_max_messages: int = 2048,
        batch_max_bytes: int = 1024 * 1024,
        linger_ms: float = 5.0,
        max_buffered_bytes: int = 1024 * 1024,
        max_buffered_messages: int = 2048,
        retry_timeout: float | None = None,
    ) -> None:
        if batch_max_messages < 1 or batch_max_bytes < 1:
            raise errors.InvalidArgumentError("batch limits must be positive", "batch")
        if linger_ms < 0:
            raise errors.InvalidArgumentError("linger_ms must not be negative", "linger_ms")
        if max_buffered_bytes < 1 or max_buffered_messages < 1:
            raise errors.InvalidArgumentError("buffer limits must be positive", "max_buffered")
        self._configure(
            batch_max_messages=batch_max_messages,
            batch_max_bytes=batch_max_bytes,
            linger=linger_ms / 1000,
            max_buffered_bytes=max_buffered_bytes,
            max_buffered_messages=max_buffered_messages,
            retry_timeout=client.retry_timeout if retry_timeout is None else retry_timeout,
            callback_log=logging.getLogger(__name__),
        )
        self._client = client
        credentials = client.credentials
        self._start(
            timeout=client.timeout,
            metadata=list(client.metadata),
            tls=credentials.uses_tls,
            root_cert=credentials.tls_root_cert,
            server_name=credentials.server_name,
        )
        self._routes = threading.Thread(target=self._run_routes, name="rmq-routes", daemon=True)
        self._routes.start()

    # ---- public API (``send`` and ``flush`` are ProducerCore's) ----

    def send_sync(
        self,
        topic: str,
        body: bytes,
        *,
        tags: str | None = None,
        keys: str | Sequence[str] | None = None,
        properties: Mapping[str, str] | None = None,
        sharding_key: str | bytes | None = None,
        queue_id: int | None = None,
        timeout: float | None = None,
    ) -> SendResult:
        """``send`` and wait for the result (sent at once, without lingering)."""
        future = self.send(
            topic, body, tags=tags, keys=keys, properties=properties,
            sharding_key=sharding_key, queue_id=queue_id,
        )  # fmt: skip
        self._begin_flush()
        try:
            return future.result(timeout)
        finally:
            self._end_flush()

    def send_batch_sync(
        self,
        topic: str,
        messages: Sequence[bytes | Message],
        *,
        tags: str | Sequence[str | None] | None = None,
        keys: Sequence[str | Sequence[str] | None] | None = None,
        sharding_key: str | bytes | None = None,
        queue_id: int | None = None,
        timeout: float | None = None,
    ) -> list[SendResult]:
        """``send_batch`` and wait for its results, one per message in order."""
        future = self.send_batch(
            topic, messages, tags=tags, keys=keys, sharding_key=sharding_key,
            queue_id=queue_id,
        )  # fmt: skip
        return future.result(timeout)

    def close(self, timeout: float | None = None) -> None:
        """Flush, then stop sending. Messages still unsent after ``timeout`` fail with
        ``StoreClosedError``."""
        if self.closed:
            return
        self.flush(timeout)
        self._close()
        self._stop(timeout)
        self._routes.join(timeout)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    # ---- internals ----

    def _run_routes(self) -> None:
        """Look up the routes the core asks for (a topic it has not sent to, or whose
        shard refused a batch in a way that may mean the route changed) and push them in.

        A topic's first route is the client's cached one when it has it (the answer of its
        ``create_topic``, say): asking the supervisor again cost each new topic's first
        send about a millisecond. A cached route may be stale, so a queue missing from it
        is asked about again, as is any topic whose route is wanted a second time."""
        pushed: set[str] = set()
        while (topics := self._routes_wanted()) is not None:
            for topic in topics:
                fresh = topic in pushed
                try:
                    route = self._client.route(topic, refresh=fresh)
                except Exception as error:
                    retryable = isinstance(error, BrokerError) and is_retryable(error.code)
                    self._route_failed(topic, error, retryable)
                else:
                    self._set_route(topic, [queue.endpoint for queue in route.queues], fresh)
                    pushed.add(topic)


__all__ = ["Producer", "SendBatchFuture", "SendFuture"]
