"""Spark filters the reader takes over (pushdown, pyspark 4.1+).

Taken over, exactly: ``topic`` and ``shard`` compared with ``=`` or ``IN``, and
``store_timestamp`` compared with ``=``, ``<``, ``<=``, ``>``, ``>=``. The reader applies
them itself (topic and time in the native decoder, shard when planning partitions), so
Spark does not evaluate them again. Everything else is left to Spark.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from rmq.spark.options import Selection

__all__ = ["push_filters"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROS_PER_MILLI = 1000


def _micros(value: object) -> int | None:
    """Microseconds since the epoch of a timestamp literal, as Spark passes one."""
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        # A naive value would be a TIMESTAMP_NTZ, whose instant depends on a time zone.
        return None
    return (value - _EPOCH) // dt.timedelta(microseconds=1)


def _strings(values: object) -> frozenset[str] | None:
    if isinstance(values, str):
        return frozenset([values])
    if isinstance(values, tuple | list) and all(isinstance(v, str) for v in values):
        return frozenset(values)
    return None


def _time_bounds(condition: Filter) -> tuple[int | None, int | None] | None:
    """Inclusive millisecond bounds equivalent to a comparison on ``store_timestamp``
    (which holds whole milliseconds), or ``None`` if it is not one."""
    micros = _micros(getattr(condition, "value", None))
    if micros is None:
        return None
    floor = micros // _MICROS_PER_MILLI
    ceiling = -(-micros // _MICROS_PER_MILLI)
    if isinstance(condition, EqualTo):
        return (floor, floor) if micros % _MICROS_PER_MILLI == 0 else (1, 0)
    if isinstance(condition, GreaterThan):
        return floor + 1, None
    if isinstance(condition, GreaterThanOrEqual):
        return ceiling, None
    if isinstance(condition, LessThan):
        return None, ceiling - 1
    if isinstance(condition, LessThanOrEqual):
        return None, floor
    return None


def _push_one(selection: Selection, condition: Filter) -> Selection | None:
    column = getattr(condition, "attribute", None)
    if column == ("topic",) or column == ("shard",):
        if not isinstance(condition, EqualTo | In):
            return None
        values = _strings(condition.value)
        if values is None:
            return None
        if column == ("topic",):
            return selection.with_topics(values)
        return selection.with_shards(values)
    if column == ("store_timestamp",):
        bounds = _time_bounds(condition)
        if bounds is None:
            return None
        return selection.with_store_time(*bounds)
    return None


def push_filters(selection: Selection, filters: Iterable[Filter]) -> tuple[Selection, list[Filter]]:
    """Fold the filters the reader can apply into ``selection``; return it and the
    filters left for Spark (the same objects, as pyspark requires)."""
    remaining: list[Filter] = []
    for condition in filters:
        pushed = _push_one(selection, condition)
        if pushed is None:
            remaining.append(condition)
        else:
            selection = pushed
    return selection, remaining
