"""Type stubs and user-facing docs of the native engine ``rmq._rmqcore``.

Checked against the compiled module by ``mypy.stubtest`` in the test suite.
"""

from collections.abc import Mapping, Sequence
from os import PathLike
from typing import final

__version__: str

@final
class Message:
    """One stored message, or a message to store (``put_batch``).

    Build one with ``Message(body, tags=..., keys=..., properties=..., flag=...)``;
    the store fills in the remaining fields when it reads a message back.
    """

    def __init__(
        self,
        body: bytes,
        *,
        tags: str | None = None,
        keys: Sequence[str] | None = None,
        properties: Mapping[str, str] | None = None,
        flag: int = 0,
    ) -> None: ...
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
class Store:
    """A store directory in RocketMQ's layout, opened for reading and writing.

    Every method that does I/O releases the GIL. Use it as a context manager or call
    ``close()``.
    """

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        commitlog_segment_size: int = 1073741824,
        consume_queue_entries_per_file: int = 300000,
        store_host: str = "127.0.0.1:10911",
        max_message_size: int = 4194304,
        default_queue_count: int = 8,
        read_only: bool = False,
    ) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    @property
    def read_only(self) -> bool: ...
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
    def flush(self) -> None:
        """Flush the commit log and consume queues to disk."""
    def close(self) -> None: ...
    def __enter__(self) -> Store: ...
    def __exit__(self, *args: object) -> None: ...

def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` over the UTF-16 code units of ``text``."""

def body_crc(body: bytes) -> int:
    """RocketMQ's body CRC: CRC-32 (IEEE) masked with 0x7FFFFFFF."""
