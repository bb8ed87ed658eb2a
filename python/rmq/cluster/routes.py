"""The stored assignment of every topic's queues to shard directories.

``DIR/routes.json`` holds, per topic, the shard directory (``DIR/shard-N``) of each queue:

    {"format": 1, "topics": {"orders": [0, 1, 0, 1, 0, 1, 0, 1]}}

A queue never moves: its messages, offsets and consumer-group offsets stay in the
directory that first received it. Restarting with another number of shard processes
changes which process serves a directory (:func:`processes_for`), never which directory
holds a queue, so no data is orphaned. Only the supervisor writes the file, atomically.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

from rmq import errors
from rmq.cluster.files import write_json_atomically

FORMAT = 1
FILE_NAME = "routes.json"


class RouteTable:
    """Thread-safe: every method takes the table's lock."""

    def __init__(self, path: Path, layouts: dict[str, list[int]] | None = None) -> None:
        self.path = path
        self._layouts = dict(layouts or {})
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path) -> RouteTable:
        """Read ``path``; a missing file is an empty table, a damaged one an error
        (starting with an empty table would hide every stored queue)."""
        if not path.exists():
            return cls(path)
        try:
            document = json.loads(path.read_text())
            if document.get("format") != FORMAT:
                raise ValueError(f"unknown format {document.get('format')!r}")
            layouts = {
                str(topic): [int(shard) for shard in shards]
                for topic, shards in document["topics"].items()
            }
            for topic, shards in layouts.items():
                if not shards or min(shards) < 0:
                    raise ValueError(f"topic {topic!r} has an invalid queue list {shards}")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise errors.CorruptRecordError(
                f"{path} is not a valid route table ({error}); fix or restore it, "
                "it says which shard directory holds each queue",
                file=str(path),
            ) from error
        return cls(path, layouts)

    def save(self) -> None:
        with self._lock:
            document = {"format": FORMAT, "topics": {t: list(s) for t, s in self._layouts.items()}}
        write_json_atomically(self.path, document)

    def topics(self) -> list[str]:
        with self._lock:
            return sorted(self._layouts)

    def layouts(self) -> dict[str, list[int]]:
        with self._lock:
            return {topic: list(shards) for topic, shards in self._layouts.items()}

    def layout(self, topic: str) -> list[int]:
        with self._lock:
            shards = self._layouts.get(topic)
        if shards is None:
            raise errors.NotFoundError(f"topic {topic!r} does not exist")
        return list(shards)

    def shards_in_use(self) -> set[int]:
        with self._lock:
            return {shard for shards in self._layouts.values() for shard in shards}

    def grow(self, topic: str, queues: int, candidates: Sequence[int]) -> list[int]:
        """Make ``topic`` have at least ``queues`` queues, placing each new queue on the
        candidate directory with the fewest queues of this topic, then of all topics."""
        if not candidates:
            raise ValueError("no shard directory to place queues on")
        with self._lock:
            shards = list(self._layouts.get(topic, []))
            total = {c: 0 for c in candidates}
            for layout in self._layouts.values():
                for shard in layout:
                    if shard in total:
                        total[shard] += 1
            while len(shards) < queues:
                mine = {c: shards.count(c) for c in candidates}
                chosen = min(candidates, key=lambda c: (mine[c], total[c], c))
                shards.append(chosen)
                total[chosen] += 1
            self._layouts[topic] = shards
            return list(shards)

    def remove(self, topic: str) -> list[int]:
        with self._lock:
            shards = self._layouts.pop(topic, None)
        if shards is None:
            raise errors.NotFoundError(f"topic {topic!r} does not exist")
        return shards


def shard_directories(data_dir: Path) -> set[int]:
    """Indexes of the ``shard-N`` directories that exist under ``data_dir``."""
    found = set()
    for path in data_dir.glob("shard-*"):
        suffix = path.name.removeprefix("shard-")
        if path.is_dir() and suffix.isdigit():
            found.add(int(suffix))
    return found


def processes_for(directories: int, processes: int) -> list[tuple[int, ...]]:
    """Which shard directories each of ``processes`` processes serves: directory ``k``
    goes to process ``k % processes``, so process ``p`` always serves directory ``p``."""
    return [tuple(range(p, directories, processes)) for p in range(processes)]
