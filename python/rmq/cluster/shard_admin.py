"""The supervisor's own calls to its shard processes: which topics they host, dropping a
topic, a queue's offsets.

One connection per shard process, opened when it serves and kept until it is replaced
or closed. A failed call raises the :mod:`rmq.errors` class for its gRPC status, naming
the process; a process that was never connected raises ``StoreClosedError``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import grpc

from rmq import errors
from rmq.client.credentials import Credentials
from rmq.proto.v1 import broker_pb2 as pb
from rmq.proto.v1 import broker_pb2_grpc as pb_grpc

log = logging.getLogger("rmq.supervisor")

ADMIN_TIMEOUT = 30.0
# Reconnect quickly: a restarted shard is back on the same port within a second or two.
CHANNEL_OPTIONS: list[tuple[str, int | str]] = [
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.enable_retries", 0),
]


def open_channel(endpoint: str, credentials: Credentials) -> grpc.Channel:
    """A grpcio channel to a shard process with the supervisor's credentials."""
    options = list(CHANNEL_OPTIONS)
    if credentials.uses_tls:
        if credentials.server_name:
            options.append(("grpc.ssl_target_name_override", credentials.server_name))
        secure = grpc.ssl_channel_credentials(root_certificates=credentials.tls_root_cert)
        return grpc.secure_channel(endpoint, secure, options=options)
    return grpc.insecure_channel(endpoint, options=options)


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
        self._credentials = credentials
        self._channels: dict[int, grpc.Channel] = {}
        self._stubs: dict[int, pb_grpc.ShardStub] = {}

    def connect(self, process: int, endpoint: str) -> None:
        """(Re)connect to process ``process``, which now serves on ``endpoint``."""
        self.disconnect(process)
        self._channels[process] = channel = open_channel(endpoint, self._credentials)
        self._stubs[process] = pb_grpc.ShardStub(channel)

    def disconnect(self, process: int) -> None:
        self._stubs.pop(process, None)
        channel = self._channels.pop(process, None)
        if channel is not None:
            channel.close()

    def close(self) -> None:
        for process in list(self._channels):
            self.disconnect(process)

    def call(self, process: int, method: str, request: Any) -> Any:
        """``Shard.<method>(request)`` on process ``process``, with the token."""
        stub = self._stubs.get(process)
        if stub is None:
            raise errors.StoreClosedError(f"shard process {process} is not running")
        try:
            return getattr(stub, method)(
                request, timeout=ADMIN_TIMEOUT, metadata=self._credentials.metadata
            )
        except grpc.RpcError as error:
            code = error.code()
            message = f"shard process {process}: {error.details()}"
            if code is grpc.StatusCode.INVALID_ARGUMENT:
                raise errors.InvalidArgumentError(message) from error
            if code is grpc.StatusCode.NOT_FOUND:
                raise errors.NotFoundError(message) from error
            if code is grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise errors.DiskFullError(message) from error
            if code is grpc.StatusCode.UNAVAILABLE:
                raise errors.StoreClosedError(message) from error
            raise errors.RmqError(message) from error

    def host_topic(self, processes: Sequence[int], topic: str, layout: Sequence[int]) -> None:
        """Tell each of ``processes`` about ``topic``; one that is not reachable is
        skipped with a warning (a process that (re)starts reads routes.json itself, and
        gets every topic again once it serves)."""
        request = host_topic_request(topic, layout)
        for process in processes:
            try:
                self.call(process, "HostTopic", request)
            except errors.StoreClosedError as error:
                log.warning("could not tell about topic %s: %s", topic, error)

    def host_all(self, process: int, layouts: Mapping[str, Sequence[int]]) -> None:
        """Tell process ``process`` about every topic (it has just restarted)."""
        for topic, layout in layouts.items():
            self.call(process, "HostTopic", host_topic_request(topic, layout))

    def drop_topic(self, processes: Sequence[int], topic: str) -> None:
        for process in processes:
            self.call(process, "DropTopic", pb.DropTopicRequest(topic=topic))

    def queue_offsets(self, process: int, topic: str, queue_id: int) -> tuple[int, int]:
        response = self.call(
            process, "QueueOffsets", pb.QueueOffsetsRequest(topic=topic, queue_id=queue_id)
        )
        assert isinstance(response, pb.QueueOffsetsResponse)
        return response.min_offset, response.max_offset
