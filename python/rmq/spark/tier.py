"""Planning a read of tiered stores' segments from their bucket (the ``tier_url`` option).

A ``tier_url`` is what a store was opened with (``s3://bucket/prefix``): its sealed
segments are the objects ``prefix/commitlog/<20-digit offset>``. A url with no segments
of its own is taken as ``rmq serve --tier-url``'s, whose shard ``N`` has the prefix
``prefix/shard-N``: ``shard-0``, ``shard-1`` ... are read up to the first with no
segments. The ``shard`` column is the prefix's last part (the bucket's name for a bucket
root): ``shard-N`` for a broker's shards, as their store directories are named.

Listing happens here, on the driver; each segment is fetched by the executor that reads
it (``rmq.spark.arrow.TierSegmentPart``), whole: a segment's object holds its records
grouped by queue with a footer (docs/format.md §7.1.1), and the native reader puts them
back in log order before decoding, so a part's rows come in commit-log order as from a
local file. With ``path`` too, a store's segments are read once: its local files where
present, the bucket for the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rmq._rmqcore import TierReader
from rmq.errors import InvalidArgumentError, NotFoundError, TierError
from rmq.spark.arrow import SegmentPart, TierSegmentPart
from rmq.spark.layout import Shard, segment_parts

__all__ = ["TierStore", "find_tier_stores", "plan_store_parts", "tier_shard_name"]


@dataclass(frozen=True)
class TierStore:
    """One store's segments in its bucket: ``(start_offset, size)``, oldest first."""

    name: str
    url: str
    segments: tuple[tuple[int, int], ...]


def tier_shard_name(url: str) -> str:
    """The ``shard`` column of a tier: its prefix's last part, else the bucket's name."""
    return url.split("://", 1)[-1].strip("/").rsplit("/", 1)[-1]


def shard_tier_url(url: str, shard: int) -> str:
    """Shard ``shard``'s tier under ``rmq serve --tier-url url`` (as ``rmq.cluster.tier``
    has it; not imported from there, which would load the broker into every executor)."""
    return f"{url.rstrip('/')}/shard-{shard}"


def _segments(url: str, endpoint: str | None, region: str | None) -> tuple[tuple[int, int], ...]:
    try:
        reader = TierReader(url, endpoint=endpoint, region=region)
        return tuple((start, size) for start, size in reader.segments() if size > 0)
    except TierError as error:
        raise TierError(f"option tier_url: {error}", error.object, error.reason) from error


def find_tier_stores(
    urls: Sequence[str],
    *,
    endpoint: str | None = None,
    region: str | None = None,
    allow_empty: bool = False,
) -> list[TierStore]:
    """The stores of each url (see the module docs). A url under which no segment is
    found is an error unless ``allow_empty`` (then it gives no store)."""
    stores: list[TierStore] = []
    for given in urls:
        url = given.rstrip("/")
        segments = _segments(url, endpoint, region)
        if segments:
            stores.append(TierStore(tier_shard_name(url), url, segments))
            continue
        shard = 0
        while segments := _segments(shard_tier_url(url, shard), endpoint, region):
            stores.append(TierStore(f"shard-{shard}", shard_tier_url(url, shard), segments))
            shard += 1
        if shard == 0 and not allow_empty:
            raise NotFoundError(
                f"option tier_url: no segments in {url} (under {url}/commitlog/ nor "
                f"{shard_tier_url(url, 0)}/commitlog/): nothing is uploaded there yet, or "
                "it is not a store's tier_url"
            )
    seen: dict[str, str] = {}
    for store in stores:
        if store.name in seen:
            raise InvalidArgumentError(
                f"option tier_url: {seen[store.name]} and {store.url} both give shard "
                f"{store.name!r}; read them separately",
                argument="tier_url",
            )
        seen[store.name] = store.url
    return stores


def pair_stores(
    shards: Sequence[Shard], tiers: Sequence[TierStore]
) -> list[tuple[str, Shard | None, TierStore | None]]:
    """Each store once, by shard name: its local directory, its tier, or both. One local
    store and one tier with different names are the same store (the local name wins)."""
    if len(shards) == 1 and len(tiers) == 1:
        return [(shards[0].name, shards[0], tiers[0])]
    by_name = {tier.name: tier for tier in tiers}
    pairs: list[tuple[str, Shard | None, TierStore | None]] = [
        (shard.name, shard, by_name.pop(shard.name, None)) for shard in shards
    ]
    pairs.extend((tier.name, None, tier) for tier in by_name.values())
    return pairs


def plan_store_parts(
    name: str,
    shard: Shard | None,
    tier: TierStore | None,
    *,
    split_size: int = 0,
    endpoint: str | None = None,
    region: str | None = None,
) -> list[SegmentPart | TierSegmentPart]:
    """One store's parts: each segment once, a segment being its start offset. A local
    file that holds data is read in place (cut by ``split_size`` like any); the bucket's
    copy of a segment with no local file is one part, fetched whole by the executor."""
    local = {}
    if shard is not None:
        local = {segment.start_offset: segment for segment in shard.segments() if segment.has_data}
    remote = {} if tier is None else dict(tier.segments)
    starts = sorted(local.keys() | remote.keys())
    parts: list[SegmentPart | TierSegmentPart] = []
    for index, start in enumerate(starts):
        tail = index == len(starts) - 1
        if start in local:
            parts.extend(segment_parts(name, local[start], split_size, tail=tail))
        else:
            assert tier is not None
            parts.append(
                TierSegmentPart(name, tier.url, start, remote[start], tail, endpoint, region)
            )
    return parts
