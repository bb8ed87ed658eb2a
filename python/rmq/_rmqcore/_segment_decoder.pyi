"""Commit-log segment files decoded straight into Arrow column buffers, without a
store (the Spark reader's executors)."""

from collections.abc import Sequence
from os import PathLike
from typing import final

from rmq.errors import CorruptRecordError

from ._reads import ColumnBuffer

@final
class DecodedBatch:
    """Rows decoded by ``SegmentDecoder.decode``, as Arrow column buffers."""

    @property
    def num_rows(self) -> int: ...
    @property
    def next_position(self) -> int:
        """File position where the next ``decode`` call should start."""
    @property
    def records_scanned(self) -> int:
        """Valid records read, including those the filters dropped."""
    @property
    def end(self) -> str | None:
        """Why decoding stopped: ``None`` (the batch is full; call again from
        ``next_position``), ``"limit"`` (reached ``end``), ``"blank"`` (end-of-segment
        record), ``"end_of_data"`` (zeros), ``"end_of_file"`` or ``"invalid"``."""
    @property
    def error(self) -> CorruptRecordError | None:
        """For ``end == "invalid"``: the error (not raised) naming the file, the record's
        position in it and the reason."""
    @property
    def nothing_after(self) -> bool:
        """For ``end == "invalid"``: every byte after the bad record is zero, as a write
        torn by a crash (or still in progress) leaves the end of the last segment."""
    @property
    def columns(self) -> dict[str, tuple[int, list[ColumnBuffer | None]]]:
        """Column name to ``(length, buffers)``, the buffers in the order
        ``pyarrow.Array.from_buffers`` takes them (validity first, ``None`` when absent).
        Children of nested columns are named ``keys.element``, ``properties.key`` and
        ``properties.value``; timestamps are milliseconds since the epoch; ``body_crc_ok``
        is ``[validity, values]`` (not valid where CRCs were not verified)."""

@final
class SegmentDecoder:
    """A read-only decoder over one commit-log segment file.

    Maps the file read-only, never writes it and takes no lock: safe on a crashed copy
    and beside a running broker. The segment size is the file's size; the start offset
    comes from the 20-digit file name unless given.
    """

    def __new__(
        cls, path: str | PathLike[str], *, start_offset: int | None = None
    ) -> SegmentDecoder: ...
    @property
    def path(self) -> str: ...
    @property
    def start_offset(self) -> int: ...
    @property
    def size(self) -> int: ...
    def split_points(self, part_size: int) -> list[int]:
        """File positions, starting with 0, that cut the file into parts of about
        ``part_size`` bytes on record boundaries (follows the chain of record headers)."""
    def decode(
        self,
        start: int = 0,
        end: int | None = None,
        *,
        verify_crc: bool = True,
        topics: Sequence[str] | None = None,
        store_time_min: int | None = None,
        store_time_max: int | None = None,
        max_rows: int = 8192,
        max_bytes: int = 4194304,
        columns: Sequence[str] | None = None,
    ) -> DecodedBatch:
        """Decode the records that start in ``[start, end)`` (``end`` defaults to the file
        size) until the batch holds ``max_rows`` rows or about ``max_bytes`` record bytes,
        or reading stops (see ``DecodedBatch.end``). ``topics`` and the inclusive
        store-time bounds (milliseconds) drop rows but every record is still validated.
        ``verify_crc`` checks the body CRC and RocketMQ 5's CRC property. ``columns``
        names the columns the caller will use: the costlier ones left out (``msg_id``,
        ``tags``/``keys``/``properties``, ``body``, the hosts) are not filled, which saves
        their decoding and copying; every column is still present."""
