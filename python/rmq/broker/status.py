"""The one table that turns an exception into a gRPC status code.

Servicers catch every exception a handler raises and call :func:`status_for`; nothing
else in the broker chooses a status code. The most specific class in the exception's
MRO that the table names wins, so a subclass can get its own code later without
touching the servicers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import grpc

from rmq import errors
from rmq.errors import (
    QueueNotHostedError,
    QueueOutOfRangeError,
    UnauthenticatedError,
    UnimplementedError,
)

log = logging.getLogger(__name__)

# What the client raises for a broker's answer. The broker never raises these itself; one
# that reached a handler (a call to another broker) keeps the status it came with.
_CLIENT_ERRORS: tuple[type[errors.BrokerError], ...] = (
    errors.BrokerError,
    errors.BrokerInvalidArgumentError,
    errors.BrokerNotFoundError,
    errors.BrokerOutOfRangeError,
    errors.BrokerResourceExhaustedError,
    errors.BrokerDataLossError,
    errors.BrokerUnavailableError,
    errors.StaleRouteError,
    errors.AuthenticationError,
)

STATUS_BY_ERROR: Mapping[type[BaseException], grpc.StatusCode] = {
    errors.InvalidArgumentError: grpc.StatusCode.INVALID_ARGUMENT,
    errors.NotFoundError: grpc.StatusCode.NOT_FOUND,
    errors.OffsetOutOfRangeError: grpc.StatusCode.OUT_OF_RANGE,
    QueueOutOfRangeError: grpc.StatusCode.OUT_OF_RANGE,
    errors.DiskFullError: grpc.StatusCode.RESOURCE_EXHAUSTED,
    errors.CorruptRecordError: grpc.StatusCode.DATA_LOSS,
    errors.StoreClosedError: grpc.StatusCode.UNAVAILABLE,
    errors.FlushFailedError: grpc.StatusCode.UNAVAILABLE,
    errors.TierError: grpc.StatusCode.UNAVAILABLE,
    errors.TierObjectChangedError: grpc.StatusCode.DATA_LOSS,
    errors.StoreLockedError: grpc.StatusCode.FAILED_PRECONDITION,
    errors.ReadOnlyError: grpc.StatusCode.FAILED_PRECONDITION,
    QueueNotHostedError: grpc.StatusCode.FAILED_PRECONDITION,
    UnimplementedError: grpc.StatusCode.UNIMPLEMENTED,
    UnauthenticatedError: grpc.StatusCode.UNAUTHENTICATED,
    **{cls: cls.code for cls in _CLIENT_ERRORS},
    errors.RmqError: grpc.StatusCode.INTERNAL,
}


def status_for(error: BaseException) -> tuple[grpc.StatusCode, str]:
    """The status code and message a client receives for ``error``.

    Errors outside the table are bugs: they are logged with their traceback and reach
    the client as INTERNAL with the exception's type and text.
    """
    for cls in type(error).__mro__:
        code = STATUS_BY_ERROR.get(cls)
        if code is not None:
            return code, str(error) or cls.__name__
    log.error("unexpected error in a handler", exc_info=error)
    return grpc.StatusCode.INTERNAL, f"internal error: {type(error).__name__}: {error}"
