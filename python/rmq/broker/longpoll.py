"""Wake-ups for long polling: a pull that finds nothing waits for the next send to its queue.

Only this process writes to its stores, so a send can tell waiting pulls directly. A
version number per queue closes the race between "checked, nothing there" and "started
waiting": a pull remembers the version before it looks and waits only while it is
unchanged.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

QueueKey = tuple[str, int]


class NativeSignals(Protocol):
    """The native data plane's wake-ups (``rmq._rmqcore.ShardServer``): with one, sends
    through either side wake waiters on both."""

    def version(self, topic: str, queue_id: int) -> int: ...
    def notify(self, topic: str, queue_id: int) -> None: ...
    def wait(self, topic: str, queue_id: int, version: int, timeout: float) -> bool: ...


class QueueSignals:
    """Thread-safe: sends call :meth:`notify`, pulls call :meth:`version` then :meth:`wait`."""

    def __init__(self, max_waiters: int) -> None:
        self._lock = threading.Lock()
        self._conditions: dict[QueueKey, threading.Condition] = {}
        self._versions: dict[QueueKey, int] = {}
        self._waiters = 0
        self._max_waiters = max_waiters
        self._closed = False
        self._native: NativeSignals | None = None

    def attach(self, native: NativeSignals) -> None:
        """From now on keep versions in ``native``, shared with the native data plane."""
        self._native = native

    def version(self, key: QueueKey) -> int:
        if self._native is not None:
            return self._native.version(*key)
        with self._lock:
            return self._versions.get(key, 0)

    def notify(self, key: QueueKey) -> None:
        if self._native is not None:
            self._native.notify(*key)
            return
        with self._lock:
            self._versions[key] = self._versions.get(key, 0) + 1
            condition = self._conditions.get(key)
            if condition is not None:
                condition.notify_all()

    def wait(self, key: QueueKey, version: int, timeout: float) -> bool:
        """Wait until ``key`` changes from ``version`` or ``timeout`` seconds pass.

        Returns whether it changed. When too many pulls already wait (each holds a
        server thread), returns at once so that sends keep getting threads.
        """
        native = self._native
        if native is not None:
            with self._lock:
                if self._waiters >= self._max_waiters or self._closed:
                    return native.version(*key) != version
                self._waiters += 1
            try:
                return native.wait(key[0], key[1], version, timeout)
            finally:
                with self._lock:
                    self._waiters -= 1
        deadline = time.monotonic() + timeout
        with self._lock:
            if self._waiters >= self._max_waiters:
                return self._versions.get(key, 0) != version
            condition = self._conditions.get(key)
            if condition is None:
                condition = self._conditions[key] = threading.Condition(self._lock)
            self._waiters += 1
            try:
                while self._versions.get(key, 0) == version and not self._closed:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    condition.wait(remaining)
            finally:
                self._waiters -= 1
            return self._versions.get(key, 0) != version

    def close(self) -> None:
        """Release every waiting pull (the server is stopping)."""
        with self._lock:
            self._closed = True
            for condition in self._conditions.values():
                condition.notify_all()
