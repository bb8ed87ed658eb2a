"""The broker's limits, and the checks of what the Python server's requests carry (admin,
offsets, lookups) before any of it reaches a store.

Each check raises an ``rmq.errors`` class whose message names the field and says what
was wrong; :mod:`rmq.broker.status` turns it into the status code. Sends and pulls are
checked by the native data plane with the engine's rules (rmqnet ``send_check.rs``,
``shard_pull.rs``), in the same words.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from rmq._rmqcore import validate_group, validate_topic
from rmq.errors import InvalidArgumentError


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds a shard enforces on requests."""

    max_body_bytes: int = 4 * 1024 * 1024
    max_batch_messages: int = 8192
    max_batch_bytes: int = 16 * 1024 * 1024
    max_queues: int = 1024
    max_pull_messages: int = 1024
    default_pull_messages: int = 32
    max_pull_bytes: int = 16 * 1024 * 1024
    default_pull_bytes: int = 4 * 1024 * 1024
    max_wait_ms: int = 30_000
    max_lookup_messages: int = 1024

    @property
    def max_request_bytes(self) -> int:
        """gRPC's receive limit: a little above the largest valid batch, so that a batch
        slightly over the limit gets the broker's message (the data plane's limit check)
        rather than gRPC's."""
        return self.max_batch_bytes + 1024 * 1024


def check_topic(topic: str) -> str:
    """The engine's rules (1 to 255 bytes of ``%|a-zA-Z0-9_-``), checked by the engine."""
    validate_topic(topic)
    return topic


def check_group(group: str) -> str:
    validate_group(group)
    return group


def check_queue_id(queue_id: int) -> int:
    if queue_id < 0:
        raise InvalidArgumentError(f"queue_id {queue_id} is negative", "queue_id")
    return queue_id


def check_offset(offset: int, what: str = "offset") -> int:
    if offset < 0:
        raise InvalidArgumentError(f"{what} {offset} is negative", what)
    return offset


def check_queue_count(queues: int, limits: Limits) -> int:
    if not 1 <= queues <= limits.max_queues:
        raise InvalidArgumentError(
            f"queues is {queues}; a topic has between 1 and {limits.max_queues} queues",
            "queues",
        )
    return queues


def bounded(value: int, default: int, maximum: int, what: str) -> int:
    """0 means ``default``; negative is an error; anything above ``maximum`` is capped."""
    if value < 0:
        raise InvalidArgumentError(f"{what} {value} is negative", what)
    if value == 0:
        return default
    return min(value, maximum)


_MSG_ID_LENGTHS = {32: 4, 56: 16}


def parse_msg_id(msg_id: str) -> tuple[str, int, int]:
    """RocketMQ's offset message id as (store host ip, store port, commit-log offset)."""
    address_bytes = _MSG_ID_LENGTHS.get(len(msg_id))
    if address_bytes is None or not re.fullmatch(r"[0-9A-Fa-f]+", msg_id):
        raise InvalidArgumentError(
            f"msg_id {msg_id!r} is not 32 or 56 hex digits (store host, port, offset)",
            "msg_id",
        )
    raw = bytes.fromhex(msg_id)
    address = raw[:address_bytes]
    if address_bytes == 4:
        host = ".".join(str(b) for b in address)
    else:
        host = str(ipaddress.IPv6Address(address))
    port = int.from_bytes(raw[address_bytes : address_bytes + 4], "big", signed=True)
    offset = int.from_bytes(raw[address_bytes + 4 :], "big", signed=True)
    return host, port, offset
