"""The store: one directory in RocketMQ's layout, opened for reading and writing."""

from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any, final

from ._message import Message, PutResult, PutResults
from ._reads import BodyBatch, EncodedPull, PullResult
from ._reports import DiskUsage, RecoveryReport, RetentionReport, VerifyReport

@final
class Store:
    """A store directory in RocketMQ's layout, opened for reading and writing.

    Every method that does I/O releases the GIL. Use it as a context manager or call
    ``close()``.
    """

    def __new__(
        cls,
        path: str | PathLike[str],
        *,
        commitlog_segment_size: int = 1073741824,
        consume_queue_entries_per_file: int = 300000,
        store_host: str = "127.0.0.1:10911",
        max_message_size: int = 4194304,
        default_queue_count: int = 8,
        read_only: bool = False,
        flush_disk_type: str = "ASYNC_FLUSH",
        flush_interval_ms: int = 500,
        flush_least_pages: int = 4,
        flush_thorough_interval_ms: int = 10000,
        sync_flush_timeout_ms: int = 5000,
        index_slot_count: int = 5000000,
        index_entry_count: int = 20000000,
        file_reserved_time_ms: int = 259200000,
        delete_when: str = "04",
        disk_max_used_space_ratio: float = 0.75,
        disk_space_clean_forcibly_ratio: float = 0.85,
        disk_space_warning_level_ratio: float = 0.9,
        delete_files_batch_max: int = 10,
        delete_interval_ms: int = 100,
        retention_check_interval_ms: int = 10000,
        append_record_crc: bool = True,
        warm_ahead_bytes: int = 67108864,
        v1_records_only: bool = False,
        consume_queue_type: str | None = None,
        rebuild_consume_queues: bool = False,
        tier_url: str | None = None,
        tier_endpoint: str | None = None,
        tier_region: str | None = None,
        local_retention_bytes: int | None = None,
        local_retention_hours: float | None = None,
        tier_retention_hours: float | None = None,
    ) -> Store:
        """Open or create the store at ``path`` and recover it.

        Segment sizes of an existing store are taken from its files. ``read_only=True``
        changes nothing on disk and takes no lock (safe beside a running broker).
        ``flush_disk_type="SYNC_FLUSH"`` makes ``put`` return only once durable.
        ``index_slot_count`` and ``index_entry_count`` size new index files (RocketMQ's
        ``maxHashSlotNum`` and ``maxIndexNum``); existing files keep their size.
        ``warm_ahead_bytes`` of the commit log ahead of the writer are faulted in by a
        background thread so that puts rarely wait for the kernel (0 turns it off).
        Topics may be up to 255 bytes; those over 127 are written as V2 records, as
        RocketMQ 5 writes them. ``v1_records_only=True`` keeps every record readable by
        RocketMQ 4.9 by refusing such topics instead.
        ``consume_queue_type`` ("file" or "rocksdb") chooses the consume-queue form of a
        new store: files of 20-byte entries, or RocketMQ 5's RocksDB consume queue for
        stores with very many queues. It is recorded in the store; left out, an existing
        store opens as it was created, and asking for the other form is refused.
        ``rebuild_consume_queues=True`` recreates the consume queues and the key index from
        the commit log while opening (a damaged or missing RocksDB consume queue).
        ``tier_url="s3://bucket/prefix"`` gives the store an object-storage tier on an
        S3-compatible server (``tier_endpoint="http://host:port"``; credentials from the
        ``AWS_*`` environment variables): sealed segments are uploaded, their local
        copies go once past ``local_retention_bytes`` / ``local_retention_hours`` (or
        when the disk passes ``disk_max_used_space_ratio``), and reads of them are served
        from the bucket; segments leave the store ``tier_retention_hours`` after they
        were last written (default ``file_reserved_time_ms``). Wrong credentials or a
        missing bucket raise :class:`rmq.errors.TierError` here. A read of data only the
        bucket holds raises ``TierError`` (``unreachable`` set) while the server cannot be
        reached, and :class:`rmq.errors.TierObjectChangedError` for an object deleted or
        replaced behind the store's back; never an empty answer.
        """
    @property
    def path(self) -> str: ...
    @property
    def consume_queue_type(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    @property
    def read_only(self) -> bool: ...
    @property
    def recovery_report(self) -> RecoveryReport: ...
    def put(
        self,
        topic: str,
        body: bytes,
        *,
        queue_id: int = 0,
        tags: str | None = None,
        keys: Sequence[str] | str | None = None,
        properties: Mapping[str, str] | None = None,
        flag: int = 0,
        born_timestamp: int | None = None,
        born_host: str | None = None,
    ) -> PutResult:
        """Append one message; readable by ``get`` as soon as this returns."""
    def put_batch(
        self,
        topic: str,
        queue_id: int,
        messages: Sequence[bytes | Message],
        *,
        tags: str | Sequence[str | None] | None = None,
        keys: Sequence[str | Sequence[str] | None] | None = None,
        born_host: str | None = None,
    ) -> PutResults:
        """Append messages to one queue under one lock; all or none are written.

        With bytes bodies, ``tags`` (one tag for all, or one per message) and ``keys`` (per
        message, as ``put`` takes them) give their fields as columns, so a bulk writer
        builds no ``Message`` per message; an ``rmq.Message`` carries its own fields and
        cannot be mixed with them.
        """
    def get(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = 32,
        *,
        tags: str | Sequence[str] | None = None,
    ) -> list[Message]:
        """Messages of a queue from ``offset`` on, at most ``max_count``.

        ``tags`` keeps only messages whose tag is one of those given. An offset equal to
        the queue's max offset gives an empty list; one below the min or above the max
        raises ``OffsetOutOfRangeError``.
        """
    def pull(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = 32,
        *,
        tags: str | Sequence[str] | None = None,
        max_bytes: int | None = None,
    ) -> PullResult:
        """Like ``get``, and also says where the next pull starts (for consumers)."""
    def pull_encoded(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = 32,
        *,
        tags: str | Sequence[str] | None = None,
        max_bytes: int | None = None,
    ) -> EncodedPull:
        """``pull`` for the broker: the messages come protobuf-encoded, with no Python
        object made per message."""
    def read_bodies(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = 32,
        *,
        tags: str | Sequence[str] | None = None,
        max_bytes: int | None = None,
    ) -> BodyBatch:
        """``pull`` for bulk readers: only the bodies, left in the mapped log, with no
        Python object per message (``BodyBatch``: ``bytes`` per body, or zero-copy views).
        The same messages as ``pull`` with the same arguments, each record's CRCs checked
        as ``get`` checks them when the batch is built, and the same errors."""
    def get_at(self, commitlog_offset: int) -> Message:
        """The message whose record starts at ``commitlog_offset``."""
    def query_by_key(
        self,
        topic: str,
        key: str,
        *,
        begin: int = 0,
        end: int | None = None,
        max_count: int = 64,
    ) -> list[Message]:
        """Messages of ``topic`` whose keys (or ``UNIQ_KEY`` property) include ``key``.

        Only messages stored in ``[begin, end]`` (store timestamps in ms, inclusive;
        ``end=None`` means no upper bound), newest first, at most ``max_count``. Results are
        exact: the index's hash collisions and other topics' keys are filtered out by
        reading each record. Transaction ROLLBACK records are never indexed. An unknown
        topic raises ``NotFoundError``; an empty key, ``max_count < 1`` or ``begin > end``
        raise ``InvalidArgumentError``; a record that fails its checks raises
        ``CorruptRecordError`` (an empty list always means "no such message").
        """
    def get_by_msg_id(self, msg_id: str) -> Message:
        """The message a msgId (``PutResult.msg_id``, ``Message.msg_id``) names.

        The commit-log offset is decoded from the id and the record there must carry the
        same id. A malformed id raises ``InvalidArgumentError``; an id naming no record
        (wrong offset, other store host, removed by retention) raises ``NotFoundError``.
        """
    def offset_for_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """The first queue offset whose message was stored at or after ``timestamp_ms``.

        An empty queue (or one never written) gives its max offset, which then equals its
        min offset. A time at or before the first message gives the min offset; a time
        after the last message gives the max offset (where the next message will go).
        Found by binary search over the queue's store times, which are taken to be
        non-decreasing. An unknown topic raises ``NotFoundError``.
        """
    def _index_files(self) -> list[tuple[str, int, bool, bool]]:
        """Test hook: index files oldest first as ``(name, entries, full, compacted)``."""
    def _verify_index(self) -> tuple[int, list[str]]:
        """Test hook: compare the index with a rebuild from the log.

        Returns ``(entries_checked, differences)``; no differences means they agree.
        """
    def _pause_index_compaction(self, paused: bool) -> None:
        """Test hook: hold back (``True``) or resume compaction of sealed index files."""
    def _wait_index_compaction(self, timeout_s: float) -> bool:
        """Test hook: wait until no index file waits for compaction; False on timeout."""
    def min_offset(self, topic: str, queue_id: int) -> int: ...
    def max_offset(self, topic: str, queue_id: int) -> int:
        """The next queue offset to be assigned (the number of entries ever written)."""
    def topics(self) -> list[str]: ...
    def create_topic(self, topic: str, queues: int = 8) -> None:
        """Record a topic with ``queues`` queues in ``config/topics.json`` (grow only)."""
    def delete_topic(self, topic: str) -> None:
        """Forget a topic: its consume queues and config entry go; the log keeps its bytes."""
    def queue_count(self, topic: str) -> int:
        """Number of queues of a topic (``NotFoundError`` if the store does not know it)."""
    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Store a consumer group's next offset in ``config/consumerOffset.json``."""
    def committed_offset(self, group: str, topic: str, queue_id: int) -> int | None: ...
    def commitlog_min_offset(self) -> int: ...
    def commitlog_max_offset(self) -> int: ...
    def flushed_offset(self) -> int:
        """Commit-log offset below which every byte is known to be on disk."""
    def run_retention(self, now_ms: int | None = None) -> RetentionReport:
        """Delete what retention allows now, as an operator's request.

        Expired segments (not written for ``file_reserved_time_ms``) go whatever the
        hour; above ``disk_space_clean_forcibly_ratio`` the oldest go even unexpired.
        Oldest first, never the segment being written, at most ``delete_files_batch_max``
        per run. ``now_ms`` stands in for the clock. The background thread runs the same
        at the ``delete_when`` hours or above ``disk_max_used_space_ratio``.
        """
    def disk_usage(self) -> DiskUsage: ...
    def metrics(self) -> dict[str, Any]:
        """Counters since the store was opened (relaxed atomics bumped once per call):
        ``messages_put``, ``body_bytes_put``, ``messages_read``, ``body_bytes_read``;
        ``retention_runs``, ``segments_deleted`` and ``segments_evicted`` (local copies
        of uploaded segments);
        histograms ``put_latency_us``, ``pull_latency_us``, ``flush_latency_us`` and
        ``flush_bytes`` (bytes per flush: the group-commit size), each a dict of
        ``bounds`` (upper bounds), ``counts`` (per bucket, not cumulative, one more than
        the bounds: the last is above them) and ``sum``; and ``commitlog_min_offset``,
        ``commitlog_max_offset``, ``flushed_offset``, ``dispatch_lag_bytes``."""
    def queue_traffic(self) -> list[tuple[str, int, int, int, int, int]]:
        """Every queue's traffic since the store was opened, ordered by topic and queue:
        ``(topic, queue_id, messages_in, body_bytes_in, messages_out, body_bytes_out)``.
        Out counts what pulls handed out (a consumer may read ahead of what it commits).
        Relaxed atomics on the queue object the put and pull already hold; queues without
        traffic are listed at zero. Reset when the store is opened again."""
    def tier_status(self) -> dict[str, Any] | None:
        """The tier's state: ``url``, ``segments`` (``start_offset``, ``size`` and
        ``state``: active, pending, uploaded or evicted) and ``upload`` (``failing`` with
        the reason while uploads fail, ``failing_since_ms``, ``failed_attempts``,
        ``in_progress``, ``uploaded_segments``, ``uploaded_bytes``,
        ``upload_seconds``) and ``reads`` of evicted segments (``range_reads``,
        ``bytes_fetched``, ``cache_hits``, ``read_ahead_bytes``: fetched ahead of readers
        and not read yet, all readers together, ``read_ahead_peak_bytes``, its bound
        ``read_ahead_limit_bytes``, ``read_ahead_evicted_unread_bytes``,
        ``read_ahead_released_bytes``: fetched ahead and dropped from the cache once every
        reader of their queue had read past them, ``cache_held_bytes``: the receive
        buffers the read cache keeps alive now, ``queue_read_failure``: the last failed
        read of an evicted consume-queue file) and
        ``consume_queues``: the file form's queue files in the tier (``file``, its path
        under ``consumequeue/``, ``size``, ``state``: uploaded or evicted); None for a
        store without a tier."""
    def upload_to_tier(self) -> int:
        """Upload every sealed segment now (the uploader does it every second), ignoring
        the pause after a failure; returns how many were uploaded."""
    def _set_disk_usage(self, ratio: float | None) -> DiskUsage:
        """Test hook: make the store see ``ratio`` as its disk usage (``None`` to stop)."""
    def verify(self) -> VerifyReport:
        """Check every record's CRC and every consume-queue entry against the log."""
    def rebuild(self) -> int:
        """Delete the consume queues and the index and dispatch the whole log again.

        Returns the number of queue entries written.
        """
    def _inject_flush_failure(self, message: str) -> None:
        """Test hook: the next flush fails as a disk error would."""
    def flush(self) -> None:
        """Flush the commit log and consume queues to disk."""
    def close(self) -> None: ...
    def __enter__(self) -> Store: ...
    def __exit__(self, *args: object) -> None: ...
