"""A tiered store's segments read straight from its bucket."""

from typing import final

from ._segment_decoder import SegmentDecoder

@final
class TierReader:
    """A tiered store's segments, read from its bucket without the store (Spark's
    executors): ``url`` is the store's ``tier_url`` (``s3://bucket/prefix``), credentials
    come from the ``AWS_*`` environment variables. Wrong credentials or a missing bucket
    raise :class:`rmq.errors.TierError`."""

    def __new__(
        cls, url: str, *, endpoint: str | None = None, region: str | None = None
    ) -> TierReader: ...
    def segments(self) -> list[tuple[int, int]]:
        """The segments in the bucket, oldest first, as ``(start_offset, size)``."""
    def decoder(self, start_offset: int) -> SegmentDecoder:
        """A decoder over the segment starting at ``start_offset``, fetched whole and
        checked against the CRC32 recorded at upload (a changed object raises
        :class:`rmq.errors.CorruptRecordError`)."""
