"""The supervisor's own calls to its shard processes: which topics they host, dropping a
topic, a queue's offsets.

The calls go through the client's one transport (``rmq._rmqcore.Transport``): one HTTP/2
connection per shard endpoint, reopened by itself when a restarted shard is back on its
port, with the supervisor's token and TLS settings. A failed call raises the client
table's class for its gRPC status (:func:`rmq._rmqcore.broker_error`), its message naming
the process; a process that is not connected, or that cannot be reached, raises
``StoreClosedError``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from google.protobuf.message import Message

from rmq import errors
from rmq._rmqcore import PendingCall
from rmq.client.credentials import Credentials
from rmq.client.transport import method_path, open_transport
from rmq.proto.v1 import broker_pb2 as pb

log = logging.getLogger("rmq.supervisor")

ADMIN_TIMEOUT = 30.0
HEALTH_CHECK = "/grpc.health.v1.Health/Check"


def host_topic_request(topic: str, layout: Sequence[int]) -> pb.HostTopicRequest:
    """``HostTopic`` for ``topic`` with the shard directory of each queue."""
    request = pb.HostTopicRequest(topic=topic)
    for queue_id, shard in enumerate(layout):
        request.queues.add(queue_id=queue_id, shard=shard)
    return request


class ShardAdmin:
    """Admin calls to shard processes, by process index. Thread-safe for calls; only the
    supervisor's monitor thread connects and disconnects."""

    def __init__(self, credentials: Credentials) -> None:
        self._transport = open_transport(credentials, ADMIN_TIMEOUT)
        self._endpoints: dict[int, str] = {}

    def connect(self, process: int, endpoint: str) -> None:
        """Process ``process`` now serves on ``endpoint``."""
        self._endpoints[process] = endpoint

    def disconnect(self, process: int) -> None:
        self._endpoints.pop(process, None)

    def close(self) -> None:
        self._endpoints.clear()
        self._transport.close()

    def call(self, process: int, method: str, request: Message, answer: type[Message]) -> Message:
        """``Shard.<method>(request)`` on process ``process``; its answer as ``answer``."""
        endpoint = self._endpoints.get(process)
        if endpoint is None:
            raise errors.StoreClosedError(f"shard process {process} is not running")
        what = f"shard process {process}"
        try:
            raw = self._transport.call(
                endpoint, method_path("Shard", method), request.SerializeToString(), what=what
            )
        except errors.BrokerUnavailableError as error:
            raise errors.StoreClosedError(str(error)) from error
        return answer.FromString(raw)

    def probe(self, process: int, timeout: float) -> PendingCall:
        """Start the standard health check of process ``process`` (its empty request asks
        about the whole server), bounded by ``timeout``; the answer is not waited for.
        Its ``result()`` raises if the process did not answer in time."""
        endpoint = self._endpoints.get(process)
        if endpoint is None:
            raise errors.StoreClosedError(f"shard process {process} is not running")
        return self._transport.start(endpoint, HEALTH_CHECK, b"", _ignore, timeout=timeout)

    def host_topic(self, processes: Sequence[int], topic: str, layout: Sequence[int]) -> None:
        """Tell each of ``processes`` about ``topic``; one that is not reachable is
        skipped with a warning (a process that (re)starts reads routes.json itself, and
        gets every topic again once it serves)."""
        request = host_topic_request(topic, layout)
        for process in processes:
            try:
                self.call(process, "HostTopic", request, pb.HostTopicResponse)
            except errors.StoreClosedError as error:
                log.warning("could not tell about topic %s: %s", topic, error)

    def host_all(self, process: int, layouts: Mapping[str, Sequence[int]]) -> None:
        """Tell process ``process`` about every topic (it has just restarted)."""
        for topic, layout in layouts.items():
            self.call(process, "HostTopic", host_topic_request(topic, layout), pb.HostTopicResponse)

    def drop_topic(self, processes: Sequence[int], topic: str) -> None:
        for process in processes:
            self.call(process, "DropTopic", pb.DropTopicRequest(topic=topic), pb.DropTopicResponse)

    def queue_offsets(self, process: int, topic: str, queue_id: int) -> tuple[int, int]:
        request = pb.QueueOffsetsRequest(topic=topic, queue_id=queue_id)
        response = self.call(process, "QueueOffsets", request, pb.QueueOffsetsResponse)
        assert isinstance(response, pb.QueueOffsetsResponse)
        return response.min_offset, response.max_offset


def _ignore(_call: PendingCall) -> None:
    """A probe's answer is read by the monitor's next round, not on the transport's
    thread."""
