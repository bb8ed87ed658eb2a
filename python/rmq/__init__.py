"""rmq: a message store with RocketMQ-compatible files.

``rmq.Store`` opens a store directory (commit log, consume queues, index) through the
native engine; ``rmq.errors`` holds every exception it raises.
"""

from typing import TYPE_CHECKING, Any

from rmq import errors
from rmq._rmqcore import (
    BodyBatch,
    BodyView,
    DiskUsage,
    EncodedPull,
    Message,
    PullResult,
    PutResult,
    PutResults,
    RecoveryReport,
    RetentionReport,
    Store,
    VerifyReport,
    __version__,
    body_crc,
    java_string_hash,
)

if TYPE_CHECKING:
    from rmq.client import Client


def __getattr__(name: str) -> Any:
    # The gRPC client is imported on first use so that embedding a store does not load
    # grpc.
    if name == "Client":
        from rmq.client import Client

        return Client
    raise AttributeError(f"module 'rmq' has no attribute {name!r}")


__all__ = [
    "BodyBatch",
    "BodyView",
    "Client",
    "DiskUsage",
    "EncodedPull",
    "Message",
    "PullResult",
    "PutResult",
    "PutResults",
    "RecoveryReport",
    "RetentionReport",
    "Store",
    "VerifyReport",
    "__version__",
    "body_crc",
    "errors",
    "java_string_hash",
]
