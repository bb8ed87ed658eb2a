"""The streaming source's offsets: per queue of the topic, the next queue offset to read.

Spark keeps them as JSON in the query's checkpoint (one document per micro-batch) in
Kafka's shape, ``{"orders": {"0": 1200, "1": 1187}}``; a micro-batch reads, per queue,
``[start, end)`` of two consecutive ones. Queue offsets are dense (one per message of the
queue, tag-filtered or not), so an offset range says exactly which messages a batch
holds: a restarted query re-reads a planned batch to the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rmq.errors import InvalidArgumentError

__all__ = [
    "QueueRange",
    "cap_offsets",
    "group_ranges",
    "offsets_from_json",
    "offsets_to_json",
    "plan_ranges",
]

#: Queue id to offset.
Offsets = dict[int, int]


def offsets_to_json(topic: str, offsets: Mapping[int, int]) -> dict[str, dict[str, int]]:
    return {topic: {str(queue): offsets[queue] for queue in sorted(offsets)}}


def offsets_from_json(topic: str, document: Mapping[str, object]) -> Offsets:
    """The offsets Spark hands back (from ``offsets_to_json``, through the checkpoint)."""
    queues = document.get(topic)
    if not isinstance(queues, dict):
        raise InvalidArgumentError(
            f"the checkpoint's offsets {dict(document)!r} are not for topic {topic!r}: "
            "a checkpoint belongs to one query; give this one its own checkpointLocation",
            argument="topic",
        )
    return {int(queue): int(offset) for queue, offset in queues.items()}


def cap_offsets(start: Mapping[int, int], latest: Mapping[int, int], limit: int) -> Offsets:
    """End offsets at most ``limit`` messages past ``start`` in all, shared among the
    queues in proportion to what each has waiting (as Kafka's source shares
    ``maxOffsetsPerTrigger``), so no queue falls behind the others. A queue missing from
    ``start`` (new since) counts from 0."""
    waiting = {queue: max(latest[queue] - start.get(queue, 0), 0) for queue in latest}
    total = sum(waiting.values())
    if total <= limit:
        return dict(latest)
    shares = {queue: limit * count / total for queue, count in waiting.items()}
    taken = {queue: int(share) for queue, share in shares.items()}
    # The rounding left over goes to the queues with the largest remainders, so a batch
    # always advances (even when limit < number of queues) and never exceeds limit.
    left = limit - sum(taken.values())
    by_remainder = sorted(waiting, key=lambda queue: shares[queue] - taken[queue], reverse=True)
    for queue in by_remainder[:left]:
        taken[queue] += 1
    return {
        queue: start.get(queue, 0) + taken[queue] if waiting[queue] else latest[queue]
        for queue in latest
    }


@dataclass(frozen=True)
class QueueRange:
    """Offsets ``[start, end)`` of one queue: one partition of a micro-batch.

    ``new_queue``: the queue appeared after the batch before (the topic grew), so it is
    read from its first message whatever that is, which is no data loss.
    """

    queue_id: int
    start: int
    end: int
    new_queue: bool = False


def plan_ranges(
    start: Mapping[int, int], end: Mapping[int, int], min_partitions: int
) -> list[QueueRange]:
    """One range per queue with messages between ``start`` and ``end``, cut into more
    ranges (the largest first, in halves) until there are ``min_partitions``: useful when
    a topic has fewer queues than Spark has cores."""
    ranges = [
        QueueRange(queue, start.get(queue, 0), stop, new_queue=queue not in start)
        for queue, stop in sorted(end.items())
        if stop > start.get(queue, 0)
    ]
    while ranges and len(ranges) < min_partitions:
        largest = max(ranges, key=lambda r: r.end - r.start)
        if largest.end - largest.start < 2:
            break
        middle = (largest.start + largest.end) // 2
        index = ranges.index(largest)
        ranges[index : index + 1] = [
            QueueRange(largest.queue_id, largest.start, middle, largest.new_queue),
            QueueRange(largest.queue_id, middle, largest.end, largest.new_queue),
        ]
    return ranges


def group_ranges(
    ranges: Sequence[QueueRange], min_rows: int, min_partitions: int
) -> list[list[QueueRange]]:
    """The ranges in partitions: as many as hold ``min_rows`` messages or more each (at
    least ``min_partitions``, at most one per range), balanced by messages, each in queue
    order. A partition costs a Python task, so a micro-batch of a few messages per queue
    is read by a few tasks rather than one per queue."""
    sizes = [r.end - r.start for r in ranges]
    count = min(len(ranges), max(min_partitions, sum(sizes) // max(1, min_rows), 1))
    groups: list[list[QueueRange]] = [[] for _ in range(count)]
    loads = [0] * count
    for size, queue_range in sorted(zip(sizes, ranges, strict=True), key=lambda x: -x[0]):
        lightest = loads.index(min(loads))
        groups[lightest].append(queue_range)
        loads[lightest] += size
    return [sorted(group, key=lambda r: (r.queue_id, r.start)) for group in groups if group]
