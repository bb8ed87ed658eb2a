"""Splitting many messages into batches a producer's ``send_batch`` takes whole.

``send_batch`` refuses a batch over ``batch_max_messages`` or ``batch_max_bytes`` rather
than splitting it (its messages are stored together or not at all), so a caller with
more messages than one batch holds splits them first, counting each message as its body
plus ``Producer.MESSAGE_OVERHEAD``, as the producer does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from rmq._rmqcore import ProducerCore

Item = TypeVar("Item")


def within_batch_limits(
    items: Iterable[Item],
    body_size: Callable[[Item], int],
    max_messages: int,
    max_bytes: int,
) -> Iterator[list[Item]]:
    """``items`` in order, in consecutive groups of at most ``max_messages`` whose bodies
    plus overhead fit ``max_bytes``. An item too big for any batch comes alone: the caller
    decides what to do with it (``send_batch`` would refuse it, naming the limit)."""
    overhead = ProducerCore.MESSAGE_OVERHEAD
    batch: list[Item] = []
    size = 0
    for item in items:
        item_size = body_size(item) + overhead
        if batch and (len(batch) >= max_messages or size + item_size > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += item_size
    if batch:
        yield batch
