"""A broker's gRPC status as an exception (the client's half of :mod:`rmq.broker.status`).

The classes live in :mod:`rmq.errors`; the table that picks one for a status code is the
binding's (``rmq._rmqcore.broker_error``, crates/rmqcore-py/src/errors.rs), which the
producer's refused batches go through too. This applies it to a failed call
(:func:`from_rpc_error`) or to an error answered inside a response (:func:`from_status`),
and says which codes are worth another try (:data:`RETRYABLE`, the producer core's list).
"""

from __future__ import annotations

import grpc

from rmq._rmqcore import RETRYABLE_STATUS_CODES, broker_error
from rmq.errors import BrokerError

# Worth another try after a pause (and a fresh route): the shard may be restarting.
RETRYABLE = frozenset(code for code in grpc.StatusCode if code.value[0] in RETRYABLE_STATUS_CODES)


def from_rpc_error(error: grpc.RpcError, what: str = "") -> BrokerError:
    """The client-side exception for a failed call."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else None) or str(code)
    return from_status(code.value[0], details, what)


def from_status(code_value: int, message: str, what: str = "") -> BrokerError:
    """The client-side exception for an error answered inside a response (``rmq.v1.Error``:
    one batch of SendStream or SendBatches), as if the call had failed with it."""
    return broker_error(code_value, f"{what}: {message}" if what else message)
