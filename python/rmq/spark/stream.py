"""``spark.readStream.format("rmq")``: a topic's queues as a stream (Python Data Source
API, pyspark 4.2+ for read limits and ``Trigger.AvailableNow``).

The driver side (offsets, planning) runs in a Python worker Spark keeps for the query;
``read`` runs on executors. The reader is pickled to them with ``read``, so what it holds
open (a broker client) is dropped from the pickle and re-made where needed.

A micro-batch is, per queue, the offsets ``[start, end)`` between two offsets documents
(``rmq.spark.offsets``), which Spark writes to the checkpoint before it reads the batch:
a restarted query re-reads an unfinished batch to the same rows, and with a sink that
commits per batch (files, Delta, ``foreachBatch`` keyed by batch id) the output has no
gap and no duplicate.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from rmq.errors import InvalidArgumentError
from rmq.spark.arrow import to_record_batch
from rmq.spark.batch_join import join_batches
from rmq.spark.broker_queues import BrokerQueues, read_broker_range
from rmq.spark.offsets import (
    Offsets,
    QueueRange,
    cap_offsets,
    group_ranges,
    offsets_from_json,
    offsets_to_json,
    plan_ranges,
)
from rmq.spark.prefetch import read_ahead
from rmq.spark.queue_read import RangeRead, data_loss_error
from rmq.spark.stream_options import EARLIEST, LATEST, StreamOptions

if TYPE_CHECKING:
    from rmq.spark.store_queues import StoreQueues

    Queues = BrokerQueues | StoreQueues

__all__ = ["QueuePart", "RmqStreamReader", "StreamPart"]


@dataclass(frozen=True)
class QueuePart:
    """A queue range and where to read it (a broker's endpoint, or the store directory
    holding the queue)."""

    location: str
    shard: str
    read: RangeRead


@dataclass(frozen=True)
class StreamPart:
    """One partition: queue ranges read one after the other (see ``group_ranges``)."""

    from_broker: bool
    queues: tuple[QueuePart, ...]


class RmqStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: StreamOptions, arrow_schema: Any) -> None:
        self.options = options
        self.arrow_schema = arrow_schema
        self._queues: Queues | None = None
        # Where ``Trigger.AvailableNow`` stops (the latest offsets when it was asked).
        self._target: Offsets | None = None
        # What the queues held when ``latestOffset`` last asked: Spark asks
        # ``reportLatestOffset`` right after it, in the same micro-batch, so the answer
        # is reused once instead of asking the broker a second time.
        self._seen_latest: dict[str, Any] | None = None
        self.queues()  # an unreachable broker or an unknown topic fails the query now

    # ---- the driver's side ----

    def queues(self) -> Queues:
        if self._queues is None:
            options = self.options
            if options.endpoint is not None:
                self._queues = BrokerQueues(options.endpoint, options.topic, options.token)
            else:
                assert options.path is not None
                # Imported here: store directories bring the cluster's route table in,
                # which a broker-reading query's driver (a fresh process per query) need
                # not load.
                from rmq.spark.store_queues import StoreQueues

                self._queues = StoreQueues(options.path, options.topic)
        return self._queues

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_queues"] = None
        state["_seen_latest"] = None
        return state

    def initialOffset(self) -> dict[str, Any]:
        """Where a new query starts (a restarted one starts at its checkpoint)."""
        options = self.options
        bounds = self.queues().bounds()
        if options.starting_timestamp is not None:
            offsets = self.queues().offsets_for_time(options.starting_timestamp, sorted(bounds))
        elif options.starting == "earliest":
            offsets = self.queues().first_offsets(bounds)
        elif options.starting == "latest":
            offsets = {queue: high for queue, (_, high) in bounds.items()}
        else:
            assert isinstance(options.starting, dict)
            offsets = self._given_offsets(options.starting, bounds)
        return offsets_to_json(options.topic, offsets)

    def _given_offsets(
        self, given: Mapping[int, int], bounds: Mapping[int, tuple[int, int]]
    ) -> Offsets:
        topic = self.options.topic
        unknown = sorted(set(given) - set(bounds))
        missing = sorted(set(bounds) - set(given))
        if unknown or missing:
            raise InvalidArgumentError(
                f"option startingOffsets must give every queue of {topic!r} (ids 0 to "
                f"{len(bounds) - 1}): "
                + "; ".join(
                    text
                    for text in (
                        f"no queue {unknown}" if unknown else "",
                        f"missing {missing}" if missing else "",
                    )
                    if text
                ),
                argument="startingOffsets",
            )
        offsets = {}
        for queue, offset in given.items():
            low, high = bounds[queue]
            if offset == EARLIEST:
                offset = low
            elif offset == LATEST:
                offset = high
            elif offset > high:
                raise InvalidArgumentError(
                    f"option startingOffsets: offset {offset} of queue {queue} of {topic!r} is "
                    f"past its end ({high})",
                    argument="startingOffsets",
                )
            elif offset < low:
                if self.options.fail_on_data_loss:
                    raise data_loss_error(topic, queue, offset, low)
                offset = low
            offsets[queue] = offset
        return offsets

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, Any]:
        """The end of the next micro-batch: what the queues hold now, within the limit."""
        topic = self.options.topic
        bounds = self.queues().bounds()
        begin = {} if start is None else offsets_from_json(topic, start)
        for queue, offset in begin.items():
            low = bounds.get(queue, (offset, offset))[0]
            if offset < low and self.options.fail_on_data_loss:
                raise data_loss_error(topic, queue, offset, low)
        latest = {queue: high for queue, (_, high) in bounds.items()}
        self._seen_latest = offsets_to_json(topic, latest)
        if self._target is not None:
            target = self._target
            latest = {queue: min(high, target.get(queue, 0)) for queue, high in latest.items()}
        if limit is None and self.options.max_offsets_per_trigger is not None:
            limit = ReadMaxRows(self.options.max_offsets_per_trigger)
        if isinstance(limit, ReadMaxRows):
            latest = cap_offsets(begin, latest, limit.max_rows)
        elif limit is not None and not isinstance(limit, ReadAllAvailable):
            raise InvalidArgumentError(f"the rmq source cannot apply the read limit {limit}")
        # Never behind the start: a queue that went away keeps its offset.
        end = {**begin, **{q: max(o, begin.get(q, o)) for q, o in latest.items()}}
        return offsets_to_json(topic, end)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.options.max_offsets_per_trigger)

    def reportLatestOffset(self) -> dict[str, Any]:
        """What the queues hold (for the query's progress), as ``latestOffset`` just saw
        it, or asked of the queues if it did not."""
        seen, self._seen_latest = self._seen_latest, None
        if seen is not None:
            return seen
        bounds = self.queues().bounds()
        return offsets_to_json(self.options.topic, {q: high for q, (_, high) in bounds.items()})

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = {q: high for q, (_, high) in self.queues().bounds().items()}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        options = self.options
        ranges = plan_ranges(
            offsets_from_json(options.topic, start),
            offsets_from_json(options.topic, end),
            options.min_partitions,
        )
        if not ranges:
            return []
        queues = self.queues()
        shards = queues.shard_names()
        from_broker = isinstance(queues, BrokerQueues)
        locations = {} if isinstance(queues, BrokerQueues) else queues.locations()

        def queue_part(queue_range: QueueRange) -> QueuePart:
            queue = queue_range.queue_id
            read = RangeRead(
                topic=options.topic,
                queue_id=queue,
                start=queue_range.start,
                end=queue_range.end,
                new_queue=queue_range.new_queue,
                fail_on_data_loss=options.fail_on_data_loss,
                keys=options.keys,
                batch_rows=options.batch_rows,
            )
            if isinstance(queues, BrokerQueues):
                return QueuePart(queues.endpoint, shards.get(queue, ""), read)
            return QueuePart(locations[queue], shards[queue], read)

        groups = group_ranges(ranges, options.min_rows_per_partition, options.min_partitions)
        return [
            InputPartition(StreamPart(from_broker, tuple(queue_part(r) for r in group)))
            for group in groups
        ]

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the query's position lives in Spark's checkpoint, not in rmq."""

    def stop(self) -> None:
        if self._queues is not None:
            self._queues.close()
            self._queues = None

    # ---- the executors' side ----

    def read(self, partition: InputPartition) -> Iterator[Any]:
        part = partition.value
        if not isinstance(part, StreamPart):
            return iter(())
        joined = join_batches(self._batches(part), self.options.batch_rows)
        return read_ahead(joined, self.options.prefetch_batches)

    def _batches(self, part: StreamPart) -> Iterator[Any]:
        tags = self.options.tags
        for queue in part.queues:
            if part.from_broker:
                pulled = read_broker_range(queue.location, self.options.token, tags, queue.read)
                for columns in pulled:
                    yield to_record_batch(columns, queue.shard, self.arrow_schema)
            else:
                from rmq.spark.rows import messages_to_batch
                from rmq.spark.store_queues import read_store_range

                for messages in read_store_range(queue.location, tags, queue.read):
                    yield messages_to_batch(messages, queue.shard, self.arrow_schema)
