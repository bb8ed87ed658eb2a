"""Promises 1 and 2 under a simulated power loss: with sync flush nothing acknowledged is
lost; with async flush exactly the unflushed range is lost and recovery says so."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import rmq

from tests.support.power_loss import crash_copy

OPTIONS = {
    "commitlog_segment_size": 32 * 1024,
    "consume_queue_entries_per_file": 32,
    "index_slot_count": 512,
    "index_entry_count": 2048,
}


def test_sync_flush_loses_nothing_acknowledged(tmp_path: Path) -> None:
    generator = random.Random(7)
    for round_number in range(5):
        source, target = tmp_path / f"live{round_number}", tmp_path / f"crashed{round_number}"
        acknowledged: list[tuple[int, int, bytes]] = []
        lock = threading.Lock()
        store = rmq.Store(source, flush_disk_type="SYNC_FLUSH", **OPTIONS)

        def write(
            queue_id: int,
            store: rmq.Store = store,
            lock: threading.Lock = lock,
            acknowledged: list[tuple[int, int, bytes]] = acknowledged,
        ) -> None:
            for index in range(150):
                body = generator.randbytes(generator.choice([0, 10, 500, 2000]))
                result = store.put("Power", body, queue_id=queue_id, keys=[f"k{index}"])
                with lock:
                    acknowledged.append((queue_id, result.queue_offset, body))

        threads = [threading.Thread(target=write, args=(q,)) for q in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        time.sleep(generator.uniform(0, 1.2))  # sometimes a checkpoint lands in between
        crash_copy(store, source, target, generator)
        store.close()

        with rmq.Store(target, **OPTIONS) as recovered:
            assert recovered.recovery_report.mode == "abnormal"
            for queue_id, offset, body in acknowledged:
                (message,) = recovered.get("Power", queue_id, offset, 1)
                assert message.body == body
            verification = recovered.verify()
            assert verification.clean, verification.differences


def test_async_flush_reports_exactly_the_lost_range(tmp_path: Path) -> None:
    source, target = tmp_path / "live", tmp_path / "crashed"
    store = rmq.Store(
        source, flush_interval_ms=60_000, flush_thorough_interval_ms=60_000, **OPTIONS
    )
    first = [store.put("Async", f"durable-{i}".encode()) for i in range(100)]
    store.flush()
    flushed = store.flushed_offset()
    assert flushed == first[-1].commitlog_offset + first[-1].store_size
    second = [store.put("Async", f"volatile-{i}".encode()) for i in range(100)]
    end_before_crash = store.commitlog_max_offset()
    kept = crash_copy(store, source, target, random.Random(3))
    store.close()
    assert kept == flushed

    with rmq.Store(target, **OPTIONS) as recovered:
        report = recovered.recovery_report
        assert report.valid_end_offset == flushed
        lost = (report.valid_end_offset, end_before_crash)
        assert lost == (second[0].commitlog_offset, end_before_crash)
        assert recovered.max_offset("Async", 0) == 100
        bodies = [m.body for m in recovered.get("Async", 0, 0, 200)]
        assert bodies == [f"durable-{i}".encode() for i in range(100)]
        assert recovered.verify().clean


def test_sync_flush_readers_never_see_unflushed_messages(tmp_path: Path) -> None:
    store = rmq.Store(tmp_path, flush_disk_type="SYNC_FLUSH", **OPTIONS)
    stop = threading.Event()
    violations: list[int] = []
    reads = 0

    def read() -> None:
        nonlocal reads
        offset = 0
        while not stop.is_set():
            try:
                messages = store.get("Visible", 0, offset, 16)
            except rmq.errors.NotFoundError:
                continue
            flushed = store.flushed_offset()
            for message in messages:
                reads += 1
                if message.commitlog_offset + message.store_size > flushed:
                    violations.append(message.queue_offset)
            if messages:
                offset = messages[-1].queue_offset + 1

    reader = threading.Thread(target=read)
    reader.start()
    writers = [
        threading.Thread(target=lambda: [store.put("Visible", b"x" * 200) for _ in range(200)])
        for _ in range(4)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    stop.set()
    reader.join()
    store.close()
    assert reads > 0
    assert violations == []
