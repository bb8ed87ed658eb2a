"""Errors the client raises for a broker's answer.

Each remote error is both a :class:`BrokerError` (with the gRPC ``code`` and the
broker's ``details``) and, where one fits, the ``rmq.errors`` class that the same
failure raises in an embedded store, so ``except rmq.errors.InvalidArgumentError``
catches bad input whether the store is local or behind a broker.
"""

from __future__ import annotations

import grpc

from rmq import errors


class BrokerError(errors.RmqError):
    """The broker answered a call with an error status."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def details(self) -> str:
        return str(self)


class BrokerInvalidArgumentError(BrokerError, errors.InvalidArgumentError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class BrokerNotFoundError(BrokerError, errors.NotFoundError):
    code = grpc.StatusCode.NOT_FOUND


class BrokerOutOfRangeError(BrokerError, errors.OffsetOutOfRangeError):
    code = grpc.StatusCode.OUT_OF_RANGE


class BrokerResourceExhaustedError(BrokerError):
    """The broker refused for lack of space (disk full) or a request was too large."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class BrokerDataLossError(BrokerError, errors.CorruptRecordError):
    """A shard found damaged data; a consumer sets the ``queue_id`` and ``queue_offset``
    of the record it could not read."""

    code = grpc.StatusCode.DATA_LOSS
    queue_id: int | None = None


class BrokerUnavailableError(BrokerError):
    """The broker (or one shard) could not be reached, also after retries."""

    code = grpc.StatusCode.UNAVAILABLE


class StaleRouteError(BrokerError):
    """A shard no longer serves the queue (FAILED_PRECONDITION); the route is refreshed."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class AuthenticationError(BrokerError):
    code = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE: dict[grpc.StatusCode, type[BrokerError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: BrokerInvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: BrokerNotFoundError,
    grpc.StatusCode.OUT_OF_RANGE: BrokerOutOfRangeError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: BrokerResourceExhaustedError,
    grpc.StatusCode.DATA_LOSS: BrokerDataLossError,
    grpc.StatusCode.UNAVAILABLE: BrokerUnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: BrokerUnavailableError,
    grpc.StatusCode.FAILED_PRECONDITION: StaleRouteError,
    grpc.StatusCode.UNAUTHENTICATED: AuthenticationError,
    grpc.StatusCode.PERMISSION_DENIED: AuthenticationError,
}

# Worth another try after a pause (and a fresh route): the shard may be restarting.
RETRYABLE = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.FAILED_PRECONDITION,
    }
)


def from_rpc_error(error: grpc.RpcError, what: str = "") -> BrokerError:
    """The client-side exception for a failed call."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else None) or str(code)
    cls = _BY_CODE.get(code, BrokerError)
    return cls(f"{what}: {details}" if what else details, code)


_CODES_BY_VALUE = {code.value[0]: code for code in grpc.StatusCode}


def from_status(code_value: int, message: str, what: str = "") -> BrokerError:
    """The client-side exception for an error answered inside a response (``rmq.v1.Error``:
    one batch of SendStream or SendBatches), as if the call had failed with it."""
    code = _CODES_BY_VALUE.get(code_value, grpc.StatusCode.UNKNOWN)
    cls = _BY_CODE.get(code, BrokerError)
    return cls(f"{what}: {message}" if what else message, code)
