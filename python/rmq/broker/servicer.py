"""gRPC transport: parse the request bytes, call a handler, map errors to a status.

Methods are registered with raw-bytes (de)serializers, so that a request that is not
valid protobuf becomes INVALID_ARGUMENT with a message here instead of gRPC's generic
INTERNAL "Exception deserializing request!". Nothing in this module knows what a store
is; nothing in the handlers knows what a status code is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TypeVar

import grpc
from google.protobuf.message import DecodeError, Message

from rmq.broker.route_handler import RouteHandler
from rmq.broker.shard_handler import ShardHandler
from rmq.broker.status import status_for
from rmq.errors import InvalidArgumentError
from rmq.proto.v1 import broker_pb2 as pb

log = logging.getLogger(__name__)

RequestT = TypeVar("RequestT", bound=Message)

SHARD_SERVICE = "rmq.v1.Shard"
ROUTE_SERVICE = "rmq.v1.Route"


def parse(request_type: type[RequestT], raw: bytes) -> RequestT:
    """Decode ``raw`` or raise ``DecodeError`` with the message type in its text."""
    try:
        return request_type.FromString(raw)
    except DecodeError as error:
        raise DecodeError(f"malformed {request_type.__name__}: {error}") from error


def _abort_for(context: grpc.ServicerContext, error: BaseException) -> None:
    if isinstance(error, DecodeError):
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
    code, message = status_for(error)
    context.abort(code, message)


def unary(
    request_type: type[RequestT],
    call: Callable[[RequestT, grpc.ServicerContext], Message | bytes],
) -> grpc.RpcMethodHandler[bytes, bytes]:
    """A handler's answer is a protobuf message, or one the engine already serialized."""

    def behaviour(raw: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            response = call(parse(request_type, raw), context)
        except Exception as error:  # every failure becomes a status; see status.py
            _abort_for(context, error)
            raise  # unreachable: abort raises
        return response if isinstance(response, bytes) else response.SerializeToString()

    return grpc.unary_unary_rpc_method_handler(behaviour)


FORWARDED_PEER = "x-rmq-peer"
_LOOPBACK_PEERS = ("ipv4:127.0.0.1:", "ipv6:%5B::1%5D:")


def born_host(context: grpc.ServicerContext) -> str | None:
    """The client's address as host:port, from gRPC's ``ipv4:1.2.3.4:5`` form; behind the
    native data plane (which calls from loopback), the address it forwards."""
    peer = context.peer() or ""
    if peer.startswith(_LOOPBACK_PEERS):
        for name, value in context.invocation_metadata() or ():
            if name == FORWARDED_PEER:
                return str(value)
    kind, _, address = peer.partition(":")
    if kind == "ipv4" and address:
        return address
    if kind == "ipv6" and address.startswith("%5B"):
        return address.replace("%5B", "[").replace("%5D", "]")
    return None


def shard_service(handler: ShardHandler) -> grpc.GenericRpcHandler[bytes, bytes]:
    """The Shard service behind the native data plane, which answers Send, SendBatches
    and Pull itself (rmqnet); SendStream stores through the same engine function."""

    def send_stream(
        raw_requests: Iterator[bytes], context: grpc.ServicerContext
    ) -> Iterator[bytes]:
        host = born_host(context)
        for raw in raw_requests:
            try:
                answer = handler.answer_send(raw, host)
            except Exception as error:  # malformed bytes end the stream; see status.py
                _abort_for(context, error)
                raise  # unreachable: abort raises
            yield answer

    methods = {
        "SendStream": grpc.stream_stream_rpc_method_handler(send_stream),
        "QueueOffsets": unary(pb.QueueOffsetsRequest, lambda r, c: handler.queue_offsets(r)),
        "CommitOffsets": unary(pb.CommitOffsetsRequest, lambda r, c: handler.commit_offsets(r)),
        "FetchOffsets": unary(pb.FetchOffsetsRequest, lambda r, c: handler.fetch_offsets(r)),
        "QueryByKey": unary(pb.QueryByKeyRequest, lambda r, c: handler.query_by_key(r)),
        "GetByMsgId": unary(pb.GetByMsgIdRequest, lambda r, c: handler.get_by_msg_id(r)),
        "OffsetForTime": unary(pb.OffsetForTimeRequest, lambda r, c: handler.offset_for_time(r)),
        "HostTopic": unary(pb.HostTopicRequest, lambda r, c: _host_topic(handler, r)),
        "DropTopic": unary(pb.DropTopicRequest, lambda r, c: _drop_topic(handler, r)),
    }
    return grpc.method_handlers_generic_handler(SHARD_SERVICE, methods)


def _host_topic(handler: ShardHandler, request: pb.HostTopicRequest) -> pb.HostTopicResponse:
    shards = [-1] * len(request.queues)
    for entry in request.queues:
        if not 0 <= entry.queue_id < len(shards):
            raise InvalidArgumentError(
                f"queue ids must be 0 to {len(shards) - 1}, got {entry.queue_id}", "queues"
            )
        shards[entry.queue_id] = entry.shard
    handler.host_topic(request.topic, shards)
    return pb.HostTopicResponse()


def _drop_topic(handler: ShardHandler, request: pb.DropTopicRequest) -> pb.DropTopicResponse:
    handler.drop_topic(request.topic)
    return pb.DropTopicResponse()


def route_service(handler: RouteHandler) -> grpc.GenericRpcHandler[bytes, bytes]:
    methods = {
        "GetRoute": unary(pb.GetRouteRequest, lambda r, c: handler.get_route(r)),
        "CreateTopic": unary(pb.CreateTopicRequest, lambda r, c: handler.create_topic(r)),
        "DeleteTopic": unary(pb.DeleteTopicRequest, lambda r, c: handler.delete_topic(r)),
        "ListTopics": unary(pb.ListTopicsRequest, lambda r, c: handler.list_topics(r)),
        "DescribeTopic": unary(pb.DescribeTopicRequest, lambda r, c: handler.describe_topic(r)),
        "ClusterInfo": unary(pb.ClusterInfoRequest, lambda r, c: handler.cluster_info(r)),
    }
    return grpc.method_handlers_generic_handler(ROUTE_SERVICE, methods)
