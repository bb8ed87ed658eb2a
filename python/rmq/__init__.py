"""rmq: a message store with RocketMQ-compatible files.

``rmq.Store`` opens a store directory (commit log, consume queues, index) through the
native engine; ``rmq.errors`` holds every exception it raises.
"""

from rmq import errors
from rmq._rmqcore import (
    DiskUsage,
    Message,
    PullResult,
    PutResult,
    RecoveryReport,
    RetentionReport,
    Store,
    VerifyReport,
    __version__,
    body_crc,
    java_string_hash,
)

__all__ = [
    "DiskUsage",
    "Message",
    "PullResult",
    "PutResult",
    "RecoveryReport",
    "RetentionReport",
    "Store",
    "VerifyReport",
    "__version__",
    "body_crc",
    "errors",
    "java_string_hash",
]
