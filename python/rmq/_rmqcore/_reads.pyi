"""Batches of a queue's messages read in one call, as objects, as protobuf bytes or as
Arrow column buffers with no Python object per message."""

import sys
from collections.abc import Iterator, Sequence
from typing import final

from ._message import Message

@final
class PullResult:
    """The answer to ``Store.pull``: messages and where the next pull starts."""

    @property
    def messages(self) -> list[Message]: ...
    @property
    def next_offset(self) -> int:
        """Queue offset after the last entry examined (tag-filtered ones included)."""
    @property
    def min_offset(self) -> int: ...
    @property
    def max_offset(self) -> int: ...

@final
class BodyBatch:
    """The answer to ``Store.read_bodies``: the bodies alone, left where they are in the
    mapped commit log. The batch keeps the log segments it reads from mapped, even once
    retention or the tier deletes their files or the store is closed, so everything it
    hands out stays readable while it (or any view of it) lives. Every record's CRC was
    checked when the batch was built.

    Iterating gives each body as ``bytes`` (one copy, straight from the mapping, no
    ``Message``); ``batch[i]`` gives one. ``views()`` and ``view(i)`` give zero-copy
    ``BodyView``s instead. ``offsets`` and ``data`` are Apache Arrow's ``large_binary``
    layout (the bodies copied into one buffer the first time either is asked for):
    ``pyarrow.Array.from_buffers(pa.large_binary(), len(batch), [None,
    pa.py_buffer(batch.offsets), pa.py_buffer(batch.data)])``.
    """

    def __len__(self) -> int:
        """How many bodies the batch holds."""
    def __getitem__(self, index: int, /) -> bytes:
        """Body ``index`` (negative counts from the end); ``IndexError`` past the end."""
    def __iter__(self) -> Iterator[bytes]: ...
    def views(self) -> Iterator[BodyView]:
        """The bodies in order as zero-copy ``BodyView``s of the mapped log."""
    def view(self, index: int) -> BodyView:
        """Body ``index`` (negative counts from the end) as a ``BodyView``."""
    @property
    def data(self) -> ColumnBuffer:
        """Every body, one after the other (copied once, when first asked for)."""
    @property
    def offsets(self) -> ColumnBuffer:
        """``len(batch) + 1`` int64 positions: body ``i`` is ``data[offsets[i]:offsets[i+1]]``."""
    @property
    def queue_offsets(self) -> ColumnBuffer:
        """The int64 queue offset of each body (gaps where a tag filter skipped messages)."""
    @property
    def next_offset(self) -> int: ...
    @property
    def min_offset(self) -> int: ...
    @property
    def max_offset(self) -> int: ...

@final
class BodyView:
    """One body of a ``BodyBatch`` in the mapped commit log, not copied: read-only through
    the buffer protocol (``memoryview(view)``, ``bytes(view)``, ``pyarrow.py_buffer(view)``),
    sized by ``len(view)``. It keeps its batch, and so the mapping, alive. Made only by
    ``BodyBatch.views()`` and ``BodyBatch.view()``."""

    def __len__(self) -> int:
        """The body's length in bytes."""
    if sys.version_info >= (3, 12):
        def __buffer__(self, flags: int, /) -> memoryview: ...

@final
class EncodedPull:
    """The answer to ``Store.pull_encoded``: the messages already encoded as field 1
    (``repeated StoredMessage messages``) of the broker's ``rmq.v1.PullResponse``."""

    @property
    def messages(self) -> bytes: ...
    @property
    def count(self) -> int:
        """How many messages ``messages`` holds."""
    @property
    def next_offset(self) -> int: ...
    @property
    def min_offset(self) -> int: ...
    @property
    def max_offset(self) -> int: ...

@final
class ColumnBuffer:
    """One column buffer of a ``DecodedBatch`` in Apache Arrow's layout, owned by the
    engine and readable without a copy through the buffer protocol (``memoryview``,
    ``pyarrow.py_buffer``)."""

    def __len__(self) -> int:
        """Size in bytes."""
    if sys.version_info >= (3, 12):
        def __buffer__(self, flags: int, /) -> memoryview: ...

@final
class PulledColumns:
    """The rows ``decode_pull_columns`` kept from one Pull response, as Arrow column
    buffers laid out as ``DecodedBatch.columns`` (``body_crc_ok`` all null)."""

    @property
    def num_rows(self) -> int: ...
    @property
    def next_offset(self) -> int:
        """The response's ``next_offset``: where the next pull starts."""
    @property
    def columns(self) -> dict[str, tuple[int, list[ColumnBuffer | None]]]: ...
    def __len__(self) -> int: ...

def decode_pull_columns(
    raw: bytes, *, end_offset: int = ..., keys: Sequence[str] = ...
) -> PulledColumns:
    """The messages of an encoded ``rmq.v1.PullResponse`` below ``end_offset`` that carry
    one of ``keys`` (any, if empty), as column buffers; no Python object per message."""
