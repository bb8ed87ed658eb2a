"""``Store.put_batch`` appends without the GIL, reading bodies, tags and keys that Python
owns: it must hold them for the whole call. Another thread empties the very lists being
stored (dropping the only other references to their items) while the appends run; every
record must still hold what the lists held when the call began."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import rmq

TOPIC = "Held"
BATCH = 64
BATCHES = 200


def body(n: int) -> bytes:
    # Built fresh for each batch: once its list lets go, nothing else refers to it.
    return n.to_bytes(4, "big") * 40


@pytest.mark.parametrize("keys_as", ["text", "list"])
def test_lists_emptied_during_the_call_do_not_change_what_is_stored(
    tmp_path: Path, keys_as: str
) -> None:
    # keys_as "list": each message's keys a list of its own, emptied too.
    handed: list[tuple[list[bytes], list[str], list[Any]]] = []
    running = True

    def empty_the_lists() -> None:
        while running or handed:
            try:
                bodies, tags, keys = handed.pop()
            except IndexError:
                continue
            bodies[:] = [b"?"] * len(bodies)
            tags.clear()
            for own in keys:
                if isinstance(own, list):
                    own.clear()
            keys.clear()

    emptier = threading.Thread(target=empty_the_lists)
    emptier.start()
    placed = []
    try:
        with rmq.Store(tmp_path) as store:
            for batch in range(BATCHES):
                first = batch * BATCH
                numbers = range(first, first + BATCH)
                bodies = [body(n) for n in numbers]
                tags = [f"tag-{n}" for n in numbers]
                keys: list[Any] = [
                    [f"key-{n}"] if keys_as == "list" else f"key-{n}" for n in numbers
                ]
                handed.append((bodies, tags, keys))
                results = store.put_batch(TOPIC, 0, bodies, tags=tags, keys=keys)
                placed.extend(zip(numbers, (r.commitlog_offset for r in results), strict=True))
            running = False
            emptier.join()
            for n, offset in placed:
                message = store.get_at(offset)
                assert message.body == body(n)
                assert message.tags == f"tag-{n}"
                assert message.keys == [f"key-{n}"]
    finally:
        running = False
        emptier.join()
