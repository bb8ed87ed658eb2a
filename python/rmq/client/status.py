"""A broker's gRPC status as an exception (the client's half of :mod:`rmq.broker.status`).

The classes live in :mod:`rmq.errors`; the table that picks one for a status code is the
binding's (``rmq._rmqcore.broker_error``, crates/rmqcore-py/src/errors.rs), which the
client's transport and the producer's refused batches go through. This applies it to an
error answered inside a response or by a started call (:func:`from_status`), and says which
codes are worth another try (:func:`is_retryable`, the producer core's list).

grpc is not imported here: a client that only reads offsets (the Spark source's driver,
which Spark starts in a fresh Python process for every streaming query) should not pay
for loading it; an error's ``code`` loads it when read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmq._rmqcore import RETRYABLE_STATUS_CODES, broker_error
from rmq.errors import BrokerError

if TYPE_CHECKING:
    import grpc


def is_retryable(code: grpc.StatusCode) -> bool:
    """Worth another try after a pause (and a fresh route): the shard may be restarting."""
    return code.value[0] in RETRYABLE_STATUS_CODES


def from_status(
    code_value: int, message: str, what: str = "", resume_offset: int | None = None
) -> BrokerError:
    """The client-side exception for a call that failed with status ``code_value`` (as
    ``grpc.StatusCode`` numbers it), or for an error answered inside a response
    (``rmq.v1.Error``: one batch of SendStream or SendBatches); ``resume_offset`` is what
    a DATA_LOSS pull answer carried beside its status (the queue offset past lost data)."""
    return broker_error(code_value, f"{what}: {message}" if what else message, resume_offset)
