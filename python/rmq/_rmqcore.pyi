"""Type stubs and user-facing docs of the native engine ``rmq._rmqcore``.

Checked against the compiled module by ``mypy.stubtest`` in the test suite.
"""

import logging
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from os import PathLike
from typing import Any, ClassVar, final, overload

from typing_extensions import disjoint_base

from rmq.errors import BrokerError, CorruptRecordError

__all__ = [
    "RETRYABLE_STATUS_CODES",
    "BodyBatch",
    "ColumnBuffer",
    "DecodedBatch",
    "DiskUsage",
    "EncodedPull",
    "LeaseBook",
    "Message",
    "PendingCall",
    "ProducerCore",
    "PullResult",
    "PulledColumns",
    "PutResult",
    "PutResultIterator",
    "PutResults",
    "ReceivedMessage",
    "RecoveryReport",
    "RetentionReport",
    "SegmentDecoder",
    "SendFuture",
    "SendResult",
    "ShardServer",
    "Store",
    "TierReader",
    "Transport",
    "VerifyReport",
    "__version__",
    "body_crc",
    "broker_error",
    "decode_pull_columns",
    "decode_pull_response",
    "decode_receipt",
    "java_string_hash",
    "native_rocketmq_status_codes",
    "native_rocketmq_system_properties",
    "native_status_codes",
    "validate_group",
    "validate_topic",
]

__version__: str
RETRYABLE_STATUS_CODES: list[int]
"""The gRPC status codes (as numbers) worth another try after a pause and a fresh route."""

@final
class Message:
    """One stored message, or a message to store (``put_batch``).

    Build one with ``Message(body, tags=..., keys=..., properties=..., flag=...,
    born_timestamp=...)`` (milliseconds; unset means the time of the put);
    the store fills in the remaining fields when it reads a message back.
    """

    def __new__(
        cls,
        body: bytes,
        *,
        tags: str | None = None,
        keys: Sequence[str] | None = None,
        properties: Mapping[str, str] | None = None,
        flag: int = 0,
        born_timestamp: int | None = None,
    ) -> Message: ...
    @property
    def topic(self) -> str: ...
    @property
    def queue_id(self) -> int: ...
    @property
    def queue_offset(self) -> int: ...
    @property
    def commitlog_offset(self) -> int: ...
    @property
    def store_size(self) -> int:
        """Length of the whole record in the commit log, in bytes."""
    @property
    def body(self) -> bytes: ...
    @property
    def tags(self) -> str | None: ...
    @property
    def keys(self) -> list[str]: ...
    @property
    def properties(self) -> dict[str, str]:
        """User properties, without the ``TAGS`` and ``KEYS`` entries."""
    @property
    def born_timestamp(self) -> int: ...
    @property
    def store_timestamp(self) -> int: ...
    @property
    def born_host(self) -> str: ...
    @property
    def store_host(self) -> str: ...
    @property
    def msg_id(self) -> str: ...
    @property
    def flag(self) -> int: ...
    @property
    def sys_flag(self) -> int: ...
    @property
    def reconsume_times(self) -> int: ...

@final
class PutResult:
    """Where ``put`` stored a message."""

    @property
    def msg_id(self) -> str:
        """RocketMQ's offset message id: store host, port and commit-log offset in hex."""
    @property
    def commitlog_offset(self) -> int: ...
    @property
    def queue_offset(self) -> int: ...
    @property
    def store_timestamp(self) -> int: ...
    @property
    def store_size(self) -> int: ...

@final
class PutResults:
    """Where ``Store.put_batch`` stored each message, in the batch's order: a read-only
    sequence whose ``PutResult``s are made when indexed or iterated, not all up front."""

    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: int, /) -> PutResult:
        """Result ``index`` (negative counts from the end); ``IndexError`` past the end."""
    @overload
    def __getitem__(self, index: slice, /) -> list[PutResult]: ...
    def __iter__(self) -> PutResultIterator: ...

@final
class PutResultIterator:
    """Iterator over a ``PutResults``."""

    def __iter__(self) -> PutResultIterator: ...
    def __next__(self) -> PutResult: ...

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
    """The answer to ``Store.read_bodies``: the bodies alone, one after the other in one
    buffer, in Apache Arrow's ``large_binary`` layout (``offsets``, ``data``).

    Iterating gives each body as ``bytes`` (one copy out of ``data``, no ``Message``);
    ``batch[i]`` gives one. ``pyarrow.Array.from_buffers(pa.large_binary(),
    len(batch), [None, pa.py_buffer(batch.offsets), pa.py_buffer(batch.data)])`` wraps the
    bodies as an Arrow array without a copy.
    """

    def __len__(self) -> int:
        """How many bodies the batch holds."""
    def __getitem__(self, index: int, /) -> bytes:
        """Body ``index`` (negative counts from the end); ``IndexError`` past the end."""
    def __iter__(self) -> Iterator[bytes]: ...
    @property
    def data(self) -> ColumnBuffer:
        """Every body, one after the other."""
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
class SendResult:
    """Where the broker stored one message a producer sent (``rmq.client.SendResult``)."""

    def __new__(
        cls,
        topic: str,
        queue_id: int,
        queue_offset: int,
        msg_id: str,
        commitlog_offset: int,
        store_timestamp: int,
    ) -> SendResult: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    @property
    def topic(self) -> str: ...
    @property
    def queue_id(self) -> int: ...
    @property
    def queue_offset(self) -> int: ...
    @property
    def msg_id(self) -> str: ...
    @property
    def commitlog_offset(self) -> int: ...
    @property
    def store_timestamp(self) -> int: ...

@final
class Transport:
    """A client's unary calls over its own HTTP/2 connections (crates/rmqnet/src/client/
    calls.rs): one connection per endpoint, TLS and the token on every call. A failed
    call raises the client table's ``BrokerError`` subclass (``broker_error``)."""

    def __new__(
        cls,
        *,
        timeout: float,
        metadata: Sequence[tuple[str, str]],
        tls: bool = False,
        root_cert: bytes | None = None,
        server_name: str | None = None,
    ) -> Transport: ...
    def call(
        self,
        endpoint: str,
        method: str,
        request: bytes,
        *,
        timeout: float | None = None,
        what: str = "",
    ) -> bytes:
        """Call ``method`` ("/rmq.v1.Route/GetRoute") on ``endpoint`` and wait for the
        answer's bytes; the GIL is released while waiting. ``what`` prefixes an error's
        message."""
    def start(
        self,
        endpoint: str,
        method: str,
        request: bytes,
        callback: Callable[[PendingCall], object],
        *,
        timeout: float | None = None,
    ) -> PendingCall:
        """Start a call; ``callback(pending_call)`` runs on the transport's completion
        thread once it ends, unless it was cancelled first."""
    def close(self) -> None:
        """Close the connections; later calls raise ``StoreClosedError``."""

@final
class PendingCall:
    """A call started by ``Transport.start``."""

    def done(self) -> bool: ...
    def result(self) -> bytes:
        """The answer's bytes, or the client table's exception for the call's status."""
    @property
    def error(self) -> tuple[int, str] | None:
        """(status code, message) of a failed call; None when answered or not ended."""
    @property
    def resume_offset(self) -> int | None:
        """For a failed pull that met a lost tier segment: the queue offset past it."""
    def cancel(self) -> None:
        """Drop the call: its callback will not run."""

@final
class SendFuture:
    """The pending result of one ``Producer.send``, resolved with its batch. The methods
    are those of ``concurrent.futures.Future`` that make sense for a send (a queued send
    cannot be cancelled); ``concurrent.futures.wait`` and ``as_completed`` need real
    ``Future`` objects and do not accept these."""

    def done(self) -> bool: ...
    def running(self) -> bool: ...
    def cancel(self) -> bool:
        """A queued send cannot be taken back: always False."""
    def cancelled(self) -> bool: ...
    def result(self, timeout: float | None = None) -> SendResult:
        """Where the broker stored the message; raises what the send failed with, or
        ``TimeoutError`` if ``timeout`` seconds pass first."""
    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The exception the send failed with, or None once it succeeded."""
    def add_done_callback(self, callback: Callable[[SendFuture], object]) -> None:
        """Call ``callback(future)`` once the send has a result (at once if it has); a
        callback that raises is logged and harms no other."""

@final
class ReceivedMessage:
    """A message read from the broker, with the fields of ``rmq.Message``.

    Read from the bytes of the broker's answer: strings and the body are made when asked
    for. Read-only; equal when every field is equal."""

    @staticmethod
    def from_proto(message: object) -> ReceivedMessage:
        """The message a generated ``rmq.v1.StoredMessage`` holds."""
    @property
    def topic(self) -> str: ...
    @property
    def queue_id(self) -> int: ...
    @property
    def queue_offset(self) -> int: ...
    @property
    def commitlog_offset(self) -> int: ...
    @property
    def store_size(self) -> int: ...
    @property
    def body(self) -> bytes: ...
    @property
    def tags(self) -> str | None: ...
    @property
    def keys(self) -> tuple[str, ...]: ...
    @property
    def properties(self) -> dict[str, str]: ...
    @property
    def born_timestamp(self) -> int: ...
    @property
    def store_timestamp(self) -> int: ...
    @property
    def born_host(self) -> str: ...
    @property
    def store_host(self) -> str: ...
    @property
    def msg_id(self) -> str: ...
    @property
    def flag(self) -> int: ...
    @property
    def sys_flag(self) -> int: ...
    @property
    def reconsume_times(self) -> int: ...
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

def decode_pull_response(raw: bytes) -> tuple[list[ReceivedMessage], int, int, int]:
    """The messages of an encoded ``rmq.v1.PullResponse``, and its ``next_offset``,
    ``min_offset`` and ``max_offset``."""

@disjoint_base
class ProducerCore:
    """The producer's core (crates/rmqnet/src/client/): queue choice, batching, the calls
    to the shards and their retries; ``rmq.client.Producer`` extends it with a thread
    that looks up the routes it asks for (``_routes_wanted``) and pushes them in
    (``_set_route``, ``_route_failed``)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> ProducerCore: ...
    def _configure(
        self,
        *,
        batch_max_messages: int,
        batch_max_bytes: int,
        linger: float,
        max_buffered_bytes: int,
        max_buffered_messages: int,
        retry_timeout: float = 30.0,
        callback_log: logging.Logger | None = None,
    ) -> None: ...
    def send(
        self,
        topic: str,
        body: bytes,
        *,
        tags: str | None = None,
        keys: str | Sequence[str] | None = None,
        properties: Mapping[str, str] | None = None,
        sharding_key: str | bytes | None = None,
        queue_id: int | None = None,
    ) -> SendFuture:
        """Queue one message; the future resolves once the broker stored it.

        The queue is ``queue_id`` if given, else chosen by ``sharding_key`` (the same key
        always goes to the same queue, so its messages stay in order), else round-robin.
        Blocks while ``max_buffered_bytes`` are waiting to be sent."""
    def flush(self, timeout: float | None = None) -> bool:
        """Send everything queued now and wait until each has a result; False on
        timeout."""
    @property
    def closed(self) -> bool: ...
    @property
    def pending(self) -> int:
        """Messages sent whose result is not known yet."""
    def _close(self) -> None: ...
    def _begin_flush(self) -> None: ...
    def _end_flush(self) -> None: ...
    def _open_batch(self, topic: str, queue_id: int) -> bytes | None:
        """The ``rmq.v1.SendRequest`` the queue's open batch would send; None without
        one."""
    def _start(
        self,
        *,
        timeout: float,
        metadata: list[tuple[str, str]],
        tls: bool = False,
        root_cert: bytes | None = None,
        server_name: str | None = None,
    ) -> None: ...
    def _stop(self, timeout: float | None = None) -> None: ...
    @property
    def _calls_made(self) -> int:
        """How many SendBatches calls the running sender made."""
    def _routes_wanted(self) -> list[str] | None: ...
    def _set_route(self, topic: str, endpoints: list[str]) -> None: ...
    def _route_failed(self, topic: str, error: BaseException, retryable: bool) -> None: ...

@final
class RecoveryReport:
    """What opening the store found and did (``Store.recovery_report``)."""

    @property
    def mode(self) -> str:
        """``"normal"`` (clean shutdown), ``"abnormal"`` (``abort`` found) or ``"read_only"``."""
    @property
    def start_reason(self) -> str: ...
    @property
    def scan_start_offset(self) -> int: ...
    @property
    def valid_end_offset(self) -> int:
        """One past the last valid record: the log's end after recovery."""
    @property
    def records_scanned(self) -> int: ...
    @property
    def bytes_truncated(self) -> int: ...
    @property
    def stop_reason(self) -> str | None: ...
    @property
    def consume_queue_entries_removed(self) -> int: ...
    @property
    def records_redispatched(self) -> int: ...
    @property
    def records_not_dispatched(self) -> int: ...
    @property
    def duration_ms(self) -> float: ...

@final
class VerifyReport:
    """``Store.verify()``: consume queues compared with a rebuild from the valid log."""

    @property
    def clean(self) -> bool: ...
    @property
    def records_checked(self) -> int: ...
    @property
    def entries_checked(self) -> int: ...
    @property
    def difference_count(self) -> int: ...
    @property
    def differences(self) -> list[tuple[str, str]]:
        """``(kind, detail)`` pairs, at most 1000; ``difference_count`` counts all."""

@final
class DiskUsage:
    """How full the filesystem holding the store is."""

    @property
    def path(self) -> str: ...
    @property
    def total_bytes(self) -> int: ...
    @property
    def used_bytes(self) -> int: ...
    @property
    def ratio(self) -> float: ...
    @property
    def overridden(self) -> bool:
        """True when the figure comes from the ``_set_disk_usage`` test hook."""

@final
class RetentionReport:
    """What a retention run deleted and kept, each with its reason."""

    @property
    def deleted(self) -> list[tuple[str, int, str]]:
        """``(segment path, start offset, reason)``, oldest first."""
    @property
    def evicted(self) -> list[tuple[str, int, str]]:
        """With a tier: uploaded segments whose local copy went (their messages stay)."""
    @property
    def kept(self) -> list[tuple[str, int, str]]: ...
    @property
    def commitlog_min_offset(self) -> int: ...
    @property
    def consume_queue_files_deleted(self) -> int: ...
    @property
    def index_files_deleted(self) -> int: ...
    @property
    def disk_usage(self) -> DiskUsage: ...

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
        warm_ahead_bytes: int = 8388608,
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
        """``pull`` for bulk readers: only the bodies, copied into one buffer with no
        Python object per message (``BodyBatch``). The same messages as ``pull`` with the
        same arguments, each record's CRCs checked as ``get`` checks them, and the same
        errors."""
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
        ``queue_read_failure``: the last failed read of an evicted consume-queue file) and
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

def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` over the UTF-16 code units of ``text``."""

def body_crc(body: bytes) -> int:
    """RocketMQ's body CRC: CRC-32 (IEEE) masked with 0x7FFFFFFF."""

def validate_topic(topic: str) -> None:
    """Raise ``InvalidArgumentError`` unless ``topic`` is a valid topic name: 1 to 255
    bytes of letters, digits and ``%|_-``."""

def validate_group(group: str) -> None:
    """Raise ``InvalidArgumentError`` unless ``group`` is a valid consumer group name (the
    topic rules)."""

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

@final
class ShardServer:
    """A shard process's native data plane: the engine's own gRPC server on the shard's
    port. It answers ``Send``, ``SendBatches``, ``Pull`` and RocketMQ 5's ``SendMessage``,
    ``ReceiveMessage``, ``AckMessage`` and ``ChangeInvisibleDuration`` (the last three with
    ``leases``), and forwards every other call to the process's Python server on
    ``internal_port`` (loopback)."""

    def __new__(
        cls,
        host: str,
        port: int,
        internal_port: int,
        stores: Sequence[tuple[int, Store]],
        limits: Mapping[str, int],
        *,
        token: str | None = None,
        rocketmq: bool = False,
        leases: Sequence[tuple[int, LeaseBook]] | None = None,
        max_delivery_attempts: int = 16,
        tls_cert: bytes | None = None,
        tls_key: bytes | None = None,
    ) -> ShardServer:
        """``rocketmq``: the process serves RocketMQ 5 clients, so the data plane answers
        their ``SendMessage`` too; ``leases``: each store's lease book, shared with the
        Python path, on which it answers their receives and acks as well (a message out of
        ``max_delivery_attempts`` is left to the Python path). ``tls_cert`` and ``tls_key``
        (PEM, both or neither): serve TLS on ``port``; ``ValueError`` if they are not a
        certificate chain and its key."""
    @property
    def port(self) -> int: ...
    def host_topic(self, topic: str, shards: Sequence[int]) -> None:
        """Queue ``i`` of ``topic`` lives in shard directory ``shards[i]``."""
    def drop_topic(self, topic: str) -> None: ...
    def notify(self, topic: str, queue_id: int) -> None:
        """Wake the pulls waiting on this queue (a send through the Python path)."""
    def version(self, topic: str, queue_id: int) -> int: ...
    def wait(self, topic: str, queue_id: int, version: int, timeout: float) -> bool:
        """Block until the queue's version changes or ``timeout`` seconds pass."""
    def answer_send(self, raw: bytes, born_host: str | None = None) -> bytes:
        """Store one encoded ``rmq.v1.SendRequest`` with the data plane's send function
        (the one ``Send`` and ``SendBatches`` use) and return the encoded
        ``SendStreamResponse``: the result, or the refusal's status. Raises
        ``InvalidArgumentError`` when ``raw`` is not a ``SendRequest``."""
    def request_counts(self) -> list[tuple[str, int, int]]:
        """``(method, answered, declined)`` for each gRPC method the data plane may
        answer: requests it answered itself, and requests it passed to Python."""
    def close(self) -> None: ...

@final
class LeaseBook:
    """The RocketMQ v2 lease book of one store directory (``config/rocketmqLeases.json``):
    which messages each consumer group holds invisible, until when, and what it acked.
    One object per store serves both the Python path and the native data plane."""

    def __new__(cls, store: Store) -> LeaseBook: ...
    def claim(
        self,
        group: str,
        topic: str,
        queue_id: int,
        room: int,
        tags: Sequence[str] | None,
        invisible_ms: int,
        max_attempts: int,
    ) -> tuple[list[bytes], list[tuple[int, int, Message]]]:
        """Up to ``room`` messages of the queue for ``group``, each an encoded
        ``apache.rocketmq.v2.Message`` with its receipt handle; and ``(offset, attempt,
        message)`` of each message due again with no attempt left (left leased: the
        caller dead-letters and settles it)."""
    def ack(self, group: str, topic: str, queue_id: int, offset: int, attempt: int) -> bool:
        """Ack that delivery; False when it is not the one out."""
    def extend(
        self, group: str, topic: str, queue_id: int, offset: int, attempt: int, invisible_ms: int
    ) -> str | None:
        """Keep that delivery invisible ``invisible_ms`` from now: its new receipt handle,
        None when it is not the one out."""
    def settle(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Done with ``offset`` (moved to the dead-letter topic)."""
    def save(self) -> bool:
        """Commit each group's acked edge as its offset; write the book if it changed."""

def decode_receipt(handle: str) -> tuple[str, int, int, int, int] | None:
    """``(topic, queue_id, offset, attempt, deadline_ms)`` of a RocketMQ v2 receipt handle,
    None when it is not one of this broker's."""

def native_rocketmq_status_codes() -> dict[str, int]:
    """The native data plane's ``apache.rocketmq.v2`` code for each ``rmq.errors``
    engine class."""

def native_rocketmq_system_properties() -> list[str]:
    """The property names both v2 paths refuse as user properties."""

def broker_error(code: int, message: str, resume_offset: int | None = None) -> BrokerError:
    """The client's exception for a broker's gRPC status ``code`` (as ``grpc.StatusCode``
    numbers it) and ``message``: the one table of the client side. ``resume_offset`` (a
    pull that met a lost tier segment: the queue offset past it) becomes the exception's
    attribute."""

def native_status_codes() -> dict[str, int]:
    """The native data plane's status code for each ``rmq.errors`` engine class."""

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
