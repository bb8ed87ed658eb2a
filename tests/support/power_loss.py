"""Simulate a power loss on a copy of a live store: bytes that no completed flush covered
are lost. The commit log keeps only what ``flushed_offset`` covers; consume-queue
entries past the checkpoint's flushed point are cut at a random place, since their pages
may or may not have reached the disk."""

from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path

import rmq

ENTRY = 20


def checkpoint_flushed_offset(store_path: Path) -> int:
    data = (store_path / "checkpoint").read_bytes()
    magic, offset = struct.unpack_from(">qq", data, 512)
    assert magic == int.from_bytes(b"RMQCKPT2", "big")
    return int(offset)


def zero_commit_log_from(store_path: Path, offset: int) -> None:
    for segment in sorted((store_path / "commitlog").iterdir()):
        start, size = int(segment.name), segment.stat().st_size
        if start + size <= offset:
            continue
        cut = max(0, offset - start)
        with segment.open("r+b") as file:
            file.seek(cut)
            file.write(bytes(size - cut))


def cut_consume_queues(store_path: Path, safe_offset: int, generator: random.Random) -> None:
    for queue_file in sorted((store_path / "consumequeue").glob("*/*/*")):
        data = bytearray(queue_file.read_bytes())
        entries = [
            index
            for index in range(len(data) // ENTRY)
            if struct.unpack_from(">qi", data, index * ENTRY)[1] > 0
            and struct.unpack_from(">q", data, index * ENTRY)[0] >= safe_offset
        ]
        if entries:
            cut = generator.choice(entries)
            data[cut * ENTRY :] = bytes(len(data) - cut * ENTRY)
            queue_file.write_bytes(bytes(data))


def crash_copy(store: rmq.Store, source: Path, target: Path, generator: random.Random) -> int:
    """Copy an open store as a power loss would leave it; returns the log offset kept."""
    store.flush  # noqa: B018 - the store stays open: this is a crash, not a shutdown
    shutil.copytree(source, target)
    kept = store.flushed_offset()
    zero_commit_log_from(target, kept)
    cut_consume_queues(target, checkpoint_flushed_offset(target), generator)
    return kept
