"""``Store.read_bodies``: a queue's bodies in one buffer (issue 20, bulk scan).

It must return what ``pull`` returns with the same arguments (bodies, next offset, tag
filter, byte limit), refuse what ``pull`` refuses, and stop at a damaged record exactly as
``get`` does, so a bulk reader gives up no guarantee for its speed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import rmq
from rmq.errors import (
    CorruptRecordError,
    InvalidArgumentError,
    NotFoundError,
    OffsetOutOfRangeError,
)

from tests.support.damaged_records import body, damage_body, damage_body_crc

TOPIC = "Bulk"
COUNT = 300
SEGMENT = 64 * 1024  # several commit-log segments, so reads cross files


def sized_body(index: int) -> bytes:
    # Lengths vary (0 to 2 KiB), so every offset in the batch is checked.
    return bytes([index % 256]) * ((index * 37) % 2049)


def tag(index: int) -> str:
    return ("a", "b", "c")[index % 3]


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[rmq.Store]:
    with rmq.Store(tmp_path, commitlog_segment_size=SEGMENT) as store:
        for start in range(0, COUNT, 50):
            indexes = range(start, start + 50)
            store.put_batch(
                TOPIC, 0, [sized_body(i) for i in indexes], tags=[tag(i) for i in indexes]
            )
        yield store


def test_bodies_and_offsets_equal_pull_read_by_read(store: rmq.Store) -> None:
    offset = 0
    reads = 0
    while offset < COUNT:
        pulled = store.pull(TOPIC, 0, offset, 64)
        batch = store.read_bodies(TOPIC, 0, offset, 64)
        assert [bytes(view) for view in batch] == [m.body for m in pulled.messages]
        assert len(batch) == len(pulled.messages)
        assert (batch.next_offset, batch.min_offset, batch.max_offset) == (
            pulled.next_offset,
            pulled.min_offset,
            pulled.max_offset,
        )
        assert memoryview(batch.queue_offsets).cast("q").tolist() == [
            m.queue_offset for m in pulled.messages
        ]
        offset = batch.next_offset
        reads += 1
    assert reads == (COUNT + 63) // 64
    end = store.read_bodies(TOPIC, 0, COUNT, 64)
    assert len(end) == 0 and list(end) == [] and end.next_offset == COUNT


def test_indexing_views_and_arrow_layout(store: rmq.Store) -> None:
    batch = store.read_bodies(TOPIC, 0, 10, 20)
    expected = [sized_body(i) for i in range(10, 30)]
    assert bytes(batch[0]) == expected[0]
    assert bytes(batch[-1]) == expected[-1]
    with pytest.raises(IndexError):
        batch[20]
    with pytest.raises(IndexError):
        batch[-21]
    # Each body is its own bytes object, which outlives the batch object.
    views = list(batch)
    assert all(type(view) is bytes for view in views)
    assert type(batch[3]) is bytes
    del batch
    assert views == expected
    # The same buffers as an Arrow large_binary array, without a copy.
    batch = store.read_bodies(TOPIC, 0, 10, 20)
    array = pa.Array.from_buffers(
        pa.large_binary(), len(batch), [None, pa.py_buffer(batch.offsets), pa.py_buffer(batch.data)]
    )
    assert array.to_pylist() == expected


def test_iterating_copies_each_body_as_it_is_reached(store: rmq.Store) -> None:
    batch = store.read_bodies(TOPIC, 0, 40, 30)
    expected = [sized_body(i) for i in range(40, 70)]
    first, second = iter(batch), iter(batch)
    assert iter(first) is first
    # Two iterators of one batch go their own ways.
    assert [next(first) for _ in range(5)] == expected[:5]
    assert next(second) == expected[0]
    # An iterator keeps the batch (and its mapped segments) alive.
    del batch
    assert list(first) == expected[5:]
    assert list(first) == [] and next(first, None) is None
    assert list(second) == expected[1:]


def test_tag_filter_and_byte_limit_match_pull(store: rmq.Store) -> None:
    for kwargs in (
        {"tags": "b"},
        {"tags": ["a", "c"]},
        {"max_bytes": 5000},
        {"tags": "c", "max_bytes": 1},
    ):
        pulled = store.pull(TOPIC, 0, 3, 40, **kwargs)  # type: ignore[arg-type]
        batch = store.read_bodies(TOPIC, 0, 3, 40, **kwargs)  # type: ignore[arg-type]
        assert [bytes(v) for v in batch] == [m.body for m in pulled.messages], kwargs
        assert batch.next_offset == pulled.next_offset, kwargs
        assert memoryview(batch.queue_offsets).cast("q").tolist() == [
            m.queue_offset for m in pulled.messages
        ]


def test_bad_arguments_are_refused_like_pull(store: rmq.Store) -> None:
    with pytest.raises(InvalidArgumentError):
        store.read_bodies(TOPIC, 0, 0, 0)
    with pytest.raises(InvalidArgumentError):
        store.read_bodies(TOPIC, 0, -1, 8)
    with pytest.raises(InvalidArgumentError):
        store.read_bodies(TOPIC, 1 << 40, 0, 8)
    with pytest.raises(InvalidArgumentError):
        store.read_bodies(TOPIC, 0, 0, 8, tags=3)  # type: ignore[arg-type]
    with pytest.raises(OffsetOutOfRangeError):
        store.read_bodies(TOPIC, 0, COUNT + 1, 8)
    with pytest.raises(NotFoundError):
        store.read_bodies("NoSuchTopic", 0, 0, 8)
    with pytest.raises(TypeError):
        store.read_bodies(TOPIC, 0, "0", 8)  # type: ignore[arg-type]


# One CRC pass a record: the record CRC when the record has one (it covers the body and
# BODYCRC), else the body CRC. Each damage must be caught either way.
@pytest.mark.parametrize("record_crc", [True, False], ids=["record-crc", "body-crc-only"])
@pytest.mark.parametrize("damage", [damage_body, damage_body_crc], ids=["body", "bodycrc-field"])
def test_a_damaged_record_stops_the_read_before_it_and_a_read_at_it_raises(
    tmp_path: Path, record_crc: bool, damage: Callable[[Path, int], None]
) -> None:
    victim = 60
    with rmq.Store(tmp_path, commitlog_segment_size=SEGMENT, append_record_crc=record_crc) as store:
        for i in range(120):
            store.put(TOPIC, body(i))
    damage(tmp_path, victim)

    with rmq.Store(tmp_path, commitlog_segment_size=SEGMENT) as store:
        # Every read path checks the same way: pull and get_at refuse the record too.
        with pytest.raises(CorruptRecordError):
            store.pull(TOPIC, 0, victim, 1)
        before = store.read_bodies(TOPIC, 0, 7, 100)
        assert [bytes(v) for v in before] == [body(i) for i in range(7, victim)]
        assert before.next_offset == victim
        with pytest.raises(CorruptRecordError) as raised:
            store.read_bodies(TOPIC, 0, victim, 100)
        assert raised.value.queue_offset == victim
        after = store.read_bodies(TOPIC, 0, victim + 1, 100)
        assert [bytes(v) for v in after] == [body(i) for i in range(victim + 1, 120)]


def test_a_closed_store_refuses(tmp_path: Path) -> None:
    store = rmq.Store(tmp_path)
    store.put(TOPIC, b"x")
    store.close()
    with pytest.raises(rmq.errors.StoreClosedError):
        store.read_bodies(TOPIC, 0, 0, 8)
