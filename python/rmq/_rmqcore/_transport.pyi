"""The client's HTTP/2 calls to brokers, and the one table from a broker's status to
the client's exception."""

from collections.abc import Callable, Sequence
from typing import final

from rmq.errors import BrokerError

RETRYABLE_STATUS_CODES: list[int]
"""The gRPC status codes (as numbers) worth another try after a pause and a fresh route."""

@final
class Transport:
    """A client's unary calls over its own HTTP/2 connections (crates/rmqnet/src/client/
    calls.rs): one connection per endpoint, TLS and the token on every call. A failed
    call raises the client table's ``BrokerError`` subclass (``broker_error``)."""

    def __new__(
        cls,
        *,
        timeout: float,
        metadata: Sequence[tuple[str, str]],
        tls: bool = False,
        root_cert: bytes | None = None,
        server_name: str | None = None,
    ) -> Transport: ...
    def call(
        self,
        endpoint: str,
        method: str,
        request: bytes,
        *,
        timeout: float | None = None,
        what: str = "",
    ) -> bytes:
        """Call ``method`` ("/rmq.v1.Route/GetRoute") on ``endpoint`` and wait for the
        answer's bytes; the GIL is released while waiting. ``what`` prefixes an error's
        message."""
    def start(
        self,
        endpoint: str,
        method: str,
        request: bytes,
        callback: Callable[[PendingCall], object],
        *,
        timeout: float | None = None,
    ) -> PendingCall:
        """Start a call; ``callback(pending_call)`` runs on the transport's completion
        thread once it ends, unless it was cancelled first."""
    def close(self) -> None:
        """Close the connections; later calls raise ``StoreClosedError``."""

@final
class PendingCall:
    """A call started by ``Transport.start``."""

    def done(self) -> bool: ...
    def result(self) -> bytes:
        """The answer's bytes, or the client table's exception for the call's status."""
    @property
    def error(self) -> tuple[int, str] | None:
        """(status code, message) of a failed call; None when answered or not ended."""
    @property
    def resume_offset(self) -> int | None:
        """For a failed pull that met a lost tier segment: the queue offset past it."""
    def cancel(self) -> None:
        """Drop the call: its callback will not run."""

def broker_error(code: int, message: str, resume_offset: int | None = None) -> BrokerError:
    """The client's exception for a broker's gRPC status ``code`` (as ``grpc.StatusCode``
    numbers it) and ``message``: the one table of the client side. ``resume_offset`` (a
    pull that met a lost tier segment: the queue offset past it) becomes the exception's
    attribute."""
