"""Receipt handles: what a consumer gets with each received message and gives back to
ack it or change how long it stays invisible.

A handle names the message (topic, queue, offset) and the delivery it came from (the
attempt number), so that an ack of an earlier delivery of a message that has since been
delivered again is refused instead of acking the newer one. It is opaque to clients:
``<queue>/<offset>/<attempt>/<deadline ms>/<topic>`` (topic names cannot hold ``/``).
"""

from __future__ import annotations

from dataclasses import dataclass

from rmq.errors import ProtocolError


@dataclass(frozen=True, slots=True)
class Receipt:
    topic: str
    queue_id: int
    offset: int
    attempt: int
    deadline_ms: int

    def encode(self) -> str:
        return f"{self.queue_id}/{self.offset}/{self.attempt}/{self.deadline_ms}/{self.topic}"

    @classmethod
    def decode(cls, text: str) -> Receipt:
        parts = text.split("/", 4)
        try:
            queue_id, offset, attempt, deadline_ms = (int(p) for p in parts[:4])
            topic = parts[4]
        except (ValueError, IndexError):
            raise ProtocolError(
                "INVALID_RECEIPT_HANDLE", f"{text!r} is not a receipt handle of this broker"
            ) from None
        if min(queue_id, offset, attempt, deadline_ms) < 0 or not topic:
            raise ProtocolError(
                "INVALID_RECEIPT_HANDLE", f"{text!r} is not a receipt handle of this broker"
            )
        return cls(topic, queue_id, offset, attempt, deadline_ms)
