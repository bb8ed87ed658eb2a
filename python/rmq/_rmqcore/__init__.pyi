"""Type stubs and user-facing docs of the native engine ``rmq._rmqcore``.

The engine is one extension module (``rmq/_rmqcore.abi3.so``); its stubs are a package so
that each concept has a file of its own: ``_store`` (the store), ``_message`` (messages
and put results), ``_reports`` (recovery, verify, disk and retention reports), ``_reads``
(batched reads), ``_segment_decoder`` and ``_tier`` (segments read without a store),
``_transport``, ``_producer`` and ``_received`` (the client core), ``_server`` and
``_leases`` (the shard's data plane). Those stub modules do not exist at run time: import
every name from ``rmq._rmqcore`` itself. This directory holds no ``__init__.py``, so
importing ``rmq._rmqcore`` still loads the extension module.

Checked against the compiled module by ``mypy.stubtest`` through scripts/stubtest-rmqcore,
which gives the private stub modules run-time stand-ins so that stubtest compares them.
"""

from ._leases import LeaseBook, decode_receipt
from ._message import (
    Message,
    PutResult,
    PutResultIterator,
    PutResults,
    body_crc,
    java_string_hash,
    validate_group,
    validate_topic,
)
from ._producer import ProducerCore, SendFuture, SendResult
from ._reads import (
    BodyBatch,
    ColumnBuffer,
    EncodedPull,
    PulledColumns,
    PullResult,
    decode_pull_columns,
)
from ._received import ReceivedMessage, decode_pull_response
from ._reports import DiskUsage, RecoveryReport, RetentionReport, VerifyReport
from ._segment_decoder import DecodedBatch, SegmentDecoder
from ._server import (
    ShardServer,
    native_rocketmq_status_codes,
    native_rocketmq_system_properties,
    native_status_codes,
)
from ._store import Store
from ._tier import TierReader
from ._transport import RETRYABLE_STATUS_CODES, PendingCall, Transport, broker_error

# The names listed here are the module's exports (a stub re-exports only what it lists).
__all__ = [
    "RETRYABLE_STATUS_CODES",
    "BodyBatch",
    "ColumnBuffer",
    "DecodedBatch",
    "DiskUsage",
    "EncodedPull",
    "LeaseBook",
    "Message",
    "PendingCall",
    "ProducerCore",
    "PullResult",
    "PulledColumns",
    "PutResult",
    "PutResultIterator",
    "PutResults",
    "ReceivedMessage",
    "RecoveryReport",
    "RetentionReport",
    "SegmentDecoder",
    "SendFuture",
    "SendResult",
    "ShardServer",
    "Store",
    "TierReader",
    "Transport",
    "VerifyReport",
    "__version__",
    "body_crc",
    "broker_error",
    "decode_pull_columns",
    "decode_pull_response",
    "decode_receipt",
    "java_string_hash",
    "native_rocketmq_status_codes",
    "native_rocketmq_system_properties",
    "native_status_codes",
    "validate_group",
    "validate_topic",
]

__version__: str
