"""``rmq.Client``: routes, topic admin and lookups; makes producers and consumers."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, TypeVar

from google.protobuf.message import Message

from rmq._rmqcore import ReceivedMessage, Transport
from rmq.client.consumer import Consumer
from rmq.client.credentials import Credentials
from rmq.client.messages import QueueInfo, ShardProcessInfo, TopicRoute
from rmq.client.producer import Producer
from rmq.client.status import is_retryable
from rmq.client.transport import method_path, open_transport
from rmq.errors import BrokerError, BrokerNotFoundError
from rmq.proto.v1 import broker_pb2 as pb

DEFAULT_ENDPOINT = "127.0.0.1:8081"

M = TypeVar("M", bound=Message)


def _route(name: str) -> str:
    return method_path("Route", name)


def _shard(name: str) -> str:
    return method_path("Shard", name)


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
        self._routes: dict[str, TopicRoute] = {}
        # Every call but the producer's batches: routes, admin, lookups, offsets, pulls.
        self.transport: Transport = open_transport(self.credentials, timeout)
        self._closed = False

    # ---- plumbing shared with producers and consumers ----

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple(self.credentials.metadata)

    def call_bytes(
        self, what: str, endpoint: str, method: str, request: bytes, *, timeout: float | None = None
    ) -> bytes:
        """Call ``method`` on ``endpoint`` with the token and timeout; retry on
        UNAVAILABLE and friends until ``retry_timeout``; raise the matching client error."""
        deadline = time.monotonic() + self.retry_timeout
        pause = 0.05
        while True:
            try:
                return self.transport.call(
                    endpoint, method, request, timeout=timeout or self.timeout, what=what
                )
            except BrokerError as error:
                if not is_retryable(error.code) or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def call(self, what: str, endpoint: str, method: str, request: Message, answer: type[M]) -> M:
        """As ``call_bytes``, with protobuf messages."""
        raw = self.call_bytes(what, endpoint, method, request.SerializeToString())
        return answer.FromString(raw)

    def call_all_bytes(self, calls: list[tuple[str, str, str, bytes]]) -> list[bytes]:
        """``call_bytes`` for each (what, endpoint, method, request), all in flight at
        once: one round trip for all of them (of any methods) rather than one each. A call
        that failed is made again through ``call_bytes``, which retries and raises as a
        lone call does."""
        done = threading.Condition()
        pending = [len(calls)]

        def ended(_: object) -> None:
            with done:
                pending[0] -= 1
                done.notify_all()

        started = [
            self.transport.start(endpoint, method, request, ended, timeout=self.timeout)
            for _, endpoint, method, request in calls
        ]
        with done:
            # Each call ends within its timeout; the margin covers a completion thread
            # that never gets to a call (the transport closed under it).
            done.wait_for(lambda: pending[0] == 0, timeout=self.timeout + 5.0)
        answers = []
        for call, (what, endpoint, method, request) in zip(started, calls, strict=True):
            if call.done() and call.error is None:
                answers.append(call.result())
            else:
                call.cancel()
                answers.append(self.call_bytes(what, endpoint, method, request))
        return answers

    def _admin(self, what: str, name: str, request: Message, answer: type[M]) -> M:
        """``Route.<name>`` on the supervisor."""
        return self.call(what, self.endpoint, _route(name), request, answer)

    # ---- routes and topic admin ----

    def route(self, topic: str, *, refresh: bool = False) -> TopicRoute:
        """Where each queue of ``topic`` lives (cached; ``refresh`` asks again)."""
        with self._lock:
            cached = self._routes.get(topic)
        if cached is not None and not refresh:
            return cached
        answer = self._admin(
            f"route of {topic!r}", "GetRoute", pb.GetRouteRequest(topic=topic), pb.TopicRoute
        )
        route = TopicRoute.from_proto(answer)
        with self._lock:
            self._routes[topic] = route
        return route

    def create_topic(self, topic: str, queues: int = 8) -> TopicRoute:
        """Create ``topic`` with ``queues`` queues (or grow it to that many)."""
        answer = self._admin(
            f"create topic {topic!r}",
            "CreateTopic",
            pb.CreateTopicRequest(topic=topic, queues=queues),
            pb.TopicRoute,
        )
        route = TopicRoute.from_proto(answer)
        with self._lock:
            self._routes[topic] = route
        return route

    def delete_topic(self, topic: str) -> None:
        self._admin(
            f"delete topic {topic!r}",
            "DeleteTopic",
            pb.DeleteTopicRequest(topic=topic),
            pb.DeleteTopicResponse,
        )
        with self._lock:
            self._routes.pop(topic, None)

    def topics(self) -> list[str]:
        answer = self._admin(
            "list topics", "ListTopics", pb.ListTopicsRequest(), pb.ListTopicsResponse
        )
        return list(answer.topics)

    def describe_topic(self, topic: str) -> list[QueueInfo]:
        answer = self._admin(
            f"describe topic {topic!r}",
            "DescribeTopic",
            pb.DescribeTopicRequest(topic=topic),
            pb.DescribeTopicResponse,
        )
        return [
            QueueInfo(q.queue_id, q.shard, q.endpoint, q.min_offset, q.max_offset)
            for q in answer.queues
        ]

    def cluster_info(self) -> list[ShardProcessInfo]:
        answer = self._admin(
            "cluster info", "ClusterInfo", pb.ClusterInfoRequest(), pb.ClusterInfoResponse
        )
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
            pb.QueueOffsetsResponse,
        )
        return answer.min_offset, answer.max_offset

    def offset_for_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """The first offset of the queue stored at or after ``timestamp_ms``."""
        answer = self._on_queue(
            topic,
            queue_id,
            "OffsetForTime",
            pb.OffsetForTimeRequest(topic=topic, queue_id=queue_id, timestamp=timestamp_ms),
            pb.OffsetForTimeResponse,
        )
        return int(answer.offset)

    def _on_queue(
        self, topic: str, queue_id: int, method: str, request: Message, answer: type[M]
    ) -> M:
        route = self.route(topic)
        if not 0 <= queue_id < len(route.queues):
            route = self.route(topic, refresh=True)
        if not 0 <= queue_id < len(route.queues):
            endpoint = route.queues[0].endpoint  # let the shard explain the bad queue id
        else:
            endpoint = route.queues[queue_id].endpoint
        return self.call(f"{method} {topic}/{queue_id}", endpoint, _shard(method), request, answer)

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
            answer = self.call(
                f"query key {key!r}", endpoint, _shard("QueryByKey"), request,
                pb.QueryByKeyResponse,
            )  # fmt: skip
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
                    f"msg id {msg_id}", process.endpoint, _shard("GetByMsgId"), request,
                    pb.GetByMsgIdResponse,
                )  # fmt: skip
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
            self._closed = True
        self.transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()
