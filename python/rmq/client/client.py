"""``rmq.Client``: routes, topic admin and lookups; makes producers and consumers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc

from rmq._rmqcore import ReceivedMessage
from rmq.client.channels import Credentials, open_channel
from rmq.client.consumer import Consumer
from rmq.client.messages import QueueInfo, ShardProcessInfo, TopicRoute
from rmq.client.producer import Producer
from rmq.client.status import RETRYABLE, from_rpc_error
from rmq.errors import BrokerNotFoundError
from rmq.proto.v1 import broker_pb2 as pb
from rmq.proto.v1 import broker_pb2_grpc as pb_grpc

DEFAULT_ENDPOINT = "127.0.0.1:8081"


def _shard_method(name: str) -> str:
    """The path of a Shard method, from the service descriptor: "/rmq.v1.Shard/Send"."""
    service = pb.DESCRIPTOR.services_by_name["Shard"]
    return "/{}/{}".format(*service.methods_by_name[name].full_name.rsplit(".", 1))


_PULL_METHOD = _shard_method("Pull")
T = TypeVar("T")


class Client:
    """A connection to an rmq broker (its supervisor's route service).

    Thread-safe. ``endpoint`` is the supervisor's host:port. ``token`` is the broker's
    bearer token; ``tls_root_cert`` (PEM bytes or a path) or ``tls=True`` (system roots)
    turns TLS on. Calls that may hit a restarting shard retry for up to
    ``retry_timeout`` seconds.
    """

    def __init__(
        self,
        endpoint: str = DEFAULT_ENDPOINT,
        *,
        token: str | None = None,
        tls: bool = False,
        tls_root_cert: bytes | str | Path | None = None,
        server_name: str | None = None,
        timeout: float = 30.0,
        retry_timeout: float = 30.0,
    ) -> None:
        if isinstance(tls_root_cert, (str, Path)):
            tls_root_cert = Path(tls_root_cert).read_bytes()
        self.endpoint = endpoint
        self.timeout = timeout
        self.retry_timeout = retry_timeout
        self.credentials = Credentials(
            token=token, tls=tls, tls_root_cert=tls_root_cert, server_name=server_name
        )
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        # (method, endpoint) -> a multi-callable taking or giving bytes the engine encodes
        self._raw_methods: dict[tuple[str, str], grpc.UnaryUnaryMultiCallable[Any, Any]] = {}
        self._routes: dict[str, TopicRoute] = {}
        self._route_stub = pb_grpc.RouteStub(self._channel(endpoint))
        self._closed = False

    # ---- plumbing shared with producers and consumers ----

    def _channel(self, endpoint: str) -> grpc.Channel:
        with self._lock:
            channel = self._channels.get(endpoint)
            if channel is None:
                channel = self._channels[endpoint] = open_channel(endpoint, self.credentials)
            return channel

    def shard_stub(self, endpoint: str) -> pb_grpc.ShardStub:
        return pb_grpc.ShardStub(self._channel(endpoint))

    def _raw_method(
        self,
        method: str,
        endpoint: str,
        serializer: Callable[[Any], bytes] | None,
        deserializer: Callable[[bytes], Any] | None,
    ) -> grpc.UnaryUnaryMultiCallable[Any, Any]:
        """A Shard method with bytes on one side or both (None: no conversion), made once
        per endpoint."""
        call = self._raw_methods.get((method, endpoint))
        if call is None:
            call = self._channel(endpoint).unary_unary(
                method, request_serializer=serializer, response_deserializer=deserializer
            )
            self._raw_methods[(method, endpoint)] = call
        return call

    def encoded_pull(self, endpoint: str) -> grpc.UnaryUnaryMultiCallable[pb.PullRequest, bytes]:
        """``Shard.Pull`` answering with the response's bytes, for
        ``rmq._rmqcore.decode_pull_response``."""
        return self._raw_method(_PULL_METHOD, endpoint, pb.PullRequest.SerializeToString, None)

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple(self.credentials.metadata)

    def call(self, what: str, function: Callable[..., T], request: Any, **kwargs: Any) -> T:
        """Call ``function(request)`` with the token and timeout; retry on UNAVAILABLE
        and friends until ``retry_timeout``; raise the matching client error."""
        timeout = kwargs.pop("timeout", self.timeout)
        deadline = time.monotonic() + self.retry_timeout
        pause = 0.05
        while True:
            try:
                return function(request, timeout=timeout, metadata=self.metadata, **kwargs)
            except grpc.RpcError as error:
                if error.code() not in RETRYABLE or time.monotonic() + pause > deadline:
                    raise from_rpc_error(error, what) from None
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    # ---- routes and topic admin ----

    def route(self, topic: str, *, refresh: bool = False) -> TopicRoute:
        """Where each queue of ``topic`` lives (cached; ``refresh`` asks again)."""
        with self._lock:
            cached = self._routes.get(topic)
        if cached is not None and not refresh:
            return cached
        answer = self.call(
            f"route of {topic!r}", self._route_stub.GetRoute, pb.GetRouteRequest(topic=topic)
        )
        route = TopicRoute.from_proto(answer)
        with self._lock:
            self._routes[topic] = route
        return route

    def create_topic(self, topic: str, queues: int = 8) -> TopicRoute:
        """Create ``topic`` with ``queues`` queues (or grow it to that many)."""
        answer = self.call(
            f"create topic {topic!r}",
            self._route_stub.CreateTopic,
            pb.CreateTopicRequest(topic=topic, queues=queues),
        )
        route = TopicRoute.from_proto(answer)
        with self._lock:
            self._routes[topic] = route
        return route

    def delete_topic(self, topic: str) -> None:
        self.call(
            f"delete topic {topic!r}",
            self._route_stub.DeleteTopic,
            pb.DeleteTopicRequest(topic=topic),
        )
        with self._lock:
            self._routes.pop(topic, None)

    def topics(self) -> list[str]:
        answer = self.call("list topics", self._route_stub.ListTopics, pb.ListTopicsRequest())
        return list(answer.topics)

    def describe_topic(self, topic: str) -> list[QueueInfo]:
        answer = self.call(
            f"describe topic {topic!r}",
            self._route_stub.DescribeTopic,
            pb.DescribeTopicRequest(topic=topic),
        )
        return [
            QueueInfo(q.queue_id, q.shard, q.endpoint, q.min_offset, q.max_offset)
            for q in answer.queues
        ]

    def cluster_info(self) -> list[ShardProcessInfo]:
        answer = self.call("cluster info", self._route_stub.ClusterInfo, pb.ClusterInfoRequest())
        return [
            ShardProcessInfo(p.process, p.endpoint, tuple(p.shards), p.pid, p.serving, p.restarts)
            for p in answer.processes
        ]

    # ---- reads that go to shards ----

    def queue_offsets(self, topic: str, queue_id: int) -> tuple[int, int]:
        """(min offset, max offset) of one queue; max is the next offset to be written."""
        answer = self._on_queue(
            topic,
            queue_id,
            "QueueOffsets",
            pb.QueueOffsetsRequest(topic=topic, queue_id=queue_id),
        )
        return answer.min_offset, answer.max_offset

    def offset_for_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """The first offset of the queue stored at or after ``timestamp_ms``."""
        answer = self._on_queue(
            topic,
            queue_id,
            "OffsetForTime",
            pb.OffsetForTimeRequest(topic=topic, queue_id=queue_id, timestamp=timestamp_ms),
        )
        return int(answer.offset)

    def _on_queue(self, topic: str, queue_id: int, method: str, request: Any) -> Any:
        route = self.route(topic)
        if not 0 <= queue_id < len(route.queues):
            route = self.route(topic, refresh=True)
        if not 0 <= queue_id < len(route.queues):
            endpoint = route.queues[0].endpoint  # let the shard explain the bad queue id
        else:
            endpoint = route.queues[queue_id].endpoint
        stub = self.shard_stub(endpoint)
        return self.call(f"{method} {topic}/{queue_id}", getattr(stub, method), request)

    def query_by_key(
        self, topic: str, key: str, *, begin: int = 0, end: int | None = None, max_count: int = 64
    ) -> list[ReceivedMessage]:
        """Messages of ``topic`` with ``key``, newest first, from every shard."""
        request = pb.QueryByKeyRequest(
            topic=topic, key=key, begin_timestamp=begin, end_timestamp=end or 0,
            max_messages=max_count,
        )  # fmt: skip
        found: list[ReceivedMessage] = []
        endpoints = sorted({q.endpoint for q in self.route(topic).queues})
        for endpoint in endpoints:
            answer = self.call(f"query key {key!r}", self.shard_stub(endpoint).QueryByKey, request)
            found.extend(ReceivedMessage.from_proto(m) for m in answer.messages)
        found.sort(key=lambda m: (m.store_timestamp, m.commitlog_offset), reverse=True)
        return found[:max_count]

    def get_by_msg_id(self, msg_id: str) -> ReceivedMessage:
        """The message with this msgId, from whichever shard stored it."""
        request = pb.GetByMsgIdRequest(msg_id=msg_id)
        last: BrokerNotFoundError | None = None
        for process in self.cluster_info():
            try:
                answer = self.call(
                    f"msg id {msg_id}", self.shard_stub(process.endpoint).GetByMsgId, request
                )
            except BrokerNotFoundError as error:
                last = error
                continue
            return ReceivedMessage.from_proto(answer.message)
        raise last or BrokerNotFoundError(f"msg id {msg_id}: no shard process answered")

    # ---- producers and consumers ----

    def producer(self, **options: Any) -> Producer:
        """A batching producer; see :class:`rmq.client.Producer` for the options."""
        return Producer(self, **options)

    def consumer(self, group: str, topic: str, **options: Any) -> Consumer:
        """A consumer of every queue of ``topic`` for ``group``; see
        :class:`rmq.client.Consumer` for the options."""
        return Consumer(self, group, topic, **options)

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
            self._raw_methods = {}
            self._closed = True
        for channel in channels:
            channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()
