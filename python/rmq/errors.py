"""The whole exception hierarchy of rmq, in one place.

The native engine raises these classes (the binding looks them up here by name), so a
caller can tell "corrupt segment" apart from "disk full" with ``except``. Each class
carries the structured fields of its engine error as attributes.
"""

from __future__ import annotations


class RmqError(Exception):
    """Root of every error rmq raises on purpose."""


class InvalidArgumentError(RmqError, ValueError):
    """An argument is malformed or out of bounds; nothing was written.

    ``argument`` names the offending parameter.
    """

    def __init__(self, message: str, argument: str = "") -> None:
        super().__init__(message)
        self.argument = argument


class CorruptRecordError(RmqError):
    """A record (or index/queue entry) failed validation: bad magic, size or CRC.

    ``file`` and ``offset`` locate the damaged bytes; a record read through a queue also
    has the ``queue_offset`` that points at it (``None`` otherwise).
    """

    def __init__(
        self,
        message: str,
        file: str = "",
        offset: int = -1,
        reason: str = "",
        queue_offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.file = file
        self.offset = offset
        self.reason = reason
        self.queue_offset = queue_offset


class OffsetOutOfRangeError(RmqError, IndexError):
    """A queue or commit-log offset lies outside what the store holds."""

    def __init__(
        self, message: str, offset: int = -1, min_offset: int = -1, max_offset: int = -1
    ) -> None:
        super().__init__(message)
        self.offset = offset
        self.min_offset = min_offset
        self.max_offset = max_offset


class NotFoundError(RmqError, LookupError):
    """The thing asked for (topic, message, msgId) does not exist."""


class StoreClosedError(RmqError):
    """The store was closed; open it again to use it."""


class StoreLockedError(RmqError):
    """Another process holds the store's ``lock`` file."""


class DiskFullError(RmqError):
    """Writes are refused because disk usage passed the warning threshold."""

    def __init__(
        self, message: str, path: str = "", usage: float = 0.0, threshold: float = 0.0
    ) -> None:
        super().__init__(message)
        self.path = path
        self.usage = usage
        self.threshold = threshold


class FlushFailedError(RmqError):
    """A flush to disk failed; the store refuses writes until it is reopened."""


class ReadOnlyError(RmqError):
    """A write was attempted on a store opened with ``read_only=True``."""


__all__ = [
    "CorruptRecordError",
    "DiskFullError",
    "FlushFailedError",
    "InvalidArgumentError",
    "NotFoundError",
    "OffsetOutOfRangeError",
    "ReadOnlyError",
    "RmqError",
    "StoreClosedError",
    "StoreLockedError",
]
