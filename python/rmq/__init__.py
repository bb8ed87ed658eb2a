"""rmq: a message store with RocketMQ-compatible files.

``rmq.Store`` opens a store directory (commit log, consume queues, index) through the
native engine; ``rmq.errors`` holds every exception it raises.
"""

from rmq import errors
from rmq._rmqcore import (
    Message,
    PullResult,
    PutResult,
    RecoveryReport,
    Store,
    VerifyReport,
    __version__,
    body_crc,
    java_string_hash,
)

__all__ = [
    "Message",
    "PullResult",
    "PutResult",
    "RecoveryReport",
    "Store",
    "VerifyReport",
    "__version__",
    "body_crc",
    "errors",
    "java_string_hash",
]
