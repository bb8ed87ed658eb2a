"""Promises 6 and 7: retention deletes only the oldest segments, never the active one,
says why for each; queues and index follow; readers are never torn; a full disk is
refused with a clear error and writes resume by themselves."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import rmq
from rmq.errors import DiskFullError, OffsetOutOfRangeError

SEGMENT = 16 * 1024
OPTIONS: dict[str, Any] = {
    "commitlog_segment_size": SEGMENT,
    "consume_queue_entries_per_file": 16,
    "index_slot_count": 16,
    "index_entry_count": 64,
    "file_reserved_time_ms": 1000,
    "delete_files_batch_max": 100,
    "delete_interval_ms": 0,
    "delete_when": "",
}


def body(queue_id: int, offset: int) -> bytes:
    return f"{queue_id}:{offset}:".encode().ljust(300 + offset % 200, b"#")


def fill(store: rmq.Store, count: int) -> None:
    for index in range(count):
        queue_id = index % 2
        offset = store.max_offset("Ret", queue_id) if store.topics() else 0
        store.put("Ret", body(queue_id, offset), queue_id=queue_id, keys=[f"key{index}"])


def segments(path: Path) -> list[Path]:
    return sorted((path / "commitlog").iterdir())


def age(paths: list[Path], seconds: float) -> None:
    for path in paths:
        stamp = time.time() - seconds
        os.utime(path, (stamp, stamp))


def test_expired_segments_go_oldest_first_and_queues_follow(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, **OPTIONS) as store:
        fill(store, 400)
        files = segments(tmp_path)
        assert len(files) >= 8
        age(files[:5], 3600)  # only the five oldest have expired
        queue_files_before = len(list((tmp_path / "consumequeue").glob("Ret/*/*")))
        index_files_before = len(list((tmp_path / "index").iterdir()))

        report = store.run_retention()

        assert [Path(path) for path, _, _ in report.deleted] == files[:5]
        assert all("expired" in reason for _, _, reason in report.deleted)
        kept = {Path(path): reason for path, _, reason in report.kept}
        assert "not expired" in kept[files[5]]
        assert "oldest-first" in kept[files[6]]
        assert "active segment" in kept[files[-1]]
        assert segments(tmp_path) == files[5:]
        assert report.commitlog_min_offset == int(files[5].name)
        assert store.commitlog_min_offset() == int(files[5].name)
        assert report.consume_queue_files_deleted > 0
        assert len(list((tmp_path / "consumequeue").glob("Ret/*/*"))) < queue_files_before
        assert report.index_files_deleted > 0
        assert len(list((tmp_path / "index").iterdir())) < index_files_before

        for queue_id in (0, 1):
            minimum = store.min_offset("Ret", queue_id)
            assert minimum > 0
            (first,) = store.get("Ret", queue_id, minimum, 1)
            assert first.commitlog_offset >= report.commitlog_min_offset
            assert first.body == body(queue_id, minimum)
            with pytest.raises(OffsetOutOfRangeError) as raised:
                store.get("Ret", queue_id, minimum - 1, 1)
            assert raised.value.min_offset == minimum
            assert raised.value.max_offset == store.max_offset("Ret", queue_id)
        assert store.verify().clean
    with rmq.Store(tmp_path, **OPTIONS) as reopened:
        assert reopened.commitlog_min_offset() == int(files[5].name)
        assert reopened.verify().clean


def test_batch_limit_and_the_active_segment_is_never_deleted(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, **{**OPTIONS, "delete_files_batch_max": 2}) as store:
        fill(store, 200)
        files = segments(tmp_path)
        age(files, 3600)  # everything expired, the active segment included
        report = store.run_retention()
        assert [Path(p) for p, _, _ in report.deleted] == files[:2]
        assert any("batch limit" in reason for _, _, reason in report.kept)
        for _ in range(20):
            store.run_retention()
        assert segments(tmp_path) == files[-1:]
        assert "active segment" in store.run_retention().kept[-1][2]


def test_background_thread_deletes_only_when_due(tmp_path: Path) -> None:
    options = {**OPTIONS, "retention_check_interval_ms": 50}
    with rmq.Store(tmp_path, **options) as store:
        fill(store, 200)
        files = segments(tmp_path)
        age(files[:-1], 3600)
        time.sleep(0.4)
        assert segments(tmp_path) == files, "not a deletion hour and the disk is not full"
        store._set_disk_usage(0.80)  # above disk_max_used_space_ratio (75%)
        deadline = time.time() + 10
        while len(segments(tmp_path)) > 1 and time.time() < deadline:
            time.sleep(0.05)
        assert segments(tmp_path) == files[-1:]


def test_disk_thresholds_clean_forcibly_then_refuse_then_resume(tmp_path: Path) -> None:
    options = {**OPTIONS, "file_reserved_time_ms": 3_600_000}
    with rmq.Store(tmp_path, **options) as store:
        fill(store, 200)
        files = segments(tmp_path)
        store._set_disk_usage(0.86)
        report = store.run_retention()
        assert [Path(p) for p, _, _ in report.deleted] == files[:-1]
        assert all("clean_forcibly" in reason for _, _, reason in report.deleted)

        usage = store._set_disk_usage(0.93)
        assert usage.overridden
        with pytest.raises(DiskFullError) as raised:
            store.put("Ret", b"refused")
        error = raised.value
        assert error.path == str(tmp_path)
        assert error.usage == pytest.approx(0.93)
        assert error.threshold == pytest.approx(0.90)
        assert "93.0%" in str(error) and "90.0%" in str(error) and str(tmp_path) in str(error)
        before = store.commitlog_max_offset()
        with pytest.raises(DiskFullError):
            store.put_batch("Ret", 0, [b"refused"])
        assert store.commitlog_max_offset() == before

        store._set_disk_usage(None)
        store.put("Ret", b"accepted again")
        assert store.verify().clean


def test_concurrent_readers_never_crash_or_see_torn_records(tmp_path: Path) -> None:
    options = {**OPTIONS, "file_reserved_time_ms": 3_600_000}
    store = rmq.Store(tmp_path, **options)
    fill(store, 100)
    stop = threading.Event()
    problems: list[str] = []
    reads = [0]

    def reader(queue_id: int) -> None:
        offset = 0
        while not stop.is_set():
            try:
                messages = store.get("Ret", queue_id, offset, 8)
            except OffsetOutOfRangeError as error:
                if error.min_offset <= offset:
                    problems.append(f"out of range at {offset} but min is {error.min_offset}")
                offset = error.min_offset
                continue
            for message in messages:
                reads[0] += 1
                if message.body != body(queue_id, message.queue_offset):
                    problems.append(f"torn or wrong record at {queue_id}/{message.queue_offset}")
            offset = (
                messages[-1].queue_offset + 1 if messages else store.min_offset("Ret", queue_id)
            )

    readers = [threading.Thread(target=reader, args=(q,)) for q in (0, 1, 0, 1)]
    for thread in readers:
        thread.start()
    store._set_disk_usage(0.86)
    for _ in range(30):
        fill(store, 40)
        store.run_retention()
    store._set_disk_usage(None)
    stop.set()
    for thread in readers:
        thread.join()
    assert problems == []
    assert reads[0] > 100
    assert store.verify().clean
    store.close()


def mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"cannot mount a small tmpfs: {result.stderr}"


def test_a_real_small_filesystem_fills_refuses_and_resumes(tmp_path: Path) -> None:
    mount = tmp_path / "small"
    mount_tmpfs(mount, "4m")
    stores: list[rmq.Store] = []
    try:
        filler = mount / "filler"
        filler.write_bytes(b"\xff" * (2 * 1024 * 1024))
        options = {
            **OPTIONS,
            "commitlog_segment_size": 64 * 1024,
            "retention_check_interval_ms": 20,
            "disk_space_clean_forcibly_ratio": 1.0,
            "disk_max_used_space_ratio": 1.0,
        }
        store = rmq.Store(mount / "store", **options)
        stores.append(store)
        written = 0
        with pytest.raises(DiskFullError) as raised:
            for _ in range(100_000):
                store.put("Fill", b"z" * 1000)
                written += 1
        assert written > 100
        # Refused either by the usage check or by a segment that could not be allocated;
        # both name the store, the usage and the threshold.
        assert raised.value.path == str(mount / "store")
        assert raised.value.threshold == pytest.approx(0.90)
        assert raised.value.usage > 0.85
        filler.unlink()
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                store.put("Fill", b"after")
                break
            except DiskFullError:
                time.sleep(0.05)
        else:
            pytest.fail("writes did not resume after space was freed")
        messages = store.get("Fill", 0, 0, written + 1)
        assert len(messages) == written + 1
        assert store.verify().clean
        store.close()
    finally:
        for opened in stores:
            with contextlib.suppress(rmq.errors.RmqError):
                opened.close()
        subprocess.run(["umount", "--lazy", str(mount)], check=False)


def test_a_reopened_or_read_only_store_starts_its_queues_where_retention_left_them(
    tmp_path: Path,
) -> None:
    """Queue files keep entries of deleted segments until a whole file is below the log's
    start; every open must still report the first readable offset, not the file's."""
    path = str(tmp_path / "store")
    store = rmq.Store(path, commitlog_segment_size=64 * 1024, file_reserved_time_ms=0)
    for _ in range(3000):
        store.put("T", b"x" * 200, queue_id=0)
    assert store.run_retention().deleted
    first = store.min_offset("T", 0)
    assert first > 0
    store.close()
    for options in ({}, {"read_only": True}):
        reopened = rmq.Store(path, **options)
        assert reopened.min_offset("T", 0) == first
        assert reopened.get("T", 0, first, 1)[0].queue_offset == first
        with pytest.raises(OffsetOutOfRangeError) as raised:
            reopened.get("T", 0, first - 1, 1)
        assert raised.value.min_offset == first
        reopened.close()


def test_retention_runs_and_deleted_segments_are_counted(tmp_path: Path) -> None:
    store = rmq.Store(
        str(tmp_path / "s"), commitlog_segment_size=64 * 1024, file_reserved_time_ms=0
    )
    for _ in range(3000):
        store.put("T", b"x" * 200, queue_id=0)
    reports = [store.run_retention(), store.run_retention()]
    metrics = store.metrics()
    assert metrics["retention_runs"] == 2
    assert metrics["segments_deleted"] == sum(len(r.deleted) for r in reports) > 0
    assert metrics["segments_evicted"] == 0
    store.close()
