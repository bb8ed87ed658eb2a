"""Finding the commit-log segments under a path, and cutting them into read parts.

A path may be a store directory (it has ``commitlog/``; RocketMQ's store root is one), a
broker data directory whose subdirectories are stores (``shard-0``, ``shard-1`` ...), a
``commitlog`` directory, or one segment file. The shard name is the store directory's
name. Only the files are looked at: no lock is taken and nothing is written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rmq._rmqcore import SegmentDecoder
from rmq.errors import InvalidArgumentError
from rmq.spark.arrow import SegmentPart

__all__ = ["Segment", "Shard", "find_shards", "plan_parts", "segment_parts"]

_SEGMENT_NAME = re.compile(r"^[0-9]{20}$")


@dataclass(frozen=True)
class Segment:
    path: str
    start_offset: int
    size: int
    #: The first 8 bytes are not all zero: a record or a blank starts the file.
    has_data: bool


@dataclass(frozen=True)
class Shard:
    name: str
    commitlog: str
    #: Only these segment files (``None``: every file in ``commitlog``).
    only: tuple[str, ...] | None = None

    def segments(self) -> list[Segment]:
        """The shard's segment files in offset order (empty files left out)."""
        names = self.only if self.only is not None else os.listdir(self.commitlog)
        found = []
        for name in names:
            path = os.path.join(self.commitlog, name)
            if not _SEGMENT_NAME.match(name) or not os.path.isfile(path):
                continue
            size = os.path.getsize(path)
            if size == 0:
                continue
            with open(path, "rb") as file:
                has_data = any(file.read(8))
            found.append(Segment(path, int(name), size, has_data))
        return sorted(found, key=lambda segment: segment.start_offset)


def _natural_key(name: str) -> list[int | str]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def find_shards(path: str | os.PathLike[str]) -> list[Shard]:
    """The stores under ``path`` (see the module docs), in natural name order."""
    root = Path(path).resolve()
    if not root.exists():
        raise FileNotFoundError(2, "no such file or directory", str(root))
    if root.is_file():
        if not _SEGMENT_NAME.match(root.name):
            raise InvalidArgumentError(
                f"{root} is not a commit-log segment (named by a 20-digit offset)",
                argument="path",
            )
        return [Shard(root.parent.parent.name, str(root.parent), (root.name,))]
    if (root / "commitlog").is_dir():
        return [Shard(root.name, str(root / "commitlog"))]
    shards = [
        Shard(child.name, str(child / "commitlog"))
        for child in root.iterdir()
        if (child / "commitlog").is_dir()
    ]
    if shards:
        return sorted(shards, key=lambda shard: _natural_key(shard.name))
    if any(_SEGMENT_NAME.match(child.name) for child in root.iterdir()):
        return [Shard(root.parent.name, str(root))]
    raise InvalidArgumentError(
        f"no commit log under {root}: expected a store directory (with commitlog/), "
        "a directory of store directories, a commitlog directory or a segment file",
        argument="path",
    )


def plan_parts(shards: Iterable[Shard], split_size: int = 0) -> list[SegmentPart]:
    """One part per segment that holds data, or several when ``split_size`` is positive
    and the segment is larger (cut on record boundaries, which costs reading each
    record's header up to the last cut)."""
    parts: list[SegmentPart] = []
    for shard in shards:
        segments = [segment for segment in shard.segments() if segment.has_data]
        for index, segment in enumerate(segments):
            tail = index == len(segments) - 1
            parts.extend(segment_parts(shard.name, segment, split_size, tail=tail))
    return parts


def segment_parts(
    shard: str, segment: Segment, split_size: int = 0, *, tail: bool
) -> list[SegmentPart]:
    """The parts of one segment file (see ``plan_parts``)."""
    points = [0]
    if 0 < split_size < segment.size:
        decoder = SegmentDecoder(segment.path, start_offset=segment.start_offset)
        points = decoder.split_points(split_size)
    ends = [*points[1:], segment.size]
    return [
        SegmentPart(shard, segment.path, segment.start_offset, begin, end, tail)
        for begin, end in zip(points, ends, strict=True)
    ]
