"""The one table that turns an exception into an ``apache.rocketmq.v2`` status.

The v2 protocol answers most failures inside the response (``Status`` with a ``Code``)
rather than as a gRPC status, and its clients act on the code (retry, give up, report).
Like :mod:`rmq.broker.status` for rmq's own API, the most specific class in the
exception's MRO that the table names wins.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from rmq import errors
from rmq.rocketmq.wire import v2

log = logging.getLogger(__name__)

CODE_BY_ERROR: Mapping[type[BaseException], int] = {
    errors.InvalidArgumentError: v2.BAD_REQUEST,
    errors.NotFoundError: v2.NOT_FOUND,
    errors.OffsetOutOfRangeError: v2.ILLEGAL_OFFSET,
    errors.QueueOutOfRangeError: v2.BAD_REQUEST,
    errors.QueueNotHostedError: v2.BAD_REQUEST,
    errors.DiskFullError: v2.INTERNAL_SERVER_ERROR,
    errors.CorruptRecordError: v2.MESSAGE_CORRUPTED,
    errors.FlushFailedError: v2.MASTER_PERSISTENCE_TIMEOUT,
    errors.StoreClosedError: v2.INTERNAL_SERVER_ERROR,
    errors.TierError: v2.INTERNAL_SERVER_ERROR,
    errors.TierObjectChangedError: v2.MESSAGE_CORRUPTED,
    errors.ReadOnlyError: v2.FORBIDDEN,
    errors.UnimplementedError: v2.NOT_IMPLEMENTED,
    errors.UnauthenticatedError: v2.UNAUTHORIZED,
    errors.BrokerError: v2.INTERNAL_SERVER_ERROR,
    errors.RmqError: v2.INTERNAL_SERVER_ERROR,
}


def status(code: int = v2.OK, message: str = "OK") -> v2.Status:
    return v2.Status(code=code, message=message)


def status_for(error: BaseException) -> v2.Status:
    """The status a client receives for ``error``; errors outside the table are bugs,
    logged with their traceback."""
    if isinstance(error, errors.ProtocolError):
        return status(v2.Code.Value(error.code), str(error))
    for cls in type(error).__mro__:
        code = CODE_BY_ERROR.get(cls)
        if code is not None:
            return status(code, str(error) or cls.__name__)
    log.error("unexpected error in a RocketMQ v2 handler", exc_info=error)
    return status(v2.INTERNAL_SERVER_ERROR, f"internal error: {type(error).__name__}: {error}")
