"""Kept for the native engine only: the producer's engine-side sender
(crates/rmqcore-py/src/native_sender.rs) looks ``BrokerError`` up under this name.

Every exception class lives in :mod:`rmq.errors`; the table from gRPC status codes to
them is :mod:`rmq.client.status`.
"""

from rmq.errors import BrokerError

__all__ = ["BrokerError"]
