"""``BodyBatch.views()``: zero-copy views of a queue's bodies in the mapped commit log
(issue 20, bulk scan). A view must read what ``bytes`` reads, stay readable while the
segment it points into is deleted by retention or the store is closed (the batch keeps the
mapping), and the CRC of every record it shows must have been checked when the batch was
built.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
import rmq
from rmq.errors import CorruptRecordError, OffsetOutOfRangeError, StoreClosedError

from bench.peers.s3 import S3Server
from tests.support.damaged_records import body, damage_body
from tests.support.tiered_store import open_tiered_store, upload_and_evict

TOPIC = "Views"
SEGMENT = 16 * 1024


def sized_body(index: int) -> bytes:
    # Lengths vary (0 to 1.5 KiB) and bodies differ, so a wrong place shows.
    return f"{index}:".encode().ljust((index * 53) % 1537, bytes([65 + index % 26]))[
        : (index * 53) % 1537
    ]


def fill(store: rmq.Store, count: int) -> list[bytes]:
    bodies = [sized_body(i) for i in range(count)]
    for start in range(0, count, 8):
        store.put_batch(TOPIC, 0, bodies[start : start + 8], tags=["a", "b"][(start // 8) % 2])
    return bodies


def test_views_equal_bytes_across_segments(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, commitlog_segment_size=SEGMENT) as store:
        bodies = fill(store, 200)
        assert len(list((tmp_path / "commitlog").iterdir())) > 5  # reads cross files
        for kwargs in ({}, {"tags": "b"}, {"max_bytes": 6000}):
            batch = store.read_bodies(TOPIC, 0, 0, 200, **kwargs)  # type: ignore[arg-type]
            views = list(batch.views())
            assert [bytes(view) for view in views] == list(batch), kwargs
            assert [len(view) for view in views] == [len(b) for b in batch]
            assert all(type(view) is rmq.BodyView for view in views)
        batch = store.read_bodies(TOPIC, 0, 0, 200)
        assert [bytes(view) for view in batch.views()] == bodies
        view = memoryview(batch.view(-1))
        assert view.readonly and view.tobytes() == bodies[-1]
        with pytest.raises(TypeError):
            view[0:1] = b"x"  # read-only: the log is never written through a view
        assert bytes(batch.view(7)) == bodies[7]
        with pytest.raises(IndexError):
            batch.view(200)
        assert pa.py_buffer(batch.view(3)).to_pybytes() == bodies[3]
        with pytest.raises(TypeError):
            rmq.BodyView()  # type: ignore[call-arg]


def test_a_view_survives_retention_deleting_its_segment(tmp_path: Path) -> None:
    options = {
        "commitlog_segment_size": SEGMENT,
        "consume_queue_entries_per_file": 16,
        "file_reserved_time_ms": 1000,
        "delete_files_batch_max": 100,
        "delete_interval_ms": 0,
        "delete_when": "",
    }
    with rmq.Store(tmp_path, **options) as store:
        bodies = fill(store, 300)
        batch = store.read_bodies(TOPIC, 0, 0, 40)
        views = list(batch.views())
        copies = list(batch)
        del batch  # the views alone keep the mapping
        files = sorted((tmp_path / "commitlog").iterdir())
        stamp = time.time() - 3600
        for path in files[:-1]:
            os.utime(path, (stamp, stamp))

        report = store.run_retention()

        assert [Path(path) for path, _, _ in report.deleted] == files[:-1]
        assert not files[0].exists()
        with pytest.raises(OffsetOutOfRangeError):
            store.read_bodies(TOPIC, 0, 0, 40)
        # The deleted files' bytes, still mapped by the views, unchanged.
        assert [bytes(view) for view in views] == copies == bodies[:40]
        # Writing on (the active segment, then new ones) does not touch them either.
        fill(store, 100)
        assert [bytes(view) for view in views] == bodies[:40]


def test_views_of_evicted_segments_hold_the_bytes_fetched_from_the_tier(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    # Records of evicted segments come from the tier's block cache: a view keeps the
    # fetched bytes, not a mapping, and must read the same.
    store = open_tiered_store(tmp_path / "store", aws_env, s3_bucket, local_retention_bytes=0)
    bodies = fill(store, 600)
    upload_and_evict(store)
    status = store.tier_status()
    assert status is not None
    assert sum(s["state"] == "evicted" for s in status["segments"]) >= 3
    got: list[bytes] = []
    views = []
    offset = 0
    while offset < len(bodies):
        batch = store.read_bodies(TOPIC, 0, offset, 128)
        assert len(batch), f"the read stopped at {offset}"
        views.extend(batch.views())
        got.extend(batch)
        offset = batch.next_offset
    after = store.tier_status()
    assert after is not None and after["reads"]["range_reads"] > 0  # served by the tier
    store.close()
    assert got == bodies
    assert [bytes(view) for view in views] == bodies


def test_a_damaged_record_is_refused_when_the_batch_is_built(tmp_path: Path) -> None:
    victim = 30
    with rmq.Store(tmp_path, commitlog_segment_size=SEGMENT) as store:
        for i in range(60):
            store.put(TOPIC, body(i))
    damage_body(tmp_path, victim)

    with rmq.Store(tmp_path, commitlog_segment_size=SEGMENT) as store:
        # Built up to the damaged record, which no view or bytes ever shows.
        before = store.read_bodies(TOPIC, 0, 5, 100)
        assert before.next_offset == victim
        assert [bytes(view) for view in before.views()] == [body(i) for i in range(5, victim)]
        # A batch starting at it is not built at all: the error comes from read_bodies.
        with pytest.raises(CorruptRecordError) as raised:
            store.read_bodies(TOPIC, 0, victim, 100)
        assert raised.value.queue_offset == victim


def test_a_closed_stores_batch_stays_readable(tmp_path: Path) -> None:
    # Defined behaviour: a batch keeps its segments mapped, so its bodies and views stay
    # readable after the store is closed; only new reads are refused.
    store = rmq.Store(tmp_path, commitlog_segment_size=SEGMENT)
    bodies = fill(store, 120)
    batch = store.read_bodies(TOPIC, 0, 0, 120)
    views = list(batch.views())
    store.close()
    with pytest.raises(StoreClosedError):
        store.read_bodies(TOPIC, 0, 0, 8)
    assert [bytes(view) for view in views] == bodies
    assert list(batch) == bodies
    assert bytes(batch.view(0)) == bodies[0]
    array = pa.Array.from_buffers(
        pa.large_binary(), len(batch), [None, pa.py_buffer(batch.offsets), pa.py_buffer(batch.data)]
    )
    assert array.to_pylist() == bodies
