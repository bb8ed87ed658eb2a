"""Joining a partition's small Arrow batches into fewer, larger ones before Spark gets them.

A broker answers a pull with at most its ``max_pull_messages`` (1,024 by default), so a
partition read pull by pull hands Spark one record batch per pull. Each batch handed to
the JVM has a fixed cost there (an Arrow IPC message to read, column vectors to wrap, a
batch to start in the row conversion), whatever its size; joining consecutive pulls into
batches of about ``rows`` rows pays it fewer times. The join copies the buffers once, in
native code, which costs far less than what it saves on the JVM's side.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa  # type: ignore[import-untyped]

__all__ = ["join_batches"]


def join_batches(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """``batches``' rows, in order, in batches of at least ``rows`` rows (the last may be
    smaller): consecutive batches are joined until they reach it; a batch already that
    large passes as it is."""
    held: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        held.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield _joined(held)
            held, count = [], 0
    if held:
        yield _joined(held)


def _joined(held: list[pa.RecordBatch]) -> pa.RecordBatch:
    return held[0] if len(held) == 1 else pa.concat_batches(held)
