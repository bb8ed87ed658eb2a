"""Promise 1 and 3: under sync flush, every acknowledged write survives SIGKILL at a
random moment, and after recovery the consume queues equal a rebuild from the log.

Set RMQ_SOAK=N to run N iterations instead of the CI default."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import rmq

from tests.support.crash_writer import body_for

ITERATIONS = int(os.environ.get("RMQ_SOAK", "12"))
WRITER = [sys.executable, "-m", "tests.support.crash_writer"]
ROOT = Path(__file__).resolve().parent.parent


def run_and_kill(
    path: Path, delay: float, threads: int, consume_queue_type: str = "file"
) -> list[tuple[int, int, int]]:
    process = subprocess.Popen(
        [*WRITER, str(path), "SYNC_FLUSH", str(threads), consume_queue_type],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    acknowledged: list[tuple[int, int, int]] = []
    opened = threading.Event()

    def collect() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            parts = line.split()
            if parts == ["open"]:
                opened.set()
            elif len(parts) == 3:
                acknowledged.append((int(parts[0]), int(parts[1]), int(parts[2])))
        opened.set()  # the writer ended (it failed): the checks below show it

    reader = threading.Thread(target=collect)
    reader.start()
    # The delay counts from the store's open, not the process's start (slow on a loaded
    # machine), so every kill lands while the writer has the store open.
    assert opened.wait(120), "the writer did not open the store within 120 s"
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait()
    reader.join()
    return acknowledged


# Both consume-queue forms: the RocksDB one writes without a write-ahead log, so what a
# crash loses from it must come back from the commit log.
FORMS = ["file", "rocksdb"]


@pytest.mark.parametrize("consume_queue_type", FORMS)
def test_acknowledged_writes_survive_sigkill(tmp_path: Path, consume_queue_type: str) -> None:
    generator = random.Random(20261121)
    store_path = tmp_path / "store"
    total_acknowledged = 0
    for iteration in range(ITERATIONS):
        acknowledged = run_and_kill(
            store_path,
            generator.uniform(0.3, 1.2),
            threads=4,
            consume_queue_type=consume_queue_type,
        )
        total_acknowledged += len(acknowledged)
        with rmq.Store(
            store_path, commitlog_segment_size=64 * 1024, consume_queue_entries_per_file=64
        ) as store:
            report = store.recovery_report
            assert report.mode == "abnormal", report
            for queue_id, offset, seed in acknowledged:
                (message,) = store.get("Crash", queue_id, offset, 1)
                assert message.body == body_for(queue_id, seed), (iteration, queue_id, offset)
                assert message.keys == [f"k{seed}"]
            verification = store.verify()
            assert verification.clean, verification.differences
            # Queue offsets stay dense: nothing acknowledged is missing below the max.
            for queue_id in range(4):
                assert store.max_offset("Crash", queue_id) >= max(
                    (o + 1 for q, o, _ in acknowledged if q == queue_id), default=0
                )
    assert total_acknowledged > ITERATIONS * 10, "the writer barely ran; the test proved nothing"


@pytest.mark.parametrize("consume_queue_type", FORMS)
def test_recovery_is_idempotent_after_a_crash(tmp_path: Path, consume_queue_type: str) -> None:
    store_path = tmp_path / "store"
    run_and_kill(store_path, 0.8, threads=2, consume_queue_type=consume_queue_type)
    states = []
    for _ in range(3):
        with rmq.Store(store_path) as store:
            states.append(
                (
                    store.commitlog_max_offset(),
                    [store.max_offset("Crash", q) for q in range(2)],
                )
            )
            assert store.verify().clean
    assert states[0] == states[1] == states[2]
    with rmq.Store(store_path) as store:
        assert store.recovery_report.mode == "normal"
