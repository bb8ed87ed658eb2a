"""The producer: batches per queue, one call per shard for the batches ready, futures.

Messages for the same queue leave in the order ``send`` was called: each queue has at
most one batch in flight, and a batch that fails with a retryable status (the shard is
restarting, or the route is stale) is sent again before anything behind it. A retried
batch may have been stored the first time, so delivery is at least once.

The per-message work (``send``: queue choice, encoding into the open batch, byte
accounting, the future) is ``rmq._rmqcore.ProducerCore``, which this class extends; what
happens once per batch (routes, retries, the sender thread) is here. The calls themselves
go over the engine's own connections (``_send_native``; see native_sender.rs), which
also send a queue's next batch as soon as its answer comes, without Python; with TLS they
go through grpcio, answered here.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence

import grpc

from rmq import errors
from rmq._rmqcore import OutgoingBatch, ProducerCore, SendFuture, encode_send_batches
from rmq.client.connection import Connection
from rmq.client.messages import SendResult
from rmq.client.status import RETRYABLE, from_rpc_error, from_status
from rmq.errors import BrokerError
from rmq.proto.v1 import broker_pb2 as pb

# How long a batch waits before it is sent again after a retryable failure.
_RETRY_DELAY = 0.2


class Producer(ProducerCore):
    """Thread-safe. Make one with :meth:`rmq.Client.producer`.

    ``batch_max_messages`` and ``batch_max_bytes`` bound one batch; ``linger_ms`` is how
    long a batch that is not full waits for more messages; ``max_buffered_bytes`` and
    ``max_buffered_messages`` make ``send`` block while that much is sent and not yet
    answered; ``retry_timeout`` (seconds, default the client's) bounds how long a batch is
    retried while a shard is unavailable.

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
        )
        self._client = client
        self._retry_timeout = client.retry_timeout if retry_timeout is None else retry_timeout
        # Batches go over the engine's own connections (see native_sender.rs) unless the
        # client uses TLS, which those do not speak.
        self._native = not client.credentials.tls and client.credentials.tls_root_cert is None
        if self._native:
            self._use_native(timeout=client.timeout, metadata=list(client.metadata))
        self._thread_state = threading.local()
        self._sender = threading.Thread(target=self._run, name="rmq-producer", daemon=True)
        self._sender.start()

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

    def close(self, timeout: float | None = None) -> None:
        """Flush, then stop the sender thread. Messages still unsent after ``timeout``
        fail with ``StoreClosedError``."""
        if self.closed:
            return
        self.flush(timeout)
        self._close()
        self._sender.join(timeout)
        if self._native:
            self._stop_native(timeout)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    # ---- internals ----

    def _queue_count(self, topic: str) -> int | BrokerError:
        """The topic's queue count from its route, or the error that kept it unknown."""
        try:
            return len(self._client.route(topic).queues)
        except BrokerError as error:
            return error

    def _run(self) -> None:
        while (due := self._take_due()) is not None:
            self._dispatch_all(due)

    def _dispatch(self, batch: OutgoingBatch) -> None:
        """Send one batch (ProducerCore calls this when ``send`` fills a batch)."""
        self._dispatch_all([batch])

    def _dispatch_all(self, batches: list[OutgoingBatch]) -> None:
        """Send batches of different queues: one Send call per shard for a shard with one
        of them, one SendBatches call for a shard with several."""
        by_endpoint: dict[str, list[OutgoingBatch]] = {}
        for batch in batches:
            batch.mark_sent()
            try:
                endpoint = self._endpoint(batch)
            except Exception as error:
                self._failed(batch, error)
                continue
            by_endpoint.setdefault(endpoint, []).append(batch)
        for endpoint, group in by_endpoint.items():
            try:
                if self._native:
                    self._send_native(endpoint, group)
                elif len(group) == 1:
                    [batch] = group
                    call = self._client.encoded_send(endpoint).future(
                        batch.encode(),
                        timeout=self._client.timeout,
                        metadata=self._client.metadata,
                    )
                    call.add_done_callback(functools.partial(self._on_done, batch))
                else:
                    many = self._client.encoded_send_batches(endpoint).future(
                        encode_send_batches(group),
                        timeout=self._client.timeout,
                        metadata=self._client.metadata,
                    )
                    many.add_done_callback(functools.partial(self._on_group_done, group))
            except Exception as error:
                for batch in group:
                    self._failed(batch, error)

    def _native_refused(self, batch: OutgoingBatch, code: int, message: str) -> None:
        """A batch sent natively that the shard refused, or whose call failed."""
        where = f"send to {batch.topic}/{batch.queue_id}"
        self._failed(batch, from_status(code, message, where))

    def _endpoint(self, batch: OutgoingBatch) -> str:
        """The endpoint of the shard serving the batch's queue, from the route."""
        topic, queue_id = batch.topic, batch.queue_id
        route = self._client.route(topic, refresh=batch.refresh_route)
        if queue_id >= len(route.queues):
            route = self._client.route(topic, refresh=True)
        self._set_queue_count(topic, len(route.queues))
        if queue_id >= len(route.queues) or queue_id < 0:
            raise errors.InvalidArgumentError(
                f"queue {queue_id} does not exist; topic {topic!r} has {len(route.queues)} queues",
                "queue_id",
            )
        return route.queues[queue_id].endpoint

    def _failed(self, batch: OutgoingBatch, error: BaseException) -> None:
        """A batch that could not be sent: retried when the error may pass, else failed."""
        if isinstance(error, BrokerError) and error.code in RETRYABLE:
            self._retry_or_fail(batch, error)
        else:
            self._finish(batch, None, error)

    def _on_done(self, batch: OutgoingBatch, call: grpc.Future[pb.SendResponse]) -> None:
        try:
            response = call.result()
        except grpc.RpcError as error:
            self._failed(batch, from_rpc_error(error, f"send to {batch.topic}/{batch.queue_id}"))
            return
        except Exception as error:  # cancelled or a local failure
            self._finish(batch, None, error)
            return
        self._send_following([batch])
        self._finish(batch, response, None)

    def _on_group_done(
        self, group: list[OutgoingBatch], call: grpc.Future[pb.SendBatchesResponse]
    ) -> None:
        try:
            response = call.result()
        except grpc.RpcError as error:
            for batch in group:
                where = f"send to {batch.topic}/{batch.queue_id}"
                self._failed(batch, from_rpc_error(error, where))
            return
        except Exception as error:  # cancelled or a local failure
            for batch in group:
                self._finish(batch, None, error)
            return
        if len(response.answers) != len(group):
            wrong = BrokerError("the broker answered SendBatches with a wrong count")
            for batch in group:
                self._finish(batch, None, wrong)
            return
        stored = []
        for batch, answer in zip(group, response.answers, strict=True):
            if answer.HasField("error"):
                where = f"send to {batch.topic}/{batch.queue_id}"
                self._failed(batch, from_status(answer.error.code, answer.error.message, where))
            else:
                stored.append((batch, answer.result))
        self._send_following([batch for batch, _ in stored])
        for batch, result in stored:
            self._finish(batch, result, None)

    def _retry_or_fail(self, batch: OutgoingBatch, error: BrokerError) -> None:
        if batch.mark_sent() >= self._retry_timeout or self.closed:
            self._finish(batch, None, error)
        else:
            self._retry_later(batch, _RETRY_DELAY)

    def _finish(
        self, batch: OutgoingBatch, response: pb.SendResponse | None, error: BaseException | None
    ) -> None:
        """Resolve the batch's futures (and free its queue if ``_send_following`` did not)."""
        if response is not None and len(response.msg_ids) != len(batch):
            response, error = None, BrokerError("the broker answered a batch with a wrong count")
        elif response is None and error is None:
            error = BrokerError("the batch ended without an answer")
        self._complete(batch, response, error)

    def _send_following(self, answered: list[OutgoingBatch]) -> None:
        """Free the queues of batches the broker just answered and send each queue's
        next batch, before the answered batches' futures resolve: their callbacks then
        run while the next batches are on their way, instead of delaying them. A queue's
        callbacks still run in order, because a channel delivers its answers one at a
        time on one thread, and this is that thread.

        Sent from the thread that saw the answer: waking the sender thread would cost a
        hand-off of the GIL, which measured tens of milliseconds per batch while the
        application's thread keeps sending. Answered together, they leave together (one
        call per shard). Not while this thread is already sending next batches (a call
        that ended before its callback was attached calls back on the spot, and the
        chain would recurse): the sender thread sends those."""
        nested = getattr(self._thread_state, "sending_next", False)
        following = [self._release(batch, not nested) for batch in answered]
        ready = [batch for batch in following if batch is not None]
        if not ready:
            return
        self._thread_state.sending_next = True
        try:
            self._dispatch_all(ready)
        finally:
            self._thread_state.sending_next = False


__all__ = ["Producer", "SendFuture"]
