"""The PySpark data source ``rmq`` (Python Data Source API): reads commit-log segment
files through the native decoder, one partition per segment or segment part; streams a
topic's queues (``rmq.spark.stream``); writes rows to a broker (``rmq.spark.sink``).

The options are parsed when Spark asks for a reader or a writer, not when the source is
made: each use takes different options (``path`` for a batch read, ``endpoint`` and
``topic`` for a stream or a write)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rmq.errors import InvalidArgumentError
from rmq.spark.arrow import ARROW_SCHEMA, SegmentPart, TierSegmentPart, read_part
from rmq.spark.layout import Shard, find_shards, plan_parts
from rmq.spark.options import ReadOptions, Selection, parse_options
from rmq.spark.tier import find_tier_stores, pair_stores, plan_store_parts

if TYPE_CHECKING:
    from pyspark.sql.datasource import Filter

    from rmq.spark.sink import WriteOptions
    from rmq.spark.stream import RmqStreamReader

__all__ = ["SCHEMA", "STREAM_PYSPARK", "RmqDataSource"]

#: The first pyspark whose Python data sources can stream as ``rmq`` does.
STREAM_PYSPARK = "4.2"

#: The rows of ``spark.read.format("rmq")``.
SCHEMA = StructType(
    [
        StructField("shard", StringType(), nullable=False),
        StructField("topic", StringType(), nullable=False),
        StructField("queue_id", IntegerType(), nullable=False),
        StructField("queue_offset", LongType(), nullable=False),
        StructField("commitlog_offset", LongType(), nullable=False),
        StructField("msg_id", StringType(), nullable=False),
        StructField("tags", StringType(), nullable=True),
        StructField("keys", ArrayType(StringType(), containsNull=False), nullable=False),
        StructField(
            "properties",
            MapType(StringType(), StringType(), valueContainsNull=False),
            nullable=False,
        ),
        StructField("body", BinaryType(), nullable=False),
        StructField("body_size", IntegerType(), nullable=False),
        StructField("born_timestamp", TimestampType(), nullable=False),
        StructField("store_timestamp", TimestampType(), nullable=False),
        StructField("born_host", StringType(), nullable=False),
        StructField("store_host", StringType(), nullable=False),
        StructField("sys_flag", IntegerType(), nullable=False),
        StructField("flag", IntegerType(), nullable=False),
        StructField("reconsume_times", IntegerType(), nullable=False),
        StructField("body_crc_ok", BooleanType(), nullable=True),
    ]
)


class RmqDataSource(DataSource):
    """``spark.read.format("rmq").load(path)``, or ``.option("tier_url", ...)`` for a
    tiered store's bucket; see ``docs/spark.md``."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)

    @classmethod
    def name(cls) -> str:
        return "rmq"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        read_options = parse_options(self.options)
        arrow_schema = ARROW_SCHEMA if schema == SCHEMA else _projection(schema)
        if read_options.filter_pushdown:
            return _FilteringReader(read_options, arrow_schema)
        return _Reader(read_options, arrow_schema)

    # Imported when used: streaming needs pyspark 4.2 (read limits, AvailableNow), and a
    # batch read should not load the gRPC client.

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        reader_class = _stream_reader_class()
        from rmq.spark.stream_options import parse_stream_options

        arrow_schema = ARROW_SCHEMA if schema == SCHEMA else _projection(schema)
        return reader_class(parse_stream_options(self.options), arrow_schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from rmq.spark.sink import RmqWriter, check_broker, sink_columns

        options = self._write_options(overwrite)
        sink_columns(schema, options)
        check_broker(options)
        return RmqWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from rmq.spark.sink import RmqStreamWriter, check_broker, sink_columns

        options = self._write_options(overwrite)
        sink_columns(schema, options)
        check_broker(options)
        return RmqStreamWriter(options)

    def _write_options(self, overwrite: bool) -> WriteOptions:
        from rmq.spark.sink import parse_write_options

        if overwrite:
            raise InvalidArgumentError("rmq only appends: write with mode append", argument="mode")
        return parse_write_options(self.options)


def _stream_reader_class() -> type[RmqStreamReader]:
    """The stream reader, or a clear ``ImportError`` on a pyspark without what it needs
    (``pyspark.sql.streaming.datasource``: read limits and ``Trigger.AvailableNow`` for
    Python sources, from pyspark 4.2)."""
    try:
        from rmq.spark.stream import RmqStreamReader
    except ImportError as missing:
        if not (missing.name or "").startswith("pyspark"):
            raise
        import pyspark

        raise ImportError(
            f"spark.readStream.format('rmq') needs pyspark {STREAM_PYSPARK} or later (read "
            "limits and Trigger.AvailableNow for Python data sources); this is pyspark "
            f"{pyspark.__version__} ({missing}): pip install 'pyspark>={STREAM_PYSPARK}'"
        ) from missing
    return RmqStreamReader


def _loosely(data_type: DataType) -> DataType:
    """The type with nested nullability dropped."""
    if isinstance(data_type, ArrayType):
        return ArrayType(_loosely(data_type.elementType))
    if isinstance(data_type, MapType):
        return MapType(_loosely(data_type.keyType), _loosely(data_type.valueType))
    return data_type


def _projection(schema: StructType) -> Any:
    """The Arrow schema of a user-given ``.schema()``: some of ``SCHEMA``'s columns, by
    name, with the same types (nullability aside)."""
    for field in schema.fields:
        if field.name not in SCHEMA.names:
            raise InvalidArgumentError(
                f"column {field.name!r} is not one of the rmq source's: {', '.join(SCHEMA.names)}",
                argument="schema",
            )
        ours = SCHEMA[field.name]
        if _loosely(field.dataType) != _loosely(ours.dataType) or (
            ours.nullable and not field.nullable
        ):
            raise InvalidArgumentError(
                f"column {field.name!r} is {ours.dataType.simpleString()}"
                f"{'' if ours.nullable else ' not null'} in the rmq source, "
                f"not {field.dataType.simpleString()}",
                argument="schema",
            )
    return to_arrow_schema(schema, timezone="UTC")


class _Reader(DataSourceReader):
    def __init__(self, options: ReadOptions, arrow_schema: Any) -> None:
        self.options = options
        self.arrow_schema = arrow_schema
        self.selection: Selection = options.selection

    def partitions(self) -> list[InputPartition]:
        if self.selection.is_empty():
            return []
        options = self.options
        shards: list[Shard] = [] if options.path is None else find_shards(options.path)
        if not options.tier_urls:
            shards = [shard for shard in shards if self._selected(shard.name)]
            return [InputPartition(part) for part in plan_parts(shards, options.split_size)]
        tiers = find_tier_stores(
            options.tier_urls,
            endpoint=options.tier_endpoint,
            region=options.tier_region,
            allow_empty=options.path is not None,
        )
        parts: list[SegmentPart | TierSegmentPart] = []
        for name, shard, tier in pair_stores(shards, tiers):
            if self._selected(name):
                parts.extend(
                    plan_store_parts(
                        name,
                        shard,
                        tier,
                        split_size=options.split_size,
                        endpoint=options.tier_endpoint,
                        region=options.tier_region,
                    )
                )
        return [InputPartition(part) for part in parts]

    def _selected(self, shard: str) -> bool:
        return self.selection.shards is None or shard in self.selection.shards

    def read(self, partition: InputPartition) -> Iterator[Any]:
        part = partition.value
        if not isinstance(part, SegmentPart | TierSegmentPart) or self.selection.is_empty():
            return iter(())
        topics = self.selection.topics
        return read_part(
            part,
            verify_crc=self.options.verify_crc,
            topics=None if topics is None else sorted(topics),
            store_time_min=self.selection.store_time_min,
            store_time_max=self.selection.store_time_max,
            on_corrupt=self.options.on_corrupt,
            batch_rows=self.options.batch_rows,
            schema=self.arrow_schema,
        )


class _FilteringReader(_Reader):
    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        # Imported here: the filter classes exist from pyspark 4.1, the first version
        # that calls this; 4.0 reads without pushdown.
        from rmq.spark.filters import push_filters

        self.selection, remaining = push_filters(self.selection, filters)
        return remaining
