"""Messages as the store takes and gives them, where ``put`` stored them, and the
engine's name and checksum rules."""

from collections.abc import Mapping, Sequence
from typing import final, overload

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
