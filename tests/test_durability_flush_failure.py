"""Promise 1: a failed flush fails every waiting write and the store refuses writes
from then on, saying why; it never reports a write as stored that was not durable."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import rmq
from rmq.errors import FlushFailedError


def test_injected_flush_failure_fails_pending_puts_and_refuses_later_ones(tmp_path: Path) -> None:
    store = rmq.Store(tmp_path, flush_disk_type="SYNC_FLUSH")
    for _ in range(10):
        store.put("Flush", b"before")
    outcomes: list[str] = []
    lock = threading.Lock()
    started = threading.Barrier(9)

    def writer() -> None:
        started.wait()
        try:
            while True:
                store.put("Flush", b"x" * 512)
        except FlushFailedError as error:
            with lock:
                outcomes.append(str(error))

    threads = [threading.Thread(target=writer) for _ in range(8)]
    for thread in threads:
        thread.start()
    started.wait()
    store._inject_flush_failure("injected EIO: Input/output error")
    for thread in threads:
        thread.join(timeout=30)
    assert len(outcomes) == 8
    assert all("injected EIO" in outcome for outcome in outcomes)
    with pytest.raises(FlushFailedError, match="refuses writes"):
        store.put("Flush", b"after")
    with pytest.raises(FlushFailedError):
        store.put_batch("Flush", 0, [b"after"])
    # Reads still work: the ten acknowledged messages are there.
    assert [m.body for m in store.get("Flush", 0, 0, 10)] == [b"before"] * 10
    store.close()


def test_second_opener_gets_a_clear_error(tmp_path: Path) -> None:
    with rmq.Store(tmp_path):
        with pytest.raises(rmq.errors.StoreLockedError, match="locked"):
            rmq.Store(tmp_path)
        import subprocess
        import sys

        child = subprocess.run(
            [sys.executable, "-c", f"import rmq; rmq.Store({str(tmp_path)!r})"],
            capture_output=True,
            text=True,
        )
        assert child.returncode != 0
        assert "StoreLockedError" in child.stderr
    with rmq.Store(tmp_path) as reopened:
        assert reopened.recovery_report.mode == "normal"
