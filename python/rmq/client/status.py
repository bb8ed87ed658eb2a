"""The one table that turns a broker's gRPC status into an exception (the client's half
of :mod:`rmq.broker.status`).

The classes live in :mod:`rmq.errors`; this picks one for a failed call
(:func:`from_rpc_error`) or for an error answered inside a response
(:func:`from_status`), and says which codes are worth another try (:data:`RETRYABLE`).
"""

from __future__ import annotations

import grpc

from rmq.errors import (
    AuthenticationError,
    BrokerDataLossError,
    BrokerError,
    BrokerInvalidArgumentError,
    BrokerNotFoundError,
    BrokerOutOfRangeError,
    BrokerResourceExhaustedError,
    BrokerUnavailableError,
    StaleRouteError,
)

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
