"""Which messages of a queue a consumer group holds invisible, and until when.

RocketMQ 5's consumers do not own queues: they *receive* messages, which stay invisible
to the rest of the group for an invisible duration, and *ack* them. A message not acked
in time is delivered again with its attempt counted. :class:`QueueLeases` keeps that
state for one group on one queue; :class:`LeaseBook` keeps every group's for one store
directory and saves it there (``config/rocketmqLeases.json``), so that a restarted shard
neither forgets what was acked nor hands out again what is still invisible.

Every offset in ``[low, next)`` is either acked or leased; ``low`` is the group's
committed offset (everything below it is acked), ``next`` the first offset never handed
out. A queue whose leased messages carry a message group (FIFO) hands out nothing more
until they are acked or due again, so a message group is consumed in order.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmq.cluster.files import write_json_atomically

FILE_NAME = "rocketmqLeases.json"


@dataclass(slots=True)
class Lease:
    attempt: int
    deadline_ms: int
    ordered: bool


class QueueLeases:
    """One consumer group's deliveries of one queue. Not thread-safe: the book's lock
    guards it."""

    def __init__(self, low: int) -> None:
        self.low = low
        self.next = low
        self.acked: set[int] = set()
        self.leased: dict[int, Lease] = {}

    def blocked(self, now_ms: int) -> bool:
        """An ordered message is out and not yet due: the queue waits for its ack."""
        return any(lease.ordered and lease.deadline_ms > now_ms for lease in self.leased.values())

    def due(self, now_ms: int) -> list[tuple[int, Lease]]:
        """Leased messages whose invisible time is over, lowest offset first."""
        return sorted((o, lease) for o, lease in self.leased.items() if lease.deadline_ms <= now_ms)

    def lease(self, offset: int, attempt: int, deadline_ms: int, ordered: bool) -> None:
        self.leased[offset] = Lease(attempt, deadline_ms, ordered)
        self.next = max(self.next, offset + 1)

    def ack(self, offset: int, attempt: int) -> bool:
        """Ack the delivery ``attempt`` of ``offset``; False when that delivery is not the
        one out (acked already, or delivered again since)."""
        lease = self.leased.get(offset)
        if lease is None or lease.attempt != attempt:
            return False
        self.settle(offset)
        return True

    def settle(self, offset: int) -> None:
        """Done with ``offset`` (acked, filtered out, dead-lettered or expired)."""
        self.leased.pop(offset, None)
        if offset >= self.low:
            self.acked.add(offset)
        self.next = max(self.next, offset + 1)
        while self.low in self.acked:
            self.acked.discard(self.low)
            self.low += 1

    def skip_to(self, offset: int) -> None:
        """Messages below ``offset`` are gone (retention): nothing there to deliver."""
        if offset <= self.low:
            return
        self.acked = {o for o in self.acked if o >= offset}
        self.leased = {o: lease for o, lease in self.leased.items() if o >= offset}
        self.low = offset
        self.next = max(self.next, offset)
        while self.low in self.acked:
            self.acked.discard(self.low)
            self.low += 1

    def extend(self, offset: int, attempt: int, deadline_ms: int) -> bool:
        """A new invisible deadline for the delivery ``attempt`` of ``offset``."""
        lease = self.leased.get(offset)
        if lease is None or lease.attempt != attempt:
            return False
        lease.deadline_ms = deadline_ms
        return True

    def to_json(self) -> dict[str, Any]:
        return {
            "low": self.low,
            "next": self.next,
            "acked": sorted(self.acked),
            "leased": {
                str(o): [lease.attempt, lease.deadline_ms, lease.ordered]
                for o, lease in sorted(self.leased.items())
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QueueLeases:
        leases = cls(int(data["low"]))
        leases.next = int(data["next"])
        leases.acked = {int(o) for o in data["acked"]}
        leases.leased = {
            int(o): Lease(int(a), int(d), bool(ordered))
            for o, (a, d, ordered) in data["leased"].items()
        }
        return leases


Key = tuple[str, str, int]  # (group, topic, queue_id)


class LeaseBook:
    """Every group's leases in one store directory. Callers hold :attr:`lock` while they
    read or change a :class:`QueueLeases`, then call :meth:`changed`."""

    def __init__(self, store_dir: Path) -> None:
        self.lock = threading.Lock()
        self._path = store_dir / "config" / FILE_NAME
        self._queues: dict[Key, QueueLeases] = {}
        self._dirty = False
        if self._path.exists():
            for group, topics in json.loads(self._path.read_text()).items():
                for topic, queues in topics.items():
                    for queue_id, data in queues.items():
                        self._queues[(group, topic, int(queue_id))] = QueueLeases.from_json(data)

    def get(self, key: Key) -> QueueLeases | None:
        return self._queues.get(key)

    def add(self, key: Key, low: int) -> QueueLeases:
        leases = self._queues[key] = QueueLeases(low)
        return leases

    def items(self) -> Iterator[tuple[Key, QueueLeases]]:
        return iter(list(self._queues.items()))

    def changed(self) -> None:
        self._dirty = True

    def save(self) -> bool:
        """Write the book if it changed since the last save; whether it wrote."""
        with self.lock:
            if not self._dirty:
                return False
            data: dict[str, dict[str, dict[str, Any]]] = {}
            for (group, topic, queue_id), leases in sorted(self._queues.items()):
                data.setdefault(group, {}).setdefault(topic, {})[str(queue_id)] = leases.to_json()
            self._dirty = False
        self._path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomically(self._path, data)
        return True
