"""The ``apache.rocketmq.v2.MessagingService`` servicer: parse, call, answer a status.

The same servicer runs in the supervisor (on ``--rocketmq-port``, the clients' access
point: routes, assignments, settings) and in every shard process (on the shard's own
port, beside rmq's API: the brokers the routes name, where messages are sent, received
and acked). Failures come back the protocol's way, as a ``Status`` in the response (see
:mod:`rmq.rocketmq.status`); an RPC rmq does not offer answers ``NOT_IMPLEMENTED``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from rmq import errors
from rmq.errors import ProtocolError
from rmq.rocketmq import message_codec, routes, settings
from rmq.rocketmq.routes import Topology
from rmq.rocketmq.settings import ConsumerPolicy
from rmq.rocketmq.shard_backend import AUTO_RENEW_INVISIBLE_MS, ReceiveRequest, ShardBackend
from rmq.rocketmq.status import status, status_for
from rmq.rocketmq.wire import rpc, service, v2

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_RECEIVE_BATCH = 1024
DEFAULT_WAIT_SECONDS = 20.0


class MessagingServicer(service.MessagingServiceServicer):  # type: ignore[misc]
    def __init__(
        self,
        topology: Topology,
        backend: ShardBackend | None,
        *,
        max_body_bytes: int,
        policy: ConsumerPolicy,
    ) -> None:
        self._topology = topology
        self._backend = backend
        self._max_body_bytes = max_body_bytes
        self._policy = policy

    def add_to(self, server: grpc.Server) -> None:
        service.add_MessagingServiceServicer_to_server(self, server)

    # ---- routes, assignments, client sessions ----

    def QueryRoute(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call() -> Any:
            queues = routes.message_queues(request.topic.name, self._queues(request.topic.name))
            return rpc.QueryRouteResponse(status=status(), message_queues=queues)

        return _answer(call, rpc.QueryRouteResponse)

    def QueryAssignment(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call() -> Any:
            topic = request.topic.name
            queues = routes.message_queues(topic, self._queues(topic))
            return rpc.QueryAssignmentResponse(
                status=status(), assignments=[v2.Assignment(message_queue=q) for q in queues]
            )

        return _answer(call, rpc.QueryAssignmentResponse)

    def Heartbeat(self, request: Any, context: grpc.ServicerContext) -> Any:
        return rpc.HeartbeatResponse(status=status())

    def NotifyClientTermination(self, request: Any, context: grpc.ServicerContext) -> Any:
        return rpc.NotifyClientTerminationResponse(status=status())

    def Telemetry(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        """The settings exchange: each settings command a client sends is answered with
        the settings the broker decides; other commands need no answer."""
        for command in requests:
            if command.HasField("settings"):
                yield rpc.TelemetryCommand(
                    status=status(),
                    settings=settings.answer(command.settings, self._max_body_bytes, self._policy),
                )

    # ---- messages ----

    def SendMessage(self, request: Any, context: grpc.ServicerContext) -> Any:
        """A shard process's native data plane answers every SendMessage that is one gRPC
        message, compressed frames included (``rmqnet::rocketmq::send``); what reaches here
        is a send to the access point, or a body the data plane could not read as one
        message."""

        def call() -> Any:
            self._data_plane()
            raise ProtocolError("BAD_REQUEST", "the request is not one gRPC message")

        return _answer(call, rpc.SendMessageResponse)

    def ReceiveMessage(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            backend = self._data_plane()
            found = backend.receive(_receive_request(request, context), context.is_active)
        except Exception as error:  # every failure becomes a status
            yield rpc.ReceiveMessageResponse(status=status_for(error))
            return
        if not found:
            yield rpc.ReceiveMessageResponse(status=status(v2.MESSAGE_NOT_FOUND, "no new message"))
            return
        yield rpc.ReceiveMessageResponse(status=status())
        # When the messages left the broker: the clients measure delivery latency by it.
        sent_at = Timestamp()
        sent_at.GetCurrentTime()
        yield rpc.ReceiveMessageResponse(delivery_timestamp=sent_at)
        for message in found:
            yield rpc.ReceiveMessageResponse(message=message)

    def AckMessage(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call() -> Any:
            backend = self._data_plane()
            entries = []
            for entry in request.entries:
                try:
                    backend.ack(request.group.name, request.topic.name, entry.receipt_handle)
                    result = status()
                except Exception as error:  # each entry gets its own status
                    result = status_for(error)
                entries.append(
                    rpc.AckMessageResultEntry(
                        message_id=entry.message_id,
                        receipt_handle=entry.receipt_handle,
                        status=result,
                    )
                )
            return rpc.AckMessageResponse(status=_overall(entries), entries=entries)

        return _answer(call, rpc.AckMessageResponse)

    def ChangeInvisibleDuration(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call() -> Any:
            handle = self._data_plane().change_invisible(
                request.group.name,
                request.topic.name,
                request.receipt_handle,
                message_codec.millis(request.invisible_duration),
            )
            return rpc.ChangeInvisibleDurationResponse(status=status(), receipt_handle=handle)

        return _answer(call, rpc.ChangeInvisibleDurationResponse)

    def ForwardMessageToDeadLetterQueue(self, request: Any, context: grpc.ServicerContext) -> Any:
        def call() -> Any:
            self._data_plane().forward_to_dead_letters(
                request.group.name, request.topic.name, request.receipt_handle
            )
            return rpc.ForwardMessageToDeadLetterQueueResponse(status=status())

        return _answer(call, rpc.ForwardMessageToDeadLetterQueueResponse)

    # ---- what rmq does not offer ----

    def EndTransaction(self, request: Any, context: grpc.ServicerContext) -> Any:
        return rpc.EndTransactionResponse(status=_not_offered("transactional messages"))

    def PullMessage(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        yield rpc.PullMessageResponse(status=_not_offered("PullConsumer"))

    def UpdateOffset(self, request: Any, context: grpc.ServicerContext) -> Any:
        return rpc.UpdateOffsetResponse(status=_not_offered("PullConsumer"))

    def GetOffset(self, request: Any, context: grpc.ServicerContext) -> Any:
        return rpc.GetOffsetResponse(status=_not_offered("PullConsumer"))

    def QueryOffset(self, request: Any, context: grpc.ServicerContext) -> Any:
        return rpc.QueryOffsetResponse(status=_not_offered("PullConsumer"))

    def RecallMessage(self, request: Any, context: grpc.ServicerContext) -> Any:
        return rpc.RecallMessageResponse(status=_not_offered("recalling delay messages"))

    def SyncLiteSubscription(self, request: Any, context: grpc.ServicerContext) -> Any:
        return rpc.SyncLiteSubscriptionResponse(status=_not_offered("lite topics"))

    # ---- helpers ----

    def _queues(self, topic: str) -> Any:
        if not topic:
            raise ProtocolError("ILLEGAL_TOPIC", "no topic given")
        try:
            return self._topology.queues(topic)
        except errors.NotFoundError:
            raise ProtocolError("TOPIC_NOT_FOUND", f"topic {topic!r} does not exist") from None

    def _data_plane(self) -> ShardBackend:
        if self._backend is None:
            raise ProtocolError(
                "BAD_REQUEST",
                "this is the broker's access point; send, receive and ack at the endpoint "
                "QueryRoute names for the queue",
            )
        return self._backend


def _receive_request(request: Any, context: grpc.ServicerContext) -> ReceiveRequest:
    if request.HasField("invisible_duration"):
        invisible_ms = message_codec.millis(request.invisible_duration)
    elif request.auto_renew:
        invisible_ms = AUTO_RENEW_INVISIBLE_MS
    else:
        raise ProtocolError("ILLEGAL_INVISIBLE_TIME", "the request has no invisible_duration")
    wait = (
        message_codec.millis(request.long_polling_timeout) / 1000
        if request.HasField("long_polling_timeout")
        else DEFAULT_WAIT_SECONDS
    )
    remaining = context.time_remaining()
    if remaining is not None:
        wait = min(wait, max(0.0, remaining - 0.5))
    batch = request.batch_size
    if not 0 < batch <= MAX_RECEIVE_BATCH:
        raise ProtocolError(
            "BAD_REQUEST", f"batch_size {batch} is outside 1 to {MAX_RECEIVE_BATCH}"
        )
    return ReceiveRequest(
        group=request.group.name,
        topic=request.message_queue.topic.name,
        queue_id=request.message_queue.id,
        batch_size=batch,
        invisible_ms=invisible_ms,
        wait_seconds=wait,
        tags=message_codec.tag_filter(request.filter_expression),
    )


def _answer(call: Callable[[], T], response_type: Any) -> T:
    try:
        return call()
    except Exception as error:  # every failure becomes a status; see status.py
        answer: T = response_type(status=status_for(error))
        return answer


def _overall(entries: list[Any]) -> Any:
    codes = {e.status.code for e in entries}
    if codes == {v2.OK} or not codes:
        return status()
    if len(codes) == 1:
        return entries[0].status
    return status(v2.MULTIPLE_RESULTS, "some entries failed; see each entry's status")


def _not_offered(what: str) -> Any:
    return status(v2.NOT_IMPLEMENTED, f"rmq does not offer {what}")
