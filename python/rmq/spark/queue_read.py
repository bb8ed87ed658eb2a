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

from rmq.errors import OffsetOutOfRangeError
from rmq.spark.rows import QueueMessage

__all__ = ["RangeRead", "data_loss_error", "first_readable", "read_range"]

log = logging.getLogger("rmq.spark")

#: ``pull(offset, max_count)``: up to ``max_count`` messages from ``offset`` (tag filter
#: applied) and the offset the next pull starts at.
Pull = Callable[[int, int], tuple[Sequence[QueueMessage], int]]


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


def first_readable(pull: Pull, low: int, high: int) -> int:
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


def read_range(
    read: RangeRead, pull: Pull, bounds: Callable[[], tuple[int, int]]
) -> Iterator[list[QueueMessage]]:
    """Lists of the range's messages in queue order (keys filter applied), each at most
    ``batch_rows`` long. ``bounds()`` asks for the queue's (first, next) offsets now."""
    wanted = set(read.keys)
    offset = read.start
    while offset < read.end:
        try:
            messages, next_offset = pull(offset, min(read.batch_rows, read.end - offset))
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
        kept = [m for m in messages if m.queue_offset < read.end]
        if wanted:
            kept = [m for m in kept if not wanted.isdisjoint(m.keys)]
        if kept:
            yield kept
        if next_offset <= offset:
            raise OffsetOutOfRangeError(
                f"queue {read.queue_id} of topic {read.topic!r} gave nothing at offset "
                f"{offset}, below the end {read.end} planned for this batch",
                offset,
            )
        offset = next_offset
