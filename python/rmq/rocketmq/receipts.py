"""Receipt handles: what a consumer gets with each received message and gives back to
ack it or change how long it stays invisible.

A handle names the message (topic, queue, offset) and the delivery it came from (the
attempt number), so that an ack of an earlier delivery of a message that has since been
delivered again is refused instead of acking the newer one. The format has one copy, in
the engine (``rmqnet::rocketmq::receipt``), which writes the handles of both v2 paths;
this reads one for the Python path.
"""

from __future__ import annotations

from dataclasses import dataclass

from rmq._rmqcore import decode_receipt
from rmq.errors import ProtocolError


@dataclass(frozen=True, slots=True)
class Receipt:
    topic: str
    queue_id: int
    offset: int
    attempt: int
    deadline_ms: int

    @classmethod
    def decode(cls, text: str) -> Receipt:
        fields = decode_receipt(text)
        if fields is None:
            raise ProtocolError(
                "INVALID_RECEIPT_HANDLE", f"{text!r} is not a receipt handle of this broker"
            )
        return cls(*fields)
