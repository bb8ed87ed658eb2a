"""The consumer: long polling over every queue of a topic, offsets committed per group.

Each queue has at most one Pull in flight. ``poll`` hands out what is buffered, or waits
until some message arrived or the timeout passed, and starts pulls for queues holding at
most one pull's worth (``max_messages``): a queue reads one pull ahead, so the shard
reads its next messages while the application works through the last ones (waiting for
the buffer to empty left the shards idle while the client handed messages out, and the
client idle while they read). A pull still in flight when ``poll`` returns keeps going,
and what it brings is handed out by a later ``poll``, so nothing is dropped. A pull that
read ahead and failed is acted on once the messages before it are handed out.
``commit`` stores, per queue, the offset after the last message handed out: after a
restart the group resumes there and sees again anything handed out but not committed (at
least once).

A damaged record (the shard answers DATA_LOSS for a pull that starts at it; records
before it come back first) must not stop a group forever. With ``on_corrupt="skip"``
(the default) the consumer logs the shard's message (file, offset, queue offset) as an
error, counts it in ``corrupt_skipped``, and goes on after that one record, so a commit
moves the group past it and no valid record is passed over; when the shard answers with
a ``resume_offset`` (a whole tier object lost from the bucket), it goes on there in one
step and counts every record it passed over. With ``on_corrupt="raise"``
``poll`` raises ``BrokerDataLossError`` (a ``CorruptRecordError``) with ``queue_id`` and
``queue_offset`` set, each time until the application ``seek``s past it.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Literal

from rmq import errors
from rmq._rmqcore import PendingCall, ReceivedMessage, decode_pull_response
from rmq.client.connection import Connection
from rmq.client.status import from_status, is_retryable
from rmq.client.transport import method_path
from rmq.errors import BrokerDataLossError, BrokerError, BrokerOutOfRangeError
from rmq.proto.v1 import broker_pb2 as pb

log = logging.getLogger(__name__)

# Longest wait the client asks of a shard in one Pull (the shard caps it too).
_MAX_WAIT_MS = 10_000
_RETRY_PAUSE = 0.2
_PULL = method_path("Shard", "Pull")
_FETCH_OFFSETS = method_path("Shard", "FetchOffsets")
_QUEUE_OFFSETS = method_path("Shard", "QueueOffsets")
_COMMIT_OFFSETS = method_path("Shard", "CommitOffsets")


class _Queue:
    __slots__ = (
        "buffered", "call", "committed", "delivered", "failed", "fetch", "head",
        "paused_until", "pulled", "queue_id", "reset_from",
    )  # fmt: skip

    def __init__(self, queue_id: int) -> None:
        self.queue_id = queue_id
        self.fetch = -1  # next offset to pull; -1 until positioned
        self.delivered = -1  # offset after the last message handed out
        self.committed = -1
        # What pulls brought and is not handed out yet: their lists as they came (handed
        # out by slices, not one message at a time), ``head`` of the first already gone.
        self.pulled: deque[list[ReceivedMessage]] = deque()
        self.head = 0
        self.buffered = 0
        self.call: PendingCall | None = None
        self.paused_until = 0.0
        self.reset_from = -1  # offset a pull found out of range, to be repositioned
        # A pull that read ahead and failed: (offset, (code, message), resume_offset),
        # acted on once the buffer before it is handed out.
        self.failed: tuple[int, tuple[int, str], int | None] | None = None

    def keep(self, messages: list[ReceivedMessage]) -> None:
        if messages:
            self.pulled.append(messages)
            self.buffered += len(messages)

    def take(self, count: int, out: list[ReceivedMessage]) -> None:
        """Move up to ``count`` buffered messages, in order, to ``out``."""
        while count > 0 and self.pulled:
            first, head = self.pulled[0], self.head
            left = len(first) - head
            if left <= count:
                out += first[head:] if head else first
                self.pulled.popleft()
                self.head = 0
            else:
                left = count
                out += first[head : head + left]
                self.head = head + left
            self.buffered -= left
            count -= left

    def drop_buffered(self) -> None:
        self.pulled.clear()
        self.head = self.buffered = 0


class Consumer:
    """Not thread-safe for concurrent ``poll`` calls; make one per consuming thread.

    Options: ``start`` ("earliest" or "latest") says where a group without a committed
    offset begins; ``max_messages`` and ``max_bytes`` bound one pull of one queue;
    ``tags`` keeps only messages with one of those tags; ``queues`` limits the consumer
    to some queue ids; ``max_poll_messages`` bounds what one ``poll`` returns;
    ``on_corrupt`` ("skip" or "raise") says what a damaged record does (module docstring).
    """

    def __init__(
        self,
        client: Connection,
        group: str,
        topic: str,
        *,
        start: Literal["earliest", "latest"] = "earliest",
        max_messages: int = 1024,
        max_bytes: int = 4 * 1024 * 1024,
        tags: Iterable[str] | None = None,
        queues: Sequence[int] | None = None,
        max_poll_messages: int = 4096,
        on_corrupt: Literal["skip", "raise"] = "skip",
    ) -> None:
        if start not in ("earliest", "latest"):
            raise errors.InvalidArgumentError(
                f"start is {start!r}, not earliest or latest", "start"
            )
        if on_corrupt not in ("skip", "raise"):
            raise errors.InvalidArgumentError(
                f"on_corrupt is {on_corrupt!r}, not skip or raise", "on_corrupt"
            )
        self._on_corrupt = on_corrupt
        self.corrupt_skipped = 0  # damaged records passed over (on_corrupt="skip")
        self._client = client
        self.group = group
        self.topic = topic
        self._start = start
        self._max_messages = max_messages
        self._max_bytes = max_bytes
        self._tags = list(tags or ())
        self._max_poll = max_poll_messages
        self._cond = threading.Condition()
        self._errors: list[BaseException] = []
        self._closed = False
        route = client.route(topic)
        chosen = range(len(route.queues)) if queues is None else queues
        self._queues = {q: _Queue(q) for q in chosen}
        self._positioned = False
        self._next_queue = 0
        self._refresh_route = False

    # ---- positions ----

    def _endpoint(self, queue_id: int, refresh: bool = False) -> str:
        route = self._client.route(self.topic, refresh=refresh)
        return route.queues[queue_id].endpoint

    def _position(self) -> None:
        """Start each queue at the group's committed offset, or at ``start``: the
        committed offsets (one call per shard) and every queue's bounds asked all at once,
        one round trip in all. Asking the bounds only of the queues without a committed
        offset took a second round trip, through the shards' Python servers: 3-35 ms of a
        50k-message read's 30-90 ms (8 queues, 2 shards)."""
        by_endpoint: dict[str, list[int]] = {}
        for queue_id in self._queues:
            by_endpoint.setdefault(self._endpoint(queue_id), []).append(queue_id)
        fetches = [
            (
                f"fetch offsets of {self.group}",
                endpoint,
                _FETCH_OFFSETS,
                pb.FetchOffsetsRequest(
                    group=self.group, topic=self.topic, queue_ids=ids
                ).SerializeToString(),
            )
            for endpoint, ids in by_endpoint.items()
        ]
        bounds = [
            (
                f"QueueOffsets {self.topic}/{queue_id}",
                self._endpoint(queue_id),
                _QUEUE_OFFSETS,
                pb.QueueOffsetsRequest(topic=self.topic, queue_id=queue_id).SerializeToString(),
            )
            for queue_id in self._queues
        ]
        answers = self._client.call_all_bytes(fetches + bounds)
        committed = {
            entry.queue_id: entry.offset
            for raw in answers[: len(fetches)]
            for entry in pb.FetchOffsetsResponse.FromString(raw).offsets
        }
        for queue_id, raw in zip(self._queues, answers[len(fetches) :], strict=True):
            state = self._queues[queue_id]
            if queue_id in committed:
                state.fetch = state.delivered = state.committed = committed[queue_id]
                continue
            end = pb.QueueOffsetsResponse.FromString(raw)
            start = end.min_offset if self._start == "earliest" else end.max_offset
            state.fetch = state.delivered = start
        self._positioned = True

    def positions(self) -> dict[int, int]:
        """Per queue, the offset after the last message handed out."""
        with self._cond:
            return {q: s.delivered for q, s in self._queues.items()}

    def seek(self, queue_id: int, offset: int) -> None:
        """Continue ``queue_id`` from ``offset`` (drops what is buffered for it)."""
        if not self._positioned:
            self._position()
        with self._cond:
            state = self._queues[queue_id]
            if state.call is not None:
                state.call.cancel()
                state.call = None
            state.drop_buffered()
            state.failed = None
            state.fetch = state.delivered = offset

    # ---- polling ----

    def poll(self, timeout: float = 1.0) -> list[ReceivedMessage]:
        """Messages that arrived within ``timeout`` seconds (possibly none), in queue
        order per queue."""
        if self._closed:
            raise errors.StoreClosedError("the consumer is closed")
        if not self._positioned:
            self._position()
        deadline = time.monotonic() + max(timeout, 0.0)
        with self._cond:
            while True:
                if self._errors:
                    raise self._errors.pop(0)
                out = self._drain()
                now = time.monotonic()
                if out:
                    # Queues read ahead now, while the caller works through what it got.
                    self._start_pulls(int(max(deadline - now, 0.0) * 1000))
                    return out
                if now >= deadline:
                    return []
                self._start_pulls(int((deadline - now) * 1000))
                self._cond.wait(min(deadline - now, _RETRY_PAUSE))

    def __iter__(self) -> Iterator[ReceivedMessage]:
        """Yield messages one by one, waiting for new ones, until ``close``."""
        while not self._closed:
            yield from self.poll(1.0)

    def _drain(self) -> list[ReceivedMessage]:
        out: list[ReceivedMessage] = []
        order = list(self._queues.values())
        start = self._next_queue % len(order) if order else 0
        self._next_queue += 1
        for state in order[start:] + order[:start]:
            take = min(state.buffered, self._max_poll - len(out))
            if take <= 0:
                continue
            state.take(take, out)
            state.delivered = out[-1].queue_offset + 1
            if not state.buffered and state.failed is not None:
                offset, error, resume_offset = state.failed
                state.failed = None
                self._failed(state, offset, error, resume_offset)
        return out

    def _start_pulls(self, wait_ms: int) -> None:
        if self._refresh_route:
            self._refresh_route = False
            try:
                self._client.route(self.topic, refresh=True)
            except BrokerError as error:
                log.info("route of %s: %s", self.topic, error)
        now = time.monotonic()
        for state in self._queues.values():
            if (
                state.call is not None
                or state.buffered > self._max_messages
                or state.failed is not None
                or now < state.paused_until
            ):
                continue
            if state.reset_from >= 0:
                self._reset_out_of_range(state)
                if state.reset_from >= 0:
                    continue
            try:
                endpoint = self._endpoint(state.queue_id)
            except BrokerError as error:
                self._pause(state, error)
                continue
            wait = min(max(wait_ms, 0), _MAX_WAIT_MS)
            request = pb.PullRequest(
                topic=self.topic,
                queue_id=state.queue_id,
                offset=state.fetch,
                max_messages=self._max_messages,
                max_bytes=self._max_bytes,
                tags=self._tags,
                wait_ms=wait,
            )
            try:
                state.call = self._client.transport.start(
                    endpoint,
                    _PULL,
                    request.SerializeToString(),
                    functools.partial(self._pulled, state, state.fetch),
                    timeout=wait / 1000 + self._client.timeout,
                )
            except BrokerError as error:  # the client is closed
                self._errors.append(error)

    def _pulled(self, state: _Queue, offset: int, call: PendingCall) -> None:
        """A pull ended (on the transport's completion thread)."""
        with self._cond:
            if state.call is not call:
                return  # cancelled by seek or close
            state.call = None
            if call.error is not None:
                if state.buffered:  # it read ahead: the messages before it go out first
                    state.failed = (offset, call.error, call.resume_offset)
                else:
                    self._failed(state, offset, call.error, call.resume_offset)
                self._cond.notify_all()
                return
            if state.fetch == offset:
                messages, state.fetch, _, _ = decode_pull_response(call)
                state.keep(messages)
            self._cond.notify_all()

    def _failed(
        self, state: _Queue, offset: int, error: tuple[int, str], resume_offset: int | None
    ) -> None:
        """The pull from ``offset`` failed with ``error`` (code, message), and every
        message before it was handed out."""
        code, message = error
        failure = from_status(code, message, f"pull {self.topic}/{state.queue_id}", resume_offset)
        if isinstance(failure, BrokerOutOfRangeError):
            state.reset_from = offset
        elif isinstance(failure, BrokerDataLossError) and state.fetch == offset:
            self._damaged(state, offset, failure)
        elif is_retryable(failure.code):
            self._pause(state, failure)
        else:
            self._errors.append(failure)

    def _damaged(self, state: _Queue, offset: int, failure: BrokerDataLossError) -> None:
        """The record at ``offset`` is damaged; everything before it was handed out (a
        failed pull waits for the buffer before it to be handed out). When the shard says where the
        queue's records past the lost data start (a tier object gone: ``resume_offset``),
        the skip goes there in one step."""
        failure.queue_id = state.queue_id
        failure.queue_offset = offset
        if self._on_corrupt == "raise":
            self._errors.append(failure)
            return
        resume = failure.resume_offset
        past = resume if resume is not None and resume > offset else offset + 1
        where = f"record at offset {offset}"
        if past > offset + 1:
            where = f"records at offsets {offset} to {past - 1} (lost from the tier)"
        log.error(
            "skipping the damaged %s of queue %d of %s (group %s): %s",
            where, state.queue_id, self.topic, self.group, failure,
        )  # fmt: skip
        self.corrupt_skipped += past - offset
        state.fetch = state.delivered = past

    def _pause(self, state: _Queue, error: BaseException) -> None:
        log.info("queue %d of %s: %s; retrying", state.queue_id, self.topic, error)
        state.paused_until = time.monotonic() + _RETRY_PAUSE
        self._refresh_route = True

    def _reset_out_of_range(self, state: _Queue) -> None:
        offset = state.reset_from
        try:
            low, high = self._client.queue_offsets(self.topic, state.queue_id)
        except BrokerError as error:
            self._pause(state, error)
            return
        target = low if offset < low else high
        log.warning(
            "offset %d of queue %d of %s is gone (queue holds %d to %d); continuing at %d",
            offset, state.queue_id, self.topic, low, high, target,
        )  # fmt: skip
        state.fetch = state.delivered = target
        state.reset_from = -1

    # ---- commits ----

    def commit(self) -> None:
        """Store, for the group, the offset after the last message handed out per queue."""
        with self._cond:
            pending = {
                q: s.delivered
                for q, s in self._queues.items()
                if s.delivered >= 0 and s.delivered != s.committed
            }
        if not pending:
            return
        by_endpoint: dict[str, list[pb.QueueOffset]] = {}
        for queue_id, offset in pending.items():
            by_endpoint.setdefault(self._endpoint(queue_id), []).append(
                pb.QueueOffset(queue_id=queue_id, offset=offset)
            )
        for endpoint, offsets in by_endpoint.items():
            self._client.call(
                f"commit offsets of {self.group}",
                endpoint,
                _COMMIT_OFFSETS,
                pb.CommitOffsetsRequest(group=self.group, topic=self.topic, offsets=offsets),
                pb.CommitOffsetsResponse,
            )
        with self._cond:
            for queue_id, offset in pending.items():
                self._queues[queue_id].committed = offset

    def close(self, commit: bool = False) -> None:
        """Stop pulling; with ``commit``, commit first."""
        if self._closed:
            return
        if commit:
            self.commit()
        with self._cond:
            self._closed = True
            for state in self._queues.values():
                if state.call is not None:
                    state.call.cancel()
                    state.call = None
            self._cond.notify_all()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()
