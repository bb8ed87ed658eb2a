"""``Store.put_batch`` answers with ``rmq.PutResults``: a sequence whose ``PutResult``s are
made on demand (issue 20). It must say what a list of results said: the same offsets,
msgIds and sizes, in batch order, through len, indexing, slicing and iteration."""

from __future__ import annotations

from pathlib import Path

import pytest
import rmq

TOPIC = "Results"


def fields(result: rmq.PutResult) -> tuple[str, int, int, int, int]:
    return (
        result.msg_id,
        result.commitlog_offset,
        result.queue_offset,
        result.store_timestamp,
        result.store_size,
    )


def test_results_match_what_the_log_holds(tmp_path: Path) -> None:
    bodies = [f"body {i}".encode() * (i + 1) for i in range(10)]
    with rmq.Store(tmp_path) as store:
        store.put(TOPIC, b"first")  # so the batch's offsets do not start at 0
        results = store.put_batch(TOPIC, 0, bodies, tags="T", keys=[f"k{i}" for i in range(10)])
        assert isinstance(results, rmq.PutResults)
        assert len(results) == 10
        listed = list(results)
        assert [fields(r) for r in listed] == [fields(results[i]) for i in range(10)]
        assert [r.queue_offset for r in listed] == list(range(1, 11))
        # Each result names its own record: read back by commit-log offset and by msgId.
        for result, body in zip(listed, bodies, strict=True):
            assert store.get_at(result.commitlog_offset).body == body
            assert store.get_by_msg_id(result.msg_id).body == body
        offsets = [r.commitlog_offset for r in listed]
        sizes = [r.store_size for r in listed]
        assert all(a + s == b for a, s, b in zip(offsets, sizes, offsets[1:], strict=False))


def test_indexing_slicing_and_iterating(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        results = store.put_batch(TOPIC, 0, [b"a", b"b", b"c", b"d"])
        queue_offsets = [r.queue_offset for r in results]
        assert queue_offsets == [0, 1, 2, 3]
        assert results[-1].queue_offset == 3 and results[-4].queue_offset == 0
        with pytest.raises(IndexError):
            results[4]
        with pytest.raises(IndexError):
            results[-5]
        with pytest.raises(TypeError):
            results["0"]  # type: ignore[call-overload]
        assert [r.queue_offset for r in results[1:3]] == [1, 2]
        assert [r.queue_offset for r in results[::-2]] == [3, 1]
        assert results[5:] == []
        first, *rest = results
        assert first.queue_offset == 0 and len(rest) == 3
        iterator = iter(results)
        assert [r.queue_offset for r in iterator] == [0, 1, 2, 3]
        with pytest.raises(StopIteration):
            next(iterator)
        assert "count=4" in repr(results)
