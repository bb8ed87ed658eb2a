"""What a shard process does for RocketMQ v2 clients besides storing sent messages (the
native data plane answers every SendMessage: ``rmqnet::rocketmq::send``): hand out
messages to consumer groups with an invisible duration, take acks, redeliver what was
not acked in time, and move what failed too often to the group's dead-letter topic.

It works on the same stores, topic layouts and long-poll signals as rmq's own API
(:class:`rmq.broker.shard_handler.ShardHandler`), so a message sent through either API
reads through the other, and a group's committed offset (``Store.commit_offset``) is the
low edge of what it acked. The leases, the rule of what a receive claims, the receipt
handles and the received messages live in the engine (``rmq._rmqcore.LeaseBook``, from
``rmqnet::rocketmq``): the process's native data plane answers receives and acks on the
same books, so the two paths never disagree. What stays here is what the native path
declines: malformed requests, and moving messages out of attempts to the dead-letter
topic (through the broker's routes).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import rmq
from rmq import errors
from rmq._rmqcore import LeaseBook
from rmq.broker.shard_handler import ShardHandler
from rmq.broker.validation import check_group, check_topic
from rmq.errors import ProtocolError
from rmq.rocketmq.receipts import Receipt
from rmq.rocketmq.settings import ConsumerPolicy
from rmq.rocketmq.wire import v2

log = logging.getLogger(__name__)

DLQ_PREFIX = "%DLQ%"
SAVE_INTERVAL = 0.2
# Bounds of a receive's invisible duration (RocketMQ's proxy: 10 s to 12 h; rmq lets
# tests and impatient consumers go down to 1 s).
MIN_INVISIBLE_MS = 1_000
MAX_INVISIBLE_MS = 12 * 3600 * 1000
# A PushConsumer asks the broker to keep its messages invisible while it works on them.
AUTO_RENEW_INVISIBLE_MS = 60_000
MAX_WAIT_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class ReceiveRequest:
    group: str
    topic: str
    queue_id: int
    batch_size: int
    invisible_ms: int
    wait_seconds: float
    tags: list[str] | None


@dataclass(slots=True)
class _DeadLetter:
    shard: int
    queue_id: int
    offset: int
    attempt: int
    message: rmq.Message


class ShardBackend:
    """Thread-safe. ``dead_letters`` sends a message to a dead-letter topic (through the
    broker's routes, since that topic's queue may live in another process)."""

    def __init__(
        self,
        handler: ShardHandler,
        stores: Mapping[int, rmq.Store],
        *,
        policy: ConsumerPolicy,
        dead_letters: Callable[[str, rmq.Message], None],
        books: Mapping[int, LeaseBook],
    ) -> None:
        self._handler = handler
        self._stores = dict(stores)
        self.policy = policy
        self._dead_letters = dead_letters
        self._books = dict(books)
        self._stop = threading.Event()
        self._saver = threading.Thread(target=self._save_loop, name="v2-leases", daemon=True)
        self._saver.start()

    # ---- receiving ----

    def receive(self, request: ReceiveRequest, active: Callable[[], bool]) -> list[v2.Message]:
        """Up to ``batch_size`` messages of the topic's queues in this process (the one
        asked for first), waiting up to ``wait_seconds`` for one to arrive."""
        check_group(request.group)
        self._check_invisible(request.invisible_ms)
        queues = self._local_queues(request.topic, request.queue_id)
        deadline = time.monotonic() + min(request.wait_seconds, MAX_WAIT_SECONDS)
        key = (request.topic, queues[0])
        while True:
            version = self._handler.signals.version(key)
            found: list[v2.Message] = []
            for queue_id in queues:
                found += self._claim(request, queue_id, request.batch_size - len(found))
                if len(found) >= request.batch_size:
                    break
            remaining = deadline - time.monotonic()
            if found or remaining <= 0 or not active():
                return found
            # Woken by a send to the first queue; the others and redeliveries are
            # looked at again at least every second.
            pause = min(remaining, 1.0)
            started = time.monotonic()
            if not self._handler.signals.wait(key, version, pause):
                # Too many receives wait already (each holds a thread): poll instead.
                time.sleep(max(0.0, min(0.05, pause - (time.monotonic() - started))))

    def _claim(self, request: ReceiveRequest, queue_id: int, room: int) -> list[v2.Message]:
        if room <= 0:
            return []
        shard, _ = self._store(request.topic, queue_id)
        found, exhausted = self._books[shard].claim(
            request.group,
            request.topic,
            queue_id,
            room,
            request.tags,
            request.invisible_ms,
            self.policy.max_delivery_attempts,
        )
        for offset, attempt, message in exhausted:
            letter = _DeadLetter(shard, queue_id, offset, attempt, message)
            self._dead_letter(request.group, request.topic, letter)
        return [v2.Message.FromString(encoded) for encoded in found]

    # ---- acks and invisible time ----

    def ack(self, group: str, topic: str, receipt_handle: str) -> None:
        receipt = self._receipt(topic, receipt_handle)
        check_group(group)
        shard, _ = self._store(topic, receipt.queue_id)
        book = self._books[shard]
        if not book.ack(group, topic, receipt.queue_id, receipt.offset, receipt.attempt):
            raise _stale(receipt)

    def change_invisible(
        self, group: str, topic: str, receipt_handle: str, invisible_ms: int
    ) -> str:
        """A new deadline for a received message; its new receipt handle."""
        receipt = self._receipt(topic, receipt_handle)
        check_group(group)
        self._check_invisible(invisible_ms, allow_zero=True)
        shard, _ = self._store(topic, receipt.queue_id)
        handle = self._books[shard].extend(
            group, topic, receipt.queue_id, receipt.offset, receipt.attempt, invisible_ms
        )
        if handle is None:
            raise _stale(receipt)
        return handle

    def forward_to_dead_letters(self, group: str, topic: str, receipt_handle: str) -> None:
        """The client gave up on a message (its own attempts ran out)."""
        receipt = self._receipt(topic, receipt_handle)
        check_group(group)
        shard, store = self._store(topic, receipt.queue_id)
        message = self._message_at(store, topic, receipt.queue_id, receipt.offset)
        if message is None:
            raise ProtocolError("MESSAGE_NOT_FOUND", "the message has expired from the store")
        self._dead_letter(
            group,
            topic,
            _DeadLetter(shard, receipt.queue_id, receipt.offset, receipt.attempt, message),
        )

    def _dead_letter(self, group: str, topic: str, letter: _DeadLetter) -> None:
        dlq = DLQ_PREFIX + group
        try:
            self._dead_letters(dlq, letter.message)
        except Exception as error:  # kept leased: due again, tried again
            log.warning(
                "cannot move %s/%d@%d to %s: %s", topic, letter.queue_id, letter.offset, dlq, error
            )
            return
        self._books[letter.shard].settle(group, topic, letter.queue_id, letter.offset)
        log.info(
            "moved %s/%d@%d to %s after %d deliveries",
            topic,
            letter.queue_id,
            letter.offset,
            dlq,
            letter.attempt,
        )

    # ---- helpers ----

    def _receipt(self, topic: str, handle: str) -> Receipt:
        receipt = Receipt.decode(handle)
        if receipt.topic != topic:
            raise ProtocolError(
                "INVALID_RECEIPT_HANDLE",
                f"the receipt is for topic {receipt.topic!r}, not {topic!r}",
            )
        return receipt

    def _check_invisible(self, invisible_ms: int, allow_zero: bool = False) -> None:
        low = 0 if allow_zero else MIN_INVISIBLE_MS
        if not low <= invisible_ms <= MAX_INVISIBLE_MS:
            raise ProtocolError(
                "ILLEGAL_INVISIBLE_TIME",
                f"invisible duration {invisible_ms} ms is outside {low} ms to 12 h",
            )

    def _check_topic(self, topic: str) -> None:
        if not topic:
            raise ProtocolError("ILLEGAL_TOPIC", "no topic given")
        try:
            check_topic(topic)
        except errors.InvalidArgumentError as error:
            raise ProtocolError("ILLEGAL_TOPIC", str(error)) from None
        if not self._handler.hosts(topic):
            raise ProtocolError("TOPIC_NOT_FOUND", f"topic {topic!r} does not exist")

    def _store(self, topic: str, queue_id: int) -> tuple[int, rmq.Store]:
        self._check_topic(topic)
        return self._handler.locate(topic, queue_id)

    def _local_queues(self, topic: str, first: int) -> list[int]:
        """The queues of ``topic`` this process serves, ``first`` first."""
        self._check_topic(topic)
        local = self._handler.local_queues(topic)
        if not local:
            raise errors.QueueNotHostedError(
                f"no queue of topic {topic!r} lives in this shard process; refresh the route"
            )
        return sorted(local, key=lambda q: (q != first, q))

    @staticmethod
    def _message_at(store: rmq.Store, topic: str, queue_id: int, offset: int) -> rmq.Message | None:
        try:
            found = store.get(topic, queue_id, offset, 1)
        except errors.OffsetOutOfRangeError:
            return None
        return found[0] if found else None

    def _save_loop(self) -> None:
        while not self._stop.wait(SAVE_INTERVAL):
            self._save()

    def _save(self) -> None:
        """Save each book that changed, and commit each group's acked edge as its offset
        (batched here: the store writes consumerOffset.json at every commit)."""
        for shard, book in self._books.items():
            try:
                book.save()
            except (OSError, errors.RmqError) as error:
                log.warning("cannot save the RocketMQ v2 leases of shard %d: %s", shard, error)

    def close(self) -> None:
        self._stop.set()
        self._saver.join()
        self._save()


def _stale(receipt: Receipt) -> ProtocolError:
    return ProtocolError(
        "INVALID_RECEIPT_HANDLE",
        f"offset {receipt.offset} of queue {receipt.queue_id} is not out on this receipt "
        "(acked already, or delivered again since)",
    )
