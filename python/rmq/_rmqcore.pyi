"""Type stubs and user-facing docs of the native engine ``rmq._rmqcore``.

Checked against the compiled module by ``mypy.stubtest`` in the test suite.
"""

from collections.abc import Mapping, Sequence
from os import PathLike
from typing import final

__all__ = [
    "Message",
    "PullResult",
    "PutResult",
    "RecoveryReport",
    "Store",
    "VerifyReport",
    "__version__",
    "body_crc",
    "java_string_hash",
]

__version__: str

@final
class Message:
    """One stored message, or a message to store (``put_batch``).

    Build one with ``Message(body, tags=..., keys=..., properties=..., flag=...)``;
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
    ) -> Store:
        """Open or create the store at ``path`` and recover it.

        Segment sizes of an existing store are taken from its files. ``read_only=True``
        changes nothing on disk and takes no lock (safe beside a running broker).
        ``flush_disk_type="SYNC_FLUSH"`` makes ``put`` return only once durable.
        """
    @property
    def path(self) -> str: ...
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
        born_host: str | None = None,
    ) -> list[PutResult]:
        """Append messages to one queue under one lock; all or none are written."""
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
    def get_at(self, commitlog_offset: int) -> Message:
        """The message whose record starts at ``commitlog_offset``."""
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
    def verify(self) -> VerifyReport:
        """Check every record's CRC and every consume-queue entry against the log."""
    def rebuild_consume_queues(self) -> int:
        """Delete the consume queues and dispatch the whole log again; returns entries."""
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
