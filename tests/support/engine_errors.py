"""The ``rmq.errors`` classes the engine raises: the rows every engine-error status table
(the broker's, the native data plane's v1 and RocketMQ v2 tables) must cover."""

from __future__ import annotations

from rmq import errors

ENGINE_ERRORS: list[type[errors.RmqError]] = [
    errors.InvalidArgumentError,
    errors.NotFoundError,
    errors.OffsetOutOfRangeError,
    errors.CorruptRecordError,
    errors.DiskFullError,
    errors.StoreClosedError,
    errors.FlushFailedError,
    errors.TierError,
    errors.TierObjectChangedError,
    errors.StoreLockedError,
    errors.ReadOnlyError,
]
