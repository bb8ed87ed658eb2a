"""What the RocketMQ v2 servicer reads from requests besides messages: tag filters and
durations.

A sent v2 message becomes a record in the engine (``rmqnet::rocketmq::check``, which
answers every SendMessage): the tag in ``TAGS``, keys in ``KEYS``, the client's message id
in ``UNIQ_KEY``, the message group in ``__SHARDINGKEY``. Reading reverses it
(``rmqnet::rocketmq::outgoing``), so a message sent by an official client reads the same
through ``rmq.Client`` and the other way round.
"""

from __future__ import annotations

from google.protobuf.duration_pb2 import Duration

from rmq.errors import ProtocolError
from rmq.rocketmq.wire import v2

UNIQ_KEY = "UNIQ_KEY"
MESSAGE_GROUP = "__SHARDINGKEY"


def tag_filter(expression: v2.FilterExpression) -> list[str] | None:
    """The tags a receive asks for, ``None`` for all; only TAG expressions exist here."""
    if expression.type == v2.SQL:
        raise ProtocolError(
            "NOT_IMPLEMENTED", "SQL92 filter expressions are not supported; filter by tag"
        )
    text = expression.expression.strip()
    if not text or text == "*":
        return None
    tags = [t.strip() for t in text.split("||")]
    if any(not t or t == "*" for t in tags):
        raise ProtocolError("ILLEGAL_FILTER_EXPRESSION", f"tag expression {text!r} is malformed")
    return tags


def millis(duration: Duration) -> int:
    return int(duration.seconds) * 1000 + int(duration.nanos) // 1_000_000
