"""RocketMQ v2 messages to the engine's and back.

What a v2 message carries in its system properties becomes what RocketMQ's broker keeps
in a record: the tag in ``TAGS``, keys in ``KEYS``, the client's message id in
``UNIQ_KEY``, the message group in ``__SHARDINGKEY``. Reading reverses it, so a message
sent by an official client reads the same through ``rmq.Client`` and the other way round.
Reading (a stored message as a receiving client sees it) is the engine's, for both v2
paths: ``rmqnet::rocketmq::outgoing``.
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

import rmq
from rmq._rmqcore import native_rocketmq_system_properties
from rmq.broker.validation import Limits
from rmq.errors import ProtocolError
from rmq.rocketmq.wire import v2

UNIQ_KEY = "UNIQ_KEY"
MESSAGE_GROUP = "__SHARDINGKEY"
# Properties RocketMQ's broker keeps for itself; a client may not set them as user
# properties, and a reader sees them as system properties (or not at all). The one list
# is the native data plane's (rmqnet::rocketmq::check), so both paths refuse the same.
SYSTEM_PROPERTIES = frozenset(native_rocketmq_system_properties())
SUPPORTED_TYPES = (v2.NORMAL, v2.FIFO)


@dataclass(frozen=True, slots=True)
class Incoming:
    """A v2 message checked and ready to store."""

    topic: str
    message_id: str
    message: rmq.Message


def incoming(message: v2.Message, limits: Limits) -> Incoming:
    """Check a sent message the way RocketMQ's proxy does; raises ``ProtocolError``."""
    system = message.system_properties
    topic = message.topic.name
    if not topic:
        raise ProtocolError("ILLEGAL_TOPIC", "the message names no topic")
    if not system.message_id:
        raise ProtocolError("ILLEGAL_MESSAGE_ID", "the message has no message_id")
    body = _decoded_body(message.body, system.body_encoding)
    if not body:
        raise ProtocolError("MESSAGE_BODY_EMPTY", "the message body is empty")
    if len(body) > limits.max_body_bytes:
        raise ProtocolError(
            "MESSAGE_BODY_TOO_LARGE",
            f"the body is {len(body)} bytes; this broker takes at most {limits.max_body_bytes}",
        )
    group = system.message_group if system.HasField("message_group") else None
    _check_type(system.message_type, group, system.HasField("delivery_timestamp"))
    tag = system.tag if system.HasField("tag") else None
    if tag is not None and (not tag.strip() or "|" in tag or _has_control(tag)):
        raise ProtocolError("ILLEGAL_MESSAGE_TAG", f"tag {tag!r} is blank or holds '|'")
    for key in system.keys:
        if not key.strip() or " " in key or _has_control(key):
            raise ProtocolError("ILLEGAL_MESSAGE_KEY", f"key {key!r} is blank or holds a space")
    if group is not None and (not group.strip() or _has_control(group)):
        raise ProtocolError("ILLEGAL_MESSAGE_GROUP", f"message group {group!r} is blank")
    properties: dict[str, str] = {}
    # By name: a protobuf map has no order of its own (the native data plane,
    # rmqnet/src/rocketmq, stores them in the same order).
    for name, value in sorted(message.user_properties.items()):
        if not name or name in SYSTEM_PROPERTIES or _has_control(name) or _has_control(value):
            raise ProtocolError(
                "ILLEGAL_MESSAGE_PROPERTY_KEY",
                f"property {name!r} is reserved by the broker or holds a control character",
            )
        if not value:
            raise ProtocolError("ILLEGAL_MESSAGE_PROPERTY_KEY", f"property {name!r} is empty")
        properties[name] = value
    properties[UNIQ_KEY] = system.message_id
    if group is not None:
        properties[MESSAGE_GROUP] = group
    born = _millis(system.born_timestamp) if system.HasField("born_timestamp") else None
    return Incoming(
        topic,
        system.message_id,
        rmq.Message(
            body, tags=tag, keys=list(system.keys), properties=properties, born_timestamp=born
        ),
    )


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


def _check_type(kind: int, group: str | None, delayed: bool) -> None:
    if kind in (v2.DELAY, v2.TRANSACTION) or delayed:
        raise ProtocolError(
            "NOT_IMPLEMENTED",
            "delay and transactional messages are not supported; send normal or FIFO messages",
        )
    if kind not in (*SUPPORTED_TYPES, v2.MESSAGE_TYPE_UNSPECIFIED):
        raise ProtocolError(
            "UNSUPPORTED", f"message type {v2.MessageType.Name(kind)} is not supported"
        )
    if kind == v2.FIFO and group is None:
        raise ProtocolError(
            "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE", "a FIFO message needs a message group"
        )
    if kind == v2.NORMAL and group is not None:
        raise ProtocolError(
            "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE", "a normal message cannot have a message group"
        )


def _decoded_body(body: bytes, encoding: int) -> bytes:
    if encoding == v2.GZIP:
        try:
            return gzip.decompress(body)
        except (OSError, EOFError, zlib.error) as error:
            raise ProtocolError(
                "MESSAGE_CORRUPTED", f"the gzip body does not decode: {error}"
            ) from None
    return body


def _has_control(text: str) -> bool:
    return any(ord(c) < 0x20 for c in text)


def _millis(timestamp: Timestamp) -> int:
    return int(timestamp.seconds) * 1000 + int(timestamp.nanos) // 1_000_000


def millis(duration: Duration) -> int:
    return int(duration.seconds) * 1000 + int(duration.nanos) // 1_000_000
