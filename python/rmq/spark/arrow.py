"""Commit-log segments as Arrow record batches, decoded by the native engine.

``SegmentDecoder.decode`` returns its columns as buffers in Arrow's layout; this module
wraps them with ``pyarrow.Array.from_buffers`` (no copy, no Python object per message)
and adds the shard name. A segment is a local file (``SegmentPart``) or an object in a
tiered store's bucket (``TierSegmentPart``, fetched whole by ``TierReader``). Used by the
Spark data source, and usable on its own::

    for batch in read_segment("store/commitlog/00000000000000000000", shard="store"):
        ...
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa  # type: ignore[import-untyped]

from rmq._rmqcore import DecodedBatch, PulledColumns, SegmentDecoder, TierReader
from rmq.errors import CorruptRecordError

__all__ = [
    "ARROW_SCHEMA",
    "SegmentPart",
    "TierSegmentPart",
    "read_part",
    "read_segment",
    "to_record_batch",
]

log = logging.getLogger("rmq.spark")

_TIMESTAMP = pa.timestamp("us", tz="UTC")
_KEYS_TYPE = pa.list_(pa.field("element", pa.string(), nullable=False))
_PROPERTIES_TYPE = pa.map_(
    pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string(), nullable=False)
)

#: The Arrow form of the Spark schema (``rmq.spark.SCHEMA``), field for field.
ARROW_SCHEMA = pa.schema(
    [
        pa.field("shard", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("queue_id", pa.int32(), nullable=False),
        pa.field("queue_offset", pa.int64(), nullable=False),
        pa.field("commitlog_offset", pa.int64(), nullable=False),
        pa.field("msg_id", pa.string(), nullable=False),
        pa.field("tags", pa.string(), nullable=True),
        pa.field("keys", _KEYS_TYPE, nullable=False),
        pa.field("properties", _PROPERTIES_TYPE, nullable=False),
        pa.field("body", pa.binary(), nullable=False),
        pa.field("body_size", pa.int32(), nullable=False),
        pa.field("born_timestamp", _TIMESTAMP, nullable=False),
        pa.field("store_timestamp", _TIMESTAMP, nullable=False),
        pa.field("born_host", pa.string(), nullable=False),
        pa.field("store_host", pa.string(), nullable=False),
        pa.field("sys_flag", pa.int32(), nullable=False),
        pa.field("flag", pa.int32(), nullable=False),
        pa.field("reconsume_times", pa.int32(), nullable=False),
        pa.field("body_crc_ok", pa.bool_(), nullable=True),
    ]
)

_FLAT_TYPES = {
    "topic": pa.string(),
    "queue_id": pa.int32(),
    "queue_offset": pa.int64(),
    "commitlog_offset": pa.int64(),
    "msg_id": pa.string(),
    "tags": pa.string(),
    "body": pa.binary(),
    "body_size": pa.int32(),
    "born_host": pa.string(),
    "store_host": pa.string(),
    "sys_flag": pa.int32(),
    "flag": pa.int32(),
    "reconsume_times": pa.int32(),
    "body_crc_ok": pa.bool_(),
}


def to_record_batch(
    decoded: DecodedBatch | PulledColumns, shard: str, schema: pa.Schema = ARROW_SCHEMA
) -> pa.RecordBatch:
    """Wrap a decoded batch's buffers (from ``SegmentDecoder.decode`` or
    ``decode_pull_columns``) as a record batch of ``schema``: by default
    ``ARROW_SCHEMA``, or some of its columns, in any order, whose types may differ from
    ``ARROW_SCHEMA``'s in nullability only."""
    columns = decoded.columns
    rows = decoded.num_rows

    def buffers(name: str) -> list[pa.Buffer | None]:
        return [None if b is None else pa.py_buffer(b) for b in columns[name][1]]

    def array(name: str, arrow_type: pa.DataType) -> pa.Array:
        return pa.Array.from_buffers(arrow_type, columns[name][0], buffers(name))

    def keys() -> pa.Array:
        element = array("keys.element", pa.string())
        return pa.Array.from_buffers(_KEYS_TYPE, rows, buffers("keys"), children=[element])

    def properties() -> pa.Array:
        entries = pa.StructArray.from_arrays(
            [array("properties.key", pa.string()), array("properties.value", pa.string())],
            fields=[_PROPERTIES_TYPE.key_field, _PROPERTIES_TYPE.item_field],
        )
        return pa.Array.from_buffers(
            _PROPERTIES_TYPE, rows, buffers("properties"), children=[entries]
        )

    def timestamps(name: str) -> pa.Array:
        return array(name, pa.timestamp("ms", tz="UTC")).cast(_TIMESTAMP)

    def build(name: str) -> pa.Array:
        if name in _FLAT_TYPES:
            return array(name, _FLAT_TYPES[name])
        if name == "shard":
            return pa.repeat(shard, rows).cast(pa.string())
        if name == "keys":
            return keys()
        if name == "properties":
            return properties()
        return timestamps(name)

    arrays = []
    for field in schema:
        built = build(field.name)
        arrays.append(built if built.type.equals(field.type) else built.cast(field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


@dataclass(frozen=True)
class SegmentPart:
    """Records starting in ``[begin, end)`` of one segment file of one shard.

    ``tail`` says that no later segment of the shard holds data, so a record torn at the
    very end of this one is the end of the log (what a crash or a write in progress
    leaves) rather than damage.
    """

    shard: str
    path: str
    start_offset: int
    begin: int
    end: int
    tail: bool

    def decoder(self) -> SegmentDecoder:
        return SegmentDecoder(self.path, start_offset=self.start_offset)


@dataclass(frozen=True)
class TierSegmentPart:
    """One whole segment of one shard, in the bucket of a tiered store: ``url`` is the
    store's ``tier_url``, ``endpoint`` and ``region`` as the store was given them
    (credentials come from the ``AWS_*`` variables where the part is read). The object
    is fetched when the part is read (on the executor), whole, and checked against the
    CRC32 recorded at upload. ``tail`` as in ``SegmentPart``.
    """

    shard: str
    url: str
    start_offset: int
    size: int
    tail: bool
    endpoint: str | None = None
    region: str | None = None

    @property
    def begin(self) -> int:
        return 0

    @property
    def end(self) -> int:
        return self.size

    def decoder(self) -> SegmentDecoder:
        reader = TierReader(self.url, endpoint=self.endpoint, region=self.region)
        return reader.decoder(self.start_offset)


def read_part(
    part: SegmentPart | TierSegmentPart,
    *,
    verify_crc: bool = True,
    topics: Sequence[str] | None = None,
    store_time_min: int | None = None,
    store_time_max: int | None = None,
    on_corrupt: str = "fail",
    batch_rows: int = 8192,
    schema: pa.Schema = ARROW_SCHEMA,
) -> Iterator[pa.RecordBatch]:
    """Yield the rows of one part, then stop at its end.

    At an invalid record every row before it has been yielded; then ``on_corrupt="fail"``
    raises ``CorruptRecordError`` (file, offset and reason) and ``"stop"`` logs it as a
    warning on logger ``rmq.spark`` and ends the part. A torn last record of the shard's
    last segment (only zeros after it) ends the part with a warning in both modes.
    Store times are inclusive bounds in milliseconds. ``schema`` selects columns (see
    ``to_record_batch``); the decoder then skips filling the others, and checks no CRC
    unless ``body_crc_ok`` is one of them. A segment object
    that differs from what was uploaded (its CRC32) is an invalid record at its start:
    none of its rows are returned.
    """
    wanted = [name for name in schema.names if name != "shard"]
    # Checking CRCs only fills body_crc_ok (a mismatch is not an error): a schema
    # without that column need not pay for it (a fifth of the decoder's time).
    verify_crc = verify_crc and "body_crc_ok" in wanted
    try:
        decoder = part.decoder()
    except CorruptRecordError as changed:
        if not isinstance(part, TierSegmentPart):
            raise
        _report_invalid(part, changed, torn_tail=False, mode=on_corrupt)
        return
    position = part.begin
    while True:
        decoded = decoder.decode(
            position,
            part.end,
            verify_crc=verify_crc,
            topics=topics,
            store_time_min=store_time_min,
            store_time_max=store_time_max,
            max_rows=batch_rows,
            columns=wanted,
        )
        if decoded.num_rows:
            yield to_record_batch(decoded, part.shard, schema)
        if decoded.end is None:
            position = decoded.next_position
            continue
        if decoded.end == "invalid":
            error = decoded.error
            assert error is not None
            _report_invalid(
                part, error, torn_tail=part.tail and decoded.nothing_after, mode=on_corrupt
            )
        return


def _report_invalid(
    part: SegmentPart | TierSegmentPart, error: CorruptRecordError, *, torn_tail: bool, mode: str
) -> None:
    if torn_tail:
        log.warning("shard %s: the log ends with a torn record: %s", part.shard, error)
    elif mode == "stop":
        log.warning("shard %s: stopped at a corrupt record: %s", part.shard, error)
    else:
        raise error


def read_segment(
    path: str,
    *,
    shard: str = "",
    start_offset: int | None = None,
    verify_crc: bool = True,
    on_corrupt: str = "fail",
) -> Iterator[pa.RecordBatch]:
    """Every row of one segment file (see ``read_part``; the file counts as the last)."""
    decoder = SegmentDecoder(path, start_offset=start_offset)
    part = SegmentPart(shard, path, decoder.start_offset, 0, decoder.size, tail=True)
    return read_part(part, verify_crc=verify_crc, on_corrupt=on_corrupt)
