"""rmq's gRPC broker, the RPC side: servicers (transport only), handlers (protobuf <->
store calls), the error-to-status table, the token check and the server builder.

The processes that run these (shard processes and their supervisor) live in
:mod:`rmq.cluster`.
"""

from rmq.broker.route_handler import Cluster, ProcessInfo, RouteHandler
from rmq.broker.server import Security, build_server
from rmq.broker.shard_handler import ShardHandler, store_host_for
from rmq.broker.status import STATUS_BY_ERROR, status_for
from rmq.broker.validation import Limits

__all__ = [
    "STATUS_BY_ERROR",
    "Cluster",
    "Limits",
    "ProcessInfo",
    "RouteHandler",
    "Security",
    "ShardHandler",
    "build_server",
    "status_for",
    "store_host_for",
]
