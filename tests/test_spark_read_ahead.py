"""``rmq.spark.prefetch.read_ahead``: the stream source's partitions make their batches on
a thread ahead of Spark; what comes out must be what the reader made, in its order, with
its error at the place it happened, and a consumer that leaves early must stop the
thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from rmq.spark.prefetch import read_ahead


def numbers(count: int, made: list[int], fail_at: int | None = None) -> Iterator[int]:
    for number in range(count):
        if number == fail_at:
            raise ValueError(f"broken at {number}")
        made.append(number)
        yield number


@pytest.mark.parametrize("depth", [0, 1, 3, 50])
def test_items_come_out_in_order_and_an_error_after_what_came_before(depth: int) -> None:
    made: list[int] = []
    assert list(read_ahead(numbers(200, made), depth)) == list(range(200))
    seen: list[int] = []
    with pytest.raises(ValueError, match="broken at 7"):
        for item in read_ahead(numbers(20, [], fail_at=7), depth):
            seen.append(item)
    assert seen == list(range(7))


def test_the_thread_runs_ahead_by_depth_and_stops_when_the_consumer_leaves() -> None:
    made: list[int] = []
    ahead = read_ahead(numbers(10_000, made), 3)
    assert next(ahead) == 0
    deadline = time.monotonic() + 10
    while len(made) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    # One handed out, three queued, one made and waiting for room.
    assert 4 <= len(made) <= 5
    ahead.close()
    deadline = time.monotonic() + 10
    while any(t.name == "rmq-spark-read-ahead" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the read-ahead thread did not stop"
        time.sleep(0.02)
    assert len(made) <= 5
