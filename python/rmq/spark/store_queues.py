"""A topic's queues in store directories (``path``): their offsets for the driver, their
messages for the executors, both through ``rmq.Store`` opened read-only.

A read-only store takes no lock and changes nothing, so this is safe beside a running
broker. It sees the files as they were when it was opened, so every call opens the
stores afresh (well under a millisecond each) and a stream follows what the broker adds.

``path`` is either a broker's data directory, whose ``routes.json`` says which ``shard-N``
directory holds each queue, or one store directory holding every queue of the topic.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from rmq import Store
from rmq.cluster.routes import FILE_NAME, RouteTable
from rmq.errors import InvalidArgumentError, NotFoundError
from rmq.spark.layout import find_shards
from rmq.spark.queue_read import Pull, RangeRead, first_readable, keep_messages, read_range
from rmq.spark.rows import QueueMessage

__all__ = ["StoreQueues", "read_store_range"]


class StoreQueues:
    """The driver's view. Making one checks that ``path`` holds stores with the topic."""

    def __init__(self, path: str, topic: str) -> None:
        self.root = Path(path).resolve()
        self.topic = topic
        if not self.root.exists():
            raise FileNotFoundError(2, "no such file or directory (option path)", str(self.root))
        self.bounds()

    def stores(self) -> dict[int, Path]:
        """Per queue id, the store directory holding it."""
        routes = self.root / FILE_NAME
        if routes.exists():
            try:
                layout = RouteTable.load(routes).layout(self.topic)
            except NotFoundError:
                raise NotFoundError(
                    f"topic {self.topic!r} does not exist in {routes} (option path)"
                ) from None
            return {queue: self.root / f"shard-{shard}" for queue, shard in enumerate(layout)}
        shards = find_shards(self.root)
        if len(shards) != 1:
            raise InvalidArgumentError(
                f"{self.root} holds {len(shards)} stores and no {FILE_NAME} saying which "
                "holds each queue: give a broker's data directory or one store directory",
                argument="path",
            )
        store_dir = Path(shards[0].commitlog).parent
        with Store(store_dir, read_only=True) as store:
            try:
                count = store.queue_count(self.topic)
            except NotFoundError:
                raise NotFoundError(
                    f"topic {self.topic!r} does not exist in the store {store_dir} (option path)"
                ) from None
        return dict.fromkeys(range(count), store_dir)

    def bounds(self) -> dict[int, tuple[int, int]]:
        """Per queue id, (first offset, next offset to be written)."""
        found: dict[int, tuple[int, int]] = {}
        by_store: dict[Path, list[int]] = {}
        for queue, store_dir in self.stores().items():
            by_store.setdefault(store_dir, []).append(queue)
        for store_dir, queues in by_store.items():
            with Store(store_dir, read_only=True) as store:
                for queue in queues:
                    found[queue] = _queue_bounds(store, self.topic, queue)
        return found

    def first_offsets(self, bounds: dict[int, tuple[int, int]]) -> dict[int, int]:
        """Per queue, its first readable offset (see ``first_readable``)."""
        found = {}
        for queue, store_dir in self.stores().items():
            low, high = bounds.get(queue, (0, 0))
            with Store(store_dir, read_only=True) as store:
                pull = store_pull(store, self.topic, queue, ())
                found[queue] = first_readable(pull, low, high)
        return found

    def shard_names(self) -> dict[int, str]:
        return {queue: store_dir.name for queue, store_dir in self.stores().items()}

    def locations(self) -> dict[int, str]:
        return {queue: str(store_dir) for queue, store_dir in self.stores().items()}

    def offsets_for_time(self, timestamp_ms: int, queues: Sequence[int]) -> dict[int, int]:
        stores = self.stores()
        offsets = {}
        for queue in queues:
            with Store(stores[queue], read_only=True) as store:
                try:
                    offsets[queue] = store.offset_for_time(self.topic, queue, timestamp_ms)
                except NotFoundError:  # a queue its store has not seen a message of yet
                    offsets[queue] = 0
        return offsets

    def close(self) -> None:
        pass


def _queue_bounds(store: Store, topic: str, queue: int) -> tuple[int, int]:
    try:
        return store.min_offset(topic, queue), store.max_offset(topic, queue)
    except NotFoundError:
        # A broker's shard store learns a topic with its first message: until then the
        # queue is empty.
        return 0, 0


def read_store_range(
    store_dir: str, tags: Sequence[str], read: RangeRead
) -> Iterator[Sequence[QueueMessage]]:
    """The range's messages, read from the store directory holding the queue."""
    topic, queue_id = read.topic, read.queue_id
    store = Store(store_dir, read_only=True)

    def bounds() -> tuple[int, int]:
        with Store(store_dir, read_only=True) as fresh:
            return _queue_bounds(fresh, topic, queue_id)

    try:
        pull = store_pull(store, topic, queue_id, tags, end=read.end, keys=read.keys)
        yield from read_range(read, pull, bounds)
    finally:
        store.close()


def store_pull(
    store: Store,
    topic: str,
    queue_id: int,
    tags: Sequence[str],
    *,
    end: int | None = None,
    keys: Sequence[str] = (),
) -> Pull[Sequence[QueueMessage]]:
    """``Pull`` over the store's queue; rows from ``end`` on, and without one of ``keys``
    (if given), are left out."""

    def pull(offset: int, max_count: int) -> tuple[Sequence[QueueMessage], int]:
        result = store.pull(topic, queue_id, offset, max_count, tags=list(tags) or None)
        messages: Sequence[QueueMessage] = result.messages
        if end is not None or keys:
            messages = keep_messages(messages, sys.maxsize if end is None else end, keys)
        return messages, result.next_offset

    return pull
