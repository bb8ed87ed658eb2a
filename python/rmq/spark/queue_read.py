"""Reading one partition of a micro-batch: the messages of one queue in ``[start, end)``,
on an executor, from a broker or from store files (the ``pull`` given).

Both back-ends answer a read below the queue's first offset with
``OffsetOutOfRangeError``: retention deleted those messages. That is the one place data
can be lost between planning and reading, so it is decided here: fail with a message
that says how many and what to do (``failOnDataLoss=true``, the default), or log it and
go on from the queue's first offset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rmq._rmqcore import PulledColumns
from rmq.errors import OffsetOutOfRangeError
from rmq.spark.rows import QueueMessage

__all__ = [
    "Pull",
    "RangeRead",
    "Rows",
    "data_loss_error",
    "first_readable",
    "keep_messages",
    "read_range",
]

log = logging.getLogger("rmq.spark")

#: A pull's rows: messages (from a store) or their columns (``PulledColumns``, from a
#: broker); either way ``len()`` counts them.
Rows = TypeVar("Rows", Sequence[QueueMessage], PulledColumns)

#: ``pull(offset, max_count)``: up to ``max_count`` messages from ``offset`` (tag filter
#: applied) and the offset the next pull starts at. The rows are those below the pull's
#: end offset that carry one of its keys, if it was given any (see ``RangeRead``).
Pull = Callable[[int, int], tuple[Rows, int]]  # generic in Rows


@dataclass(frozen=True)
class RangeRead:
    """What an executor needs to read one range (pickled into the partition)."""

    topic: str
    queue_id: int
    start: int
    end: int
    new_queue: bool
    fail_on_data_loss: bool
    keys: tuple[str, ...]
    batch_rows: int


def data_loss_error(topic: str, queue_id: int, wanted: int, first: int) -> OffsetOutOfRangeError:
    return OffsetOutOfRangeError(
        f"data loss: the query is at offset {wanted} of queue {queue_id} of topic {topic!r}, "
        f"but the queue now starts at {first}: {first - wanted} message(s) were deleted by "
        "retention before the query read them. Set the option failOnDataLoss=false to skip "
        "what is gone and go on",
        wanted,
        first,
    )


def first_readable(pull: Pull[Any], low: int, high: int) -> int:
    """The first offset in ``[low, high)`` whose message can be read (``high`` if none).

    A queue's reported first offset can lag behind retention (the engine moves it when a
    reader runs into deleted log, not when the log is deleted; a read-only store or a
    restarted broker reports the old one), so it is checked, and the deleted prefix is
    found by bisection: what retention deletes is always a prefix of the queue.
    """

    def readable(offset: int) -> bool:
        try:
            pull(offset, 1)
        except OffsetOutOfRangeError:
            return False
        return True

    if low >= high or readable(low):
        return low
    low += 1
    while low < high:
        middle = (low + high) // 2
        if readable(middle):
            high = middle
        else:
            low = middle + 1
    return high


def keep_messages(
    messages: Sequence[QueueMessage], end: int, keys: Sequence[str]
) -> list[QueueMessage]:
    """The messages below ``end`` that carry one of ``keys`` (any, if none is given)."""
    kept = [m for m in messages if m.queue_offset < end]
    if keys:
        wanted = set(keys)
        kept = [m for m in kept if not wanted.isdisjoint(m.keys)]
    return kept


def read_range(
    read: RangeRead, pull: Pull[Rows], bounds: Callable[[], tuple[int, int]]
) -> Iterator[Rows]:
    """The range's rows in queue order, pull by pull, each at most ``batch_rows`` long.
    ``pull`` applies the range's end and keys; ``bounds()`` asks for the queue's (first,
    next) offsets now."""
    offset = read.start
    while offset < read.end:
        try:
            rows, next_offset = pull(offset, min(read.batch_rows, read.end - offset))
        except OffsetOutOfRangeError:
            first = first_readable(pull, *bounds())
            if offset >= first:
                raise
            if read.fail_on_data_loss and not read.new_queue:
                raise data_loss_error(read.topic, read.queue_id, offset, first) from None
            if not read.new_queue:
                log.warning("%s", data_loss_error(read.topic, read.queue_id, offset, first))
            offset = first
            continue
        if len(rows):
            yield rows
        if next_offset <= offset:
            raise OffsetOutOfRangeError(
                f"queue {read.queue_id} of topic {read.topic!r} gave nothing at offset "
                f"{offset}, below the end {read.end} planned for this batch",
                offset,
            )
        offset = next_offset
