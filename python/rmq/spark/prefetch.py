"""Reading ahead of Spark: a partition's batches made on a background thread while the
Python worker hands the previous ones to the JVM.

Reading a partition from a broker is a chain of pulls, each a round trip to the shard
process; done in line, the worker waits for every pull with nothing to send and the JVM
waits for the worker. A thread that keeps up to ``depth`` batches ready overlaps those
waits with the Arrow conversion and the send (a pull waits with the GIL released). The
batches come out in the order the iterator makes them, and an error comes out where it
happened, after the batches made before it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

__all__ = ["read_ahead"]

T = TypeVar("T")

# How often a reader thread blocked on a full queue checks whether the consumer left.
_STOP_CHECK = 0.1


class _End:
    """The last item a reader thread queues: the iterator's end, or what it raised."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


def read_ahead(items: Iterator[T], depth: int) -> Iterator[T]:
    """``items`` as they are, made up to ``depth`` ahead on a daemon thread (``depth`` 0:
    in line). Closing the result early (a task cancelled, a limit reached) stops the
    thread once its current item is made (not waited for: it may be in a pull)."""
    if depth <= 0:
        yield from items
        return
    ready: queue.Queue[T | _End] = queue.Queue(maxsize=depth)
    leaving = threading.Event()

    def offer(item: T | _End) -> bool:
        while not leaving.is_set():
            try:
                ready.put(item, timeout=_STOP_CHECK)
                return True
            except queue.Full:
                continue
        return False

    def make() -> None:
        try:
            for item in items:
                if not offer(item):
                    return
        except BaseException as error:
            offer(_End(error))
            return
        offer(_End(None))

    thread = threading.Thread(target=make, name="rmq-spark-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item = ready.get()
            if isinstance(item, _End):
                if item.error is not None:
                    raise item.error
                return
            yield item
    finally:
        leaving.set()
