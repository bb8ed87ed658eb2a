"""The producer: batches per queue, one Send RPC per batch, futures for results.

Messages for the same queue leave in the order ``send`` was called: each queue has at
most one batch in flight, and a batch that fails with a retryable status (the shard is
restarting, or the route is stale) is sent again before anything behind it. A retried
batch may have been stored the first time, so delivery is at least once.
"""

from __future__ import annotations

import itertools
import threading
import time
import zlib
from collections import deque
from collections.abc import Mapping, Sequence

import grpc

from rmq import errors
from rmq._rmqcore import SendRequestBuilder
from rmq.client.client import Client
from rmq.client.errors import RETRYABLE, BrokerError, from_rpc_error
from rmq.client.messages import SendResult
from rmq.client.send_future import BatchOutcome, SendFuture
from rmq.proto.v1 import broker_pb2 as pb

QueueKey = tuple[str, int]
# Bytes counted per message besides its body (keys, tags, framing), for the limits.
_MESSAGE_OVERHEAD = 64


class _Batch:
    __slots__ = (
        "bytes", "count", "created", "first_sent", "key", "outcome", "refresh_route", "request",
    )  # fmt: skip

    def __init__(self, key: QueueKey) -> None:
        self.key = key
        # Each message is encoded as it is added; the request is sent as bytes.
        self.request = SendRequestBuilder()
        self.outcome = BatchOutcome(*key)
        self.count = 0
        self.bytes = 0
        self.created = time.monotonic()
        self.first_sent = 0.0
        self.refresh_route = False


class Producer:
    """Thread-safe. Make one with :meth:`rmq.Client.producer`.

    ``batch_max_messages`` and ``batch_max_bytes`` bound one batch; ``linger_ms`` is how
    long a batch that is not full waits for more messages; ``max_buffered_bytes`` makes
    ``send`` block when that much is waiting; ``retry_timeout`` (seconds, default the
    client's) bounds how long a batch is retried while a shard is unavailable.
    """

    def __init__(
        self,
        client: Client,
        *,
        batch_max_messages: int = 2048,
        batch_max_bytes: int = 1024 * 1024,
        linger_ms: float = 5.0,
        max_buffered_bytes: int = 64 * 1024 * 1024,
        retry_timeout: float | None = None,
    ) -> None:
        if batch_max_messages < 1 or batch_max_bytes < 1:
            raise errors.InvalidArgumentError("batch limits must be positive", "batch")
        self._client = client
        self._batch_max_messages = batch_max_messages
        self._batch_max_bytes = batch_max_bytes
        self._linger = linger_ms / 1000
        self._max_buffered = max_buffered_bytes
        self._retry_timeout = client.retry_timeout if retry_timeout is None else retry_timeout
        # A plain lock: nothing here takes it twice, and it is taken once per send.
        self._cond = threading.Condition(threading.Lock())
        self._waiting: dict[QueueKey, deque[_Batch]] = {}
        self._inflight: set[QueueKey] = set()
        self._retries: dict[QueueKey, tuple[_Batch, float]] = {}
        self._buffered = 0
        self._pending = 0
        self._flushing = 0
        self._closed = False
        self._next_queue: dict[str, itertools.count[int]] = {}
        self._queue_counts: dict[str, int] = {}
        self._thread_state = threading.local()
        self._sender = threading.Thread(target=self._run, name="rmq-producer", daemon=True)
        self._sender.start()

    # ---- public API ----

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
        """Queue one message; the future (``rmq.client.SendFuture``) resolves once the
        broker stored it.

        The queue is ``queue_id`` if given, else chosen by ``sharding_key`` (the same
        key always goes to the same queue, so its messages stay in order), else
        round-robin.
        """
        if self._closed:
            raise errors.StoreClosedError("the producer is closed")
        try:
            queue = self._choose_queue(topic, sharding_key, queue_id)
        except BrokerError as error:
            failed = BatchOutcome(topic, -1 if queue_id is None else queue_id)
            failed.finish(None, error)
            return SendFuture(failed, 0)
        if isinstance(keys, str):
            keys = [keys]
        size = len(body) + _MESSAGE_OVERHEAD
        key = (topic, queue)
        with self._cond:
            while self._buffered > 0 and self._buffered + size > self._max_buffered:
                self._cond.wait()
            batches = self._waiting.get(key)
            if batches is None:
                batches = self._waiting[key] = deque()
            batch = batches[-1] if batches else None
            # `_full` written out: this runs once per message.
            max_messages, max_bytes = self._batch_max_messages, self._batch_max_bytes
            if (
                batch is None
                or batch.count >= max_messages
                or (batch.count > 0 and batch.bytes + size > max_bytes)
            ):
                batch = _Batch(key)
                batches.append(batch)
                self._cond.notify()
            batch.request.add(body, tags, keys, properties)
            future = SendFuture(batch.outcome, batch.count)
            batch.count += 1
            batch.bytes += size
            self._buffered += size
            self._pending += 1
            ready = None
            if batch.count >= max_messages or batch.bytes > max_bytes:
                if key not in self._inflight and batches[0] is batch:
                    # Sent from here rather than handed to the sender thread: under the
                    # GIL every hand-off between threads costs more than the send.
                    ready = batches.popleft()
                    if not batches:
                        del self._waiting[key]
                    self._inflight.add(key)
                else:
                    self._cond.notify()
        if ready is not None:
            self._dispatch(ready)
        return future

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
        with self._cond:
            self._flushing += 1
            self._cond.notify()
        try:
            return future.result(timeout)
        finally:
            with self._cond:
                self._flushing -= 1

    def flush(self, timeout: float | None = None) -> bool:
        """Send everything queued now and wait until each has a result; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._flushing += 1
            self._cond.notify_all()
            try:
                while self._pending:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    self._cond.wait(remaining)
                return True
            finally:
                self._flushing -= 1

    def close(self, timeout: float | None = None) -> None:
        """Flush, then stop the sender thread. Messages still unsent after ``timeout``
        fail with ``StoreClosedError``."""
        if self._closed:
            return
        self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._sender.join(timeout)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    # ---- internals ----

    def _full(self, batch: _Batch, extra: int) -> bool:
        return batch.count >= self._batch_max_messages or (
            batch.count > 0 and batch.bytes + extra > self._batch_max_bytes
        )

    def _choose_queue(
        self, topic: str, sharding_key: str | bytes | None, queue_id: int | None
    ) -> int:
        if queue_id is not None:
            return queue_id
        count = self._queue_counts.get(topic)
        if count is None:
            count = self._queue_counts[topic] = len(self._client.route(topic).queues)
        if sharding_key is not None:
            raw = sharding_key.encode() if isinstance(sharding_key, str) else sharding_key
            return zlib.crc32(raw) % count
        counter = self._next_queue.get(topic)
        if counter is None:
            counter = self._next_queue.setdefault(topic, itertools.count())
        return next(counter) % count  # itertools.count is atomic under the GIL

    def _due(self) -> tuple[list[_Batch], bool]:
        """Batches to send now, and whether the sender should exit. Called under the lock;
        waits when nothing is due."""
        while True:
            now = time.monotonic()
            due: list[_Batch] = []
            wake: float | None = None
            for key, (batch, at) in list(self._retries.items()):
                if now >= at or self._closed:
                    due.append(batch)
                    del self._retries[key]
                else:
                    wake = at if wake is None else min(wake, at)
            for key, batches in list(self._waiting.items()):
                if key in self._inflight or not batches:
                    continue
                batch = batches[0]
                if self._ready(batches, now):
                    due.append(self._take_next(key, batches))
                else:
                    at = batch.created + self._linger
                    wake = at if wake is None else min(wake, at)
            if due:
                return due, False
            if self._closed and not self._waiting and not self._inflight and not self._retries:
                return [], True
            self._cond.wait(None if wake is None else max(wake - now, 0.0005))

    def _ready(self, batches: deque[_Batch], now: float) -> bool:
        """Whether the first of a queue's waiting batches should leave now (when the
        queue has nothing in flight). Called under the lock."""
        batch = batches[0]
        return bool(
            self._flushing
            or self._closed
            or len(batches) > 1
            or self._full(batch, 0)
            or now - batch.created >= self._linger
        )

    def _take_next(self, key: QueueKey, batches: deque[_Batch]) -> _Batch:
        """Take a queue's first waiting batch to send it. Called under the lock."""
        batch = batches.popleft()
        if not batches:
            del self._waiting[key]
        self._inflight.add(key)
        return batch

    def _run(self) -> None:
        while True:
            with self._cond:
                due, done = self._due()
            if done:
                return
            for batch in due:
                self._dispatch(batch)

    def _dispatch(self, batch: _Batch) -> None:
        topic, queue_id = batch.key
        if not batch.first_sent:
            batch.first_sent = time.monotonic()
        try:
            route = self._client.route(topic, refresh=batch.refresh_route)
            if queue_id >= len(route.queues):
                route = self._client.route(topic, refresh=True)
            self._queue_counts[topic] = len(route.queues)
            if queue_id >= len(route.queues) or queue_id < 0:
                raise errors.InvalidArgumentError(
                    f"queue {queue_id} does not exist; topic {topic!r} has "
                    f"{len(route.queues)} queues",
                    "queue_id",
                )
            send = self._client.encoded_send(route.queues[queue_id].endpoint)
            call = send.future(
                batch.request.encode(topic, queue_id),
                timeout=self._client.timeout,
                metadata=self._client.metadata,
            )
        except Exception as error:
            if isinstance(error, BrokerError) and error.code in RETRYABLE:
                self._retry_or_fail(batch, error)
            else:
                self._finish(batch, None, error)
            return
        call.add_done_callback(lambda done: self._on_done(batch, done))

    def _on_done(self, batch: _Batch, call: grpc.Future[pb.SendResponse]) -> None:
        try:
            response = call.result()
        except grpc.RpcError as error:
            failure = from_rpc_error(error, f"send to {batch.key[0]}/{batch.key[1]}")
            if failure.code in RETRYABLE:
                self._retry_or_fail(batch, failure)
            else:
                self._finish(batch, None, failure)
            return
        except Exception as error:  # cancelled or a local failure
            self._finish(batch, None, error)
            return
        self._finish(batch, response, None, send_next=True)

    def _retry_or_fail(self, batch: _Batch, error: BrokerError) -> None:
        now = time.monotonic()
        if now - batch.first_sent >= self._retry_timeout or self._closed:
            self._finish(batch, None, error)
            return
        batch.refresh_route = True
        with self._cond:
            self._retries[batch.key] = (batch, now + 0.2)
            self._cond.notify()

    def _finish(
        self,
        batch: _Batch,
        response: pb.SendResponse | None,
        error: BaseException | None,
        *,
        send_next: bool = False,
    ) -> None:
        """Resolve the batch's futures; with ``send_next`` (an answer from the broker,
        not a failure inside ``_dispatch``), also send the queue's next batch if ready."""
        if response is not None and len(response.msg_ids) == batch.count:
            batch.outcome.finish(response, None)
        else:
            failure = error or BrokerError("the broker answered a batch with a wrong count")
            batch.outcome.finish(None, failure)
        following = None
        with self._cond:
            self._inflight.discard(batch.key)
            self._buffered -= batch.bytes
            self._pending -= batch.count
            # The queue's next batch leaves from here, on the thread that saw this one
            # end, when it is ready and needs no route lookup: waking the sender thread
            # would cost a hand-off of the GIL, which measured tens of milliseconds per
            # batch while the application's thread keeps sending.
            # Not while this thread is already sending a next batch: a call that ended
            # before its callback was attached calls back on the spot, and the chain
            # would recurse.
            nested = getattr(self._thread_state, "sending_next", False)
            batches = self._waiting.get(batch.key) if send_next and not nested else None
            if (
                batches
                and not batches[0].refresh_route
                and batch.key not in self._retries
                and self._ready(batches, time.monotonic())
            ):
                following = self._take_next(batch.key, batches)
            self._cond.notify_all()
        if following is not None:
            self._thread_state.sending_next = True
            try:
                self._dispatch(following)
            finally:
                self._thread_state.sending_next = False
