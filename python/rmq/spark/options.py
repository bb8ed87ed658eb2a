"""The data source's options, parsed once when the DataFrame is defined."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, replace

from rmq.errors import InvalidArgumentError

__all__ = ["ReadOptions", "Selection", "parse_options"]

_ON_CORRUPT = ("fail", "stop")


@dataclass(frozen=True)
class Selection:
    """Which rows to read: every given constraint holds (``None``: no constraint).
    Store times are inclusive bounds in milliseconds since the epoch."""

    topics: frozenset[str] | None = None
    shards: frozenset[str] | None = None
    store_time_min: int | None = None
    store_time_max: int | None = None

    def with_topics(self, topics: frozenset[str]) -> Selection:
        return replace(self, topics=topics if self.topics is None else self.topics & topics)

    def with_shards(self, shards: frozenset[str]) -> Selection:
        return replace(self, shards=shards if self.shards is None else self.shards & shards)

    def with_store_time(self, minimum: int | None, maximum: int | None) -> Selection:
        if minimum is not None and self.store_time_min is not None:
            minimum = max(minimum, self.store_time_min)
        if maximum is not None and self.store_time_max is not None:
            maximum = min(maximum, self.store_time_max)
        return replace(
            self,
            store_time_min=self.store_time_min if minimum is None else minimum,
            store_time_max=self.store_time_max if maximum is None else maximum,
        )

    def is_empty(self) -> bool:
        """Nothing can match."""
        empty_range = (
            self.store_time_min is not None
            and self.store_time_max is not None
            and self.store_time_min > self.store_time_max
        )
        return empty_range or self.topics == frozenset() or self.shards == frozenset()


@dataclass(frozen=True)
class ReadOptions:
    #: Store files to read (``None``: only ``tier_urls``).
    path: str | None
    selection: Selection
    verify_crc: bool
    on_corrupt: str
    split_size: int
    batch_rows: int
    filter_pushdown: bool
    #: Tiered stores' ``tier_url`` (``s3://bucket/prefix``) whose segments to read from
    #: the bucket; with ``tier_endpoint`` and ``tier_region`` as the stores were given.
    tier_urls: tuple[str, ...] = ()
    tier_endpoint: str | None = None
    tier_region: str | None = None


def _bool(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise InvalidArgumentError(f"option {name}={text!r} is not true or false", argument=name)


def _int(name: str, text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgumentError(
            f"option {name}={text!r} is not an integer", argument=name
        ) from None
    if value < minimum:
        raise InvalidArgumentError(f"option {name}={value} is below {minimum}", argument=name)
    return value


def parse_time_ms(name: str, text: str) -> int:
    """Milliseconds since the epoch, or an ISO 8601 date/time (UTC unless it says)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgumentError(
            f"option {name}={text!r} is neither epoch milliseconds nor an ISO 8601 time",
            argument=name,
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return (moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)


def parse_options(options: Mapping[str, str]) -> ReadOptions:
    """Check and convert the options (names are case-insensitive, as Spark passes them)."""
    lowered = {name.lower(): value for name, value in options.items()}
    known = {
        "path",
        "topics",
        "store_time_start",
        "store_time_end",
        "verify_crc",
        "on_corrupt",
        "split_size",
        "batch_rows",
        "filter_pushdown",
        "tier_url",
        "tier_endpoint",
        "tier_region",
    }
    unknown = sorted(set(lowered) - known)
    if unknown:
        raise InvalidArgumentError(
            f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}",
            argument=unknown[0],
        )
    path = lowered.get("path") or None
    tier_urls = tuple(u.strip() for u in lowered.get("tier_url", "").split(",") if u.strip())
    if path is None and not tier_urls:
        raise InvalidArgumentError(
            'no path: use spark.read.format("rmq").load(path), or '
            '.option("tier_url", "s3://bucket/prefix") for a tiered store\'s bucket',
            argument="path",
        )
    tier_endpoint = lowered.get("tier_endpoint", "").strip() or None
    tier_region = lowered.get("tier_region", "").strip() or None
    for name, value in (("tier_endpoint", tier_endpoint), ("tier_region", tier_region)):
        if value is not None and not tier_urls:
            raise InvalidArgumentError(f"option {name} only applies with tier_url", argument=name)
    if len({url.rstrip("/") for url in tier_urls}) != len(tier_urls):
        raise InvalidArgumentError(
            f"option tier_url={lowered['tier_url']!r} names a tier twice", argument="tier_url"
        )
    selection = Selection()
    if "topics" in lowered:
        topics = frozenset(t.strip() for t in lowered["topics"].split(",") if t.strip())
        if topics:
            selection = selection.with_topics(topics)
    start = lowered.get("store_time_start")
    end = lowered.get("store_time_end")
    selection = selection.with_store_time(
        None if start is None else parse_time_ms("store_time_start", start),
        None if end is None else parse_time_ms("store_time_end", end) - 1,
    )
    on_corrupt = lowered.get("on_corrupt", "fail").strip().lower()
    if on_corrupt not in _ON_CORRUPT:
        raise InvalidArgumentError(
            f"option on_corrupt={on_corrupt!r} is not one of {', '.join(_ON_CORRUPT)}",
            argument="on_corrupt",
        )
    return ReadOptions(
        path=path,
        selection=selection,
        verify_crc=_bool("verify_crc", lowered.get("verify_crc", "true")),
        on_corrupt=on_corrupt,
        split_size=_int("split_size", lowered.get("split_size", "0"), 0),
        batch_rows=_int("batch_rows", lowered.get("batch_rows", "8192"), 1),
        filter_pushdown=_bool("filter_pushdown", lowered.get("filter_pushdown", "true")),
        tier_urls=tier_urls,
        tier_endpoint=tier_endpoint,
        tier_region=tier_region,
    )
