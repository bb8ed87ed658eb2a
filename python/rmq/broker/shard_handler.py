"""What a shard does for each request: protobuf in, store calls, protobuf out.

A shard process serves one or more shard directories (normally one; more after a
restart with fewer shard processes than directories). ``stores`` maps each directory's
index to its open ``rmq.Store``; ``layouts`` says, for each topic, which directory holds
each queue. Every argument is checked before a store is touched.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import rmq
from rmq import errors
from rmq.broker import convert
from rmq.broker.longpoll import QueueSignals
from rmq.broker.validation import (
    Limits,
    bounded,
    check_group,
    check_offset,
    check_queue_id,
    check_topic,
    parse_msg_id,
)
from rmq.errors import QueueNotHostedError, QueueOutOfRangeError, UnimplementedError
from rmq.proto.v1 import broker_pb2 as pb

log = logging.getLogger(__name__)


class ShardHandler:
    """Thread-safe: the gRPC server calls it from many threads; the stores are thread-safe
    and the topic layouts are replaced whole under a lock."""

    def __init__(
        self,
        stores: Mapping[int, rmq.Store],
        layouts: Mapping[str, Sequence[int]] | None = None,
        *,
        limits: Limits | None = None,
        max_waiting_pulls: int = 32,
    ) -> None:
        self._stores = dict(stores)
        self._limits = limits or Limits()
        self._lock = threading.Lock()
        self._layouts: dict[str, tuple[int, ...]] = {}
        self._signals = QueueSignals(max_waiting_pulls)
        self._native: Any = None
        for topic, shards in (layouts or {}).items():
            self.host_topic(topic, shards)

    @property
    def limits(self) -> Limits:
        return self._limits

    def attach_native(self, server: Any) -> None:
        """The process's native data plane (``rmq._rmqcore.ShardServer``) answers sends
        and pulls in front of this handler: it learns every topic layout, and both share
        the long-poll wake-ups."""
        self._signals.attach(server)
        self._native = server
        for topic, shards in self.layouts().items():
            server.host_topic(topic, list(shards))

    # ---- topic layout (from the supervisor) ----

    def host_topic(self, topic: str, shards: Sequence[int]) -> None:
        """Learn that queue ``i`` of ``topic`` lives in directory ``shards[i]``; create the
        topic in the stores of this process that hold any of its queues."""
        check_topic(topic)
        if not shards:
            raise errors.InvalidArgumentError("a topic needs at least one queue", "queues")
        for index, shard in enumerate(shards):
            if shard < 0:
                raise errors.InvalidArgumentError(
                    f"queue {index} is assigned to shard {shard}", "queues"
                )
        for shard in sorted(set(shards)):
            store = self._stores.get(shard)
            if store is not None:
                store.create_topic(topic, len(shards))
        with self._lock:
            known = len(self._layouts.get(topic, ()))
            self._layouts[topic] = tuple(shards)
        if self._native is not None:
            self._native.host_topic(topic, list(shards))
            if len(shards) > known:
                # New queues (a topic created or grown): their files now, not on the
                # data plane at their first send.
                self._native.prepare_queues(topic, known)

    def drop_topic(self, topic: str) -> None:
        check_topic(topic)
        with self._lock:
            shards = self._layouts.pop(topic, ())
        if self._native is not None:
            self._native.drop_topic(topic)
        for shard in sorted(set(shards)):
            store = self._stores.get(shard)
            if store is not None and topic in store.topics():
                store.delete_topic(topic)

    def topics(self) -> list[str]:
        with self._lock:
            return sorted(self._layouts)

    def hosts(self, topic: str) -> bool:
        """Whether ``topic`` exists (has a layout), without copying the layouts."""
        with self._lock:
            return topic in self._layouts

    def layouts(self) -> dict[str, tuple[int, ...]]:
        """Each topic's layout: the shard directory of each queue."""
        with self._lock:
            return dict(self._layouts)

    def _layout(self, topic: str) -> tuple[int, ...]:
        check_topic(topic)
        with self._lock:
            layout = self._layouts.get(topic)
        if layout is None:
            raise errors.NotFoundError(f"topic {topic!r} does not exist")
        return layout

    def _store_for(self, topic: str, queue_id: int) -> rmq.Store:
        layout = self._layout(topic)
        check_queue_id(queue_id)
        if queue_id >= len(layout):
            raise QueueOutOfRangeError(
                f"queue {queue_id} does not exist; topic {topic!r} has {len(layout)} queues "
                f"(0 to {len(layout) - 1})"
            )
        store = self._stores.get(layout[queue_id])
        if store is None:
            raise QueueNotHostedError(
                f"queue {queue_id} of topic {topic!r} lives on shard {layout[queue_id]}, "
                "which this process does not serve; refresh the route"
            )
        return store

    def locate(self, topic: str, queue_id: int) -> tuple[int, rmq.Store]:
        """The shard directory holding a queue, and its store (checked as for a send)."""
        store = self._store_for(topic, queue_id)
        return self._layout(topic)[queue_id], store

    def local_queues(self, topic: str) -> list[int]:
        """The queues of ``topic`` whose directory this process serves."""
        return [q for q, shard in enumerate(self._layout(topic)) if shard in self._stores]

    @property
    def signals(self) -> QueueSignals:
        """Long-poll wake-ups: every send through this process notifies its queue."""
        return self._signals

    def notify(self, topic: str, queue_id: int) -> None:
        self._signals.notify((topic, queue_id))

    def _stores_of(self, topic: str) -> list[rmq.Store]:
        layout = self._layout(topic)
        return [self._stores[s] for s in sorted(set(layout)) if s in self._stores]

    # ---- data plane ----

    def answer_send(self, raw: bytes, born_host: str | None = None) -> bytes:
        """One encoded ``SendRequest`` of a SendStream, stored by the native data plane's
        send function (the one every Send and SendBatches goes through): the encoded
        ``SendStreamResponse``, stored or refused with its status. Raises
        ``InvalidArgumentError`` when ``raw`` is not a ``SendRequest``."""
        if self._native is None:
            raise UnimplementedError("this shard process has no native data plane")
        answer: bytes = self._native.answer_send(raw, born_host)
        return answer

    def queue_offsets(self, request: pb.QueueOffsetsRequest) -> pb.QueueOffsetsResponse:
        store = self._store_for(request.topic, request.queue_id)
        return pb.QueueOffsetsResponse(
            min_offset=store.min_offset(request.topic, request.queue_id),
            max_offset=store.max_offset(request.topic, request.queue_id),
        )

    def commit_offsets(self, request: pb.CommitOffsetsRequest) -> pb.CommitOffsetsResponse:
        check_group(request.group)
        checked = []
        for entry in request.offsets:
            store = self._store_for(request.topic, entry.queue_id)
            check_offset(entry.offset)
            max_offset = store.max_offset(request.topic, entry.queue_id)
            if entry.offset > max_offset:
                raise errors.OffsetOutOfRangeError(
                    f"cannot commit offset {entry.offset} for queue {entry.queue_id} of "
                    f"topic {request.topic!r}: the queue ends at {max_offset}",
                    entry.offset,
                    store.min_offset(request.topic, entry.queue_id),
                    max_offset,
                )
            checked.append((store, entry.queue_id, entry.offset))
        for store, queue_id, offset in checked:
            store.commit_offset(request.group, request.topic, queue_id, offset)
        return pb.CommitOffsetsResponse()

    def fetch_offsets(self, request: pb.FetchOffsetsRequest) -> pb.FetchOffsetsResponse:
        check_group(request.group)
        response = pb.FetchOffsetsResponse()
        for queue_id in request.queue_ids:
            store = self._store_for(request.topic, queue_id)
            offset = store.committed_offset(request.group, request.topic, queue_id)
            if offset is not None:
                response.offsets.add(queue_id=queue_id, offset=offset)
        return response

    # ---- lookups (engine methods that arrive with the index work) ----

    def query_by_key(self, request: pb.QueryByKeyRequest) -> pb.QueryByKeyResponse:
        stores = self._stores_of(request.topic)
        if not request.key:
            raise errors.InvalidArgumentError("the key is empty", "key")
        check_offset(request.begin_timestamp, "begin_timestamp")
        check_offset(request.end_timestamp, "end_timestamp")
        limit = bounded(request.max_messages, 64, self._limits.max_lookup_messages, "max_messages")
        found: list[rmq.Message] = []
        for store in stores:
            query = _engine_method(store, "query_by_key")
            found.extend(
                query(
                    request.topic,
                    request.key,
                    begin=request.begin_timestamp,
                    end=request.end_timestamp or None,
                    max_count=limit,
                )
            )
        found.sort(key=lambda m: (m.store_timestamp, m.commitlog_offset), reverse=True)
        return pb.QueryByKeyResponse(messages=[convert.stored_message(m) for m in found[:limit]])

    def get_by_msg_id(self, request: pb.GetByMsgIdRequest) -> pb.GetByMsgIdResponse:
        host, port, offset = parse_msg_id(request.msg_id)
        for shard, store in sorted(self._stores.items()):
            if store_host_for(shard) == f"{host}:{port}":
                message = _message_by_id(store, request.msg_id.upper(), offset)
                return pb.GetByMsgIdResponse(message=convert.stored_message(message))
        raise errors.NotFoundError(
            f"msg_id {request.msg_id} names store host {host}:{port}, "
            "which is not a shard of this process"
        )

    def offset_for_time(self, request: pb.OffsetForTimeRequest) -> pb.OffsetForTimeResponse:
        store = self._store_for(request.topic, request.queue_id)
        check_offset(request.timestamp, "timestamp")
        offset = _engine_method(store, "offset_for_time")(
            request.topic, request.queue_id, request.timestamp
        )
        return pb.OffsetForTimeResponse(offset=offset)

    def close(self) -> None:
        """Release waiting pulls; the stores are closed by their owner."""
        self._signals.close()


def store_host_for(shard: int) -> str:
    """The store host written into shard ``shard``'s records, and so into its msgIds.

    Each shard directory has its own port number, so that a msgId names the shard
    that stored it (RocketMQ's msgId is store host, port and commit-log offset).
    """
    return f"127.0.0.1:{10911 + shard}"


def _message_by_id(store: rmq.Store, msg_id: str, offset: int) -> rmq.Message:
    """``Store.get_by_msg_id`` when the engine has it; else the record at the id's offset,
    checked to carry that id (an id is client input: a wrong offset is "not found")."""
    if hasattr(store, "get_by_msg_id"):
        message: rmq.Message = store.get_by_msg_id(msg_id)
        return message
    try:
        message = store.get_at(offset)
    except (errors.CorruptRecordError, errors.OffsetOutOfRangeError) as error:
        raise errors.NotFoundError(f"no message has msg_id {msg_id}: {error}") from error
    if message.msg_id.upper() != msg_id:
        raise errors.NotFoundError(f"no message has msg_id {msg_id}")
    return message


def _engine_method(store: rmq.Store, name: str) -> Any:
    method = getattr(store, name, None)
    if method is None:
        raise UnimplementedError(
            f"this build of the rmq engine has no Store.{name} (it arrives with the "
            "lookup work); upgrade rmq"
        )
    return method
