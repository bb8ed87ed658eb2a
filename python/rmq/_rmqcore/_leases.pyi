"""RocketMQ v2 leases: which messages each consumer group holds invisible, until when."""

from collections.abc import Sequence
from typing import final

from ._message import Message
from ._store import Store

@final
class LeaseBook:
    """The RocketMQ v2 lease book of one store directory (``config/rocketmqLeases.json``):
    which messages each consumer group holds invisible, until when, and what it acked.
    One object per store serves both the Python path and the native data plane."""

    def __new__(cls, store: Store) -> LeaseBook: ...
    def claim(
        self,
        group: str,
        topic: str,
        queue_id: int,
        room: int,
        tags: Sequence[str] | None,
        invisible_ms: int,
        max_attempts: int,
    ) -> tuple[list[bytes], list[tuple[int, int, Message]]]:
        """Up to ``room`` messages of the queue for ``group``, each an encoded
        ``apache.rocketmq.v2.Message`` with its receipt handle; and ``(offset, attempt,
        message)`` of each message due again with no attempt left (left leased: the
        caller dead-letters and settles it)."""
    def ack(self, group: str, topic: str, queue_id: int, offset: int, attempt: int) -> bool:
        """Ack that delivery; False when it is not the one out."""
    def extend(
        self, group: str, topic: str, queue_id: int, offset: int, attempt: int, invisible_ms: int
    ) -> str | None:
        """Keep that delivery invisible ``invisible_ms`` from now: its new receipt handle,
        None when it is not the one out."""
    def settle(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Done with ``offset`` (moved to the dead-letter topic)."""
    def save(self) -> bool:
        """Commit each group's acked edge as its offset; write the book if it changed."""

def decode_receipt(handle: str) -> tuple[str, int, int, int, int] | None:
    """``(topic, queue_id, offset, attempt, deadline_ms)`` of a RocketMQ v2 receipt handle,
    None when it is not one of this broker's."""
