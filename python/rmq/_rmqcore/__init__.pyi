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

from ._leases import LeaseBook as LeaseBook
from ._leases import decode_receipt as decode_receipt
from ._message import Message as Message
from ._message import PutResult as PutResult
from ._message import PutResultIterator as PutResultIterator
from ._message import PutResults as PutResults
from ._message import body_crc as body_crc
from ._message import java_string_hash as java_string_hash
from ._message import validate_group as validate_group
from ._message import validate_topic as validate_topic
from ._producer import ProducerCore as ProducerCore
from ._producer import SendBatchFuture as SendBatchFuture
from ._producer import SendFuture as SendFuture
from ._producer import SendResult as SendResult
from ._reads import BodyBatch as BodyBatch
from ._reads import BodyView as BodyView
from ._reads import ColumnBuffer as ColumnBuffer
from ._reads import EncodedPull as EncodedPull
from ._reads import PulledColumns as PulledColumns
from ._reads import PullResult as PullResult
from ._reads import decode_pull_columns as decode_pull_columns
from ._received import ReceivedMessage as ReceivedMessage
from ._received import decode_pull_response as decode_pull_response
from ._reports import DiskUsage as DiskUsage
from ._reports import RecoveryReport as RecoveryReport
from ._reports import RetentionReport as RetentionReport
from ._reports import VerifyReport as VerifyReport
from ._segment_decoder import DecodedBatch as DecodedBatch
from ._segment_decoder import SegmentDecoder as SegmentDecoder
from ._server import ShardServer as ShardServer
from ._server import native_rocketmq_status_codes as native_rocketmq_status_codes
from ._server import native_rocketmq_system_properties as native_rocketmq_system_properties
from ._server import native_status_codes as native_status_codes
from ._store import Store as Store
from ._tier import TierReader as TierReader
from ._transport import RETRYABLE_STATUS_CODES as RETRYABLE_STATUS_CODES
from ._transport import PendingCall as PendingCall
from ._transport import Transport as Transport
from ._transport import broker_error as broker_error

# The names below are the module's exports; each import above also says `X as X`, the stub
# convention for a re-export that every checker and editor (jedi too) understands.
__all__ = [
    "RETRYABLE_STATUS_CODES",
    "BodyBatch",
    "BodyView",
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
    "SendBatchFuture",
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
