"""The whole exception hierarchy of rmq, in one place.

::

    RmqError
    ├── what the engine raises (an embedded store, or a shard process)
    │   InvalidArgumentError, CorruptRecordError, OffsetOutOfRangeError, NotFoundError,
    │   StoreClosedError, StoreLockedError, DiskFullError, FlushFailedError, ReadOnlyError,
    │   TierError, TierObjectChangedError (also a CorruptRecordError)
    ├── what only the broker raises (each becomes a gRPC status, see rmq.broker.status)
    │   QueueNotHostedError, QueueOutOfRangeError, UnimplementedError, UnauthenticatedError,
    │   ProtocolError (a RocketMQ v2 request refused with that protocol's own code)
    └── BrokerError: what the client raises for a broker's error answer (rmq.client.status
        picks the class from the gRPC status code)
        BrokerInvalidArgumentError, BrokerNotFoundError, BrokerOutOfRangeError,
        BrokerResourceExhaustedError, BrokerDataLossError, BrokerUnavailableError,
        StaleRouteError, AuthenticationError

The native engine raises these classes (the binding looks them up here by name), so a
caller can tell "corrupt segment" apart from "disk full" with ``except``. Each class
carries the structured fields of its engine error as attributes.

A client-side error is both a :class:`BrokerError` (with the gRPC ``code`` and the
broker's ``details``) and, where one fits, the engine class that the same failure raises
in an embedded store, so ``except rmq.errors.InvalidArgumentError`` catches bad input
whether the store is local or behind a broker.

Importing this module does not load grpc (an embedded store never needs it): a
``BrokerError`` class names its status code, which becomes a ``grpc.StatusCode`` when
read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import grpc


class RmqError(Exception):
    """Root of every error rmq raises on purpose."""


# ---- raised by the engine (embedded store or shard process) ----


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
    has the ``queue_offset`` that points at it (``None`` otherwise). ``resume_offset``,
    when not ``None``, is the first queue offset past the lost data (a whole commit-log
    segment or consume-queue file gone from the tier): a reader that accepts the loss goes
    on there, not at ``queue_offset + 1``.
    """

    resume_offset: int | None = None

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


class TierError(RmqError):
    """The object-storage tier refused a request or could not be reached (wrong
    credentials, a missing bucket, a server that does not answer); ``object`` names the
    bucket or object; ``unreachable`` is true when the server could not be reached or did
    not answer in time, rather than answering with a refusal."""

    def __init__(
        self, message: str, object: str = "", reason: str = "", unreachable: bool = False
    ) -> None:
        super().__init__(message)
        self.object = object
        self.reason = reason
        self.unreachable = unreachable


class TierObjectChangedError(CorruptRecordError, TierError):
    """An object in the tier is no longer the one uploaded: its size or recorded CRC32
    differs from the store's record, or it is gone from the bucket. Its bytes are never
    served; reads work again once the object is restored. Data loss like a damaged
    record (the broker answers DATA_LOSS), and a tier error; ``file`` and ``object`` both
    name the object, ``offset`` the position read."""

    def __init__(
        self,
        message: str,
        object: str = "",
        offset: int = -1,
        reason: str = "",
        queue_offset: int | None = None,
        resume_offset: int | None = None,
    ) -> None:
        CorruptRecordError.__init__(self, message, object, offset, reason, queue_offset)
        self.resume_offset = resume_offset
        self.object = object
        self.unreachable = False


# ---- raised only by the broker ----


class QueueNotHostedError(RmqError):
    """The queue exists but another shard process serves it: the client's route is stale."""


class QueueOutOfRangeError(RmqError):
    """The queue id is not one of the topic's queues."""


class UnimplementedError(RmqError):
    """The engine this shard runs does not offer the operation yet."""


class UnauthenticatedError(RmqError):
    """The request lacks the broker's token, or carries a wrong one."""


class ProtocolError(RmqError):
    """An ``apache.rocketmq.v2`` request that rmq refuses with one of that protocol's own
    status codes; ``code`` is the code's name (``"INVALID_RECEIPT_HANDLE"``, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


# ---- raised by the client for a broker's answer ----


class _StatusCode:
    """A ``BrokerError`` class's ``code``: the ``grpc.StatusCode`` named ``name``, looked
    up (and grpc imported) when read, so that this module does not load grpc."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> grpc.StatusCode:
        import grpc

        return grpc.StatusCode[self.name]


class BrokerError(RmqError):
    """The broker answered a call with an error status.

    ``code`` is the gRPC status code (each subclass has its own; an instance made with
    ``code`` keeps that one) and ``details`` the broker's message.
    """

    code = _StatusCode("UNKNOWN")

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def details(self) -> str:
        return str(self)


class BrokerInvalidArgumentError(BrokerError, InvalidArgumentError):
    """The broker refused a malformed or out-of-bounds argument (INVALID_ARGUMENT)."""

    code = _StatusCode("INVALID_ARGUMENT")


class BrokerNotFoundError(BrokerError, NotFoundError):
    """The topic, message or msgId does not exist on the broker (NOT_FOUND)."""

    code = _StatusCode("NOT_FOUND")


class BrokerOutOfRangeError(BrokerError, OffsetOutOfRangeError):
    """An offset or queue id lies outside what the broker holds (OUT_OF_RANGE)."""

    code = _StatusCode("OUT_OF_RANGE")


class BrokerResourceExhaustedError(BrokerError):
    """The broker refused for lack of space (disk full) or a request was too large."""

    code = _StatusCode("RESOURCE_EXHAUSTED")


class BrokerDataLossError(BrokerError, CorruptRecordError):
    """A shard found damaged data; a consumer sets the ``queue_id`` and ``queue_offset``
    of the record it could not read."""

    code = _StatusCode("DATA_LOSS")
    queue_id: int | None = None


class BrokerUnavailableError(BrokerError):
    """The broker (or one shard) could not be reached, also after retries."""

    code = _StatusCode("UNAVAILABLE")


class StaleRouteError(BrokerError):
    """A shard no longer serves the queue (FAILED_PRECONDITION); the route is refreshed."""

    code = _StatusCode("FAILED_PRECONDITION")


class AuthenticationError(BrokerError):
    """The broker refused the call's token (UNAUTHENTICATED or PERMISSION_DENIED)."""

    code = _StatusCode("UNAUTHENTICATED")


__all__ = [
    "AuthenticationError",
    "BrokerDataLossError",
    "BrokerError",
    "BrokerInvalidArgumentError",
    "BrokerNotFoundError",
    "BrokerOutOfRangeError",
    "BrokerResourceExhaustedError",
    "BrokerUnavailableError",
    "CorruptRecordError",
    "DiskFullError",
    "FlushFailedError",
    "InvalidArgumentError",
    "NotFoundError",
    "OffsetOutOfRangeError",
    "QueueNotHostedError",
    "QueueOutOfRangeError",
    "ReadOnlyError",
    "RmqError",
    "StaleRouteError",
    "StoreClosedError",
    "StoreLockedError",
    "TierError",
    "TierObjectChangedError",
    "UnauthenticatedError",
    "UnimplementedError",
]
