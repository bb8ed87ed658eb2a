"""A topic's queues on a running broker (``endpoint``): their offsets for the driver,
their messages for the executors (``Shard.Pull`` with the tag filter, no waiting)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

from rmq._rmqcore import PulledColumns, decode_pull_columns, decode_pull_response
from rmq.client import Client
from rmq.client.transport import method_path
from rmq.errors import BrokerNotFoundError, BrokerUnavailableError, RmqError
from rmq.proto.v1 import broker_pb2 as pb
from rmq.spark.queue_read import Pull, RangeRead, first_readable, read_range
from rmq.spark.rows import QueueMessage

__all__ = ["BrokerQueues", "read_broker_range"]

# How long the driver tries to reach the broker when the query starts: an unreachable
# endpoint should fail the query quickly, not after the client's usual 30 s of retries.
_CONNECT_TIMEOUT = 5.0
_RETRY_TIMEOUT = 30.0
_MAX_PULL_BYTES = 8 * 1024 * 1024
_PULL = method_path("Shard", "Pull")

_clients: dict[tuple[str, str | None], Client] = {}
_clients_lock = threading.Lock()


def _client(endpoint: str, token: str | None) -> Client:
    """One client per broker per Python worker: Spark reuses its workers across tasks,
    and a client's channels (and their connections) are worth keeping."""
    with _clients_lock:
        client = _clients.get((endpoint, token))
        if client is None:
            client = _clients[(endpoint, token)] = Client(
                endpoint, token=token, retry_timeout=_RETRY_TIMEOUT
            )
        return client


class BrokerQueues:
    """The driver's view. Making one checks that the broker answers and has the topic."""

    def __init__(self, endpoint: str, topic: str, token: str | None) -> None:
        self.endpoint = endpoint
        self.topic = topic
        self.token = token
        self.client = Client(endpoint, token=token, retry_timeout=_CONNECT_TIMEOUT)
        try:
            self.bounds()
        except BrokerUnavailableError as error:
            self.client.close()
            raise BrokerUnavailableError(
                f"cannot reach the rmq broker at {endpoint} (option endpoint): {error}",
                error.code,
            ) from None
        except RmqError:
            self.client.close()
            raise
        self.client.retry_timeout = _RETRY_TIMEOUT

    def bounds(self) -> dict[int, tuple[int, int]]:
        """Per queue id, (first offset, next offset to be written)."""
        try:
            queues = self.client.describe_topic(self.topic)
        except BrokerNotFoundError as error:
            raise BrokerNotFoundError(
                f"topic {self.topic!r} does not exist on the rmq broker at {self.endpoint} "
                f"({error})",
                error.code,
            ) from None
        return {q.queue_id: (q.min_offset, q.max_offset) for q in queues}

    def first_offsets(self, bounds: dict[int, tuple[int, int]]) -> dict[int, int]:
        """Per queue, its first readable offset (see ``first_readable``)."""
        return {
            queue: first_readable(broker_pull(self.client, self.topic, queue, ()), low, high)
            for queue, (low, high) in bounds.items()
        }

    def shard_names(self) -> dict[int, str]:
        """Per queue id, the name of its shard's directory (``shard-N``)."""
        return {q.queue_id: f"shard-{q.shard}" for q in self.client.route(self.topic).queues}

    def offsets_for_time(self, timestamp_ms: int, queues: Sequence[int]) -> dict[int, int]:
        return {q: self.client.offset_for_time(self.topic, q, timestamp_ms) for q in queues}

    def close(self) -> None:
        self.client.close()


def read_broker_range(
    endpoint: str, token: str | None, tags: Sequence[str], read: RangeRead
) -> Iterator[PulledColumns]:
    """The range's messages, pulled from the shard that serves the queue, as columns:
    the native decoder turns each Pull response into Arrow buffers, with no Python
    object per message."""
    client = _client(endpoint, token)
    topic, queue_id = read.topic, read.queue_id
    pull = _columns_pull(client, topic, queue_id, tags, read.end, read.keys)
    return read_range(read, pull, lambda: client.queue_offsets(topic, queue_id))


def _raw_pull(
    client: Client, topic: str, queue_id: int, tags: Sequence[str]
) -> Callable[[int, int], bytes]:
    """The encoded ``Shard.Pull`` response (no waiting: the offsets asked for exist)."""

    def pull(offset: int, max_count: int) -> bytes:
        request = pb.PullRequest(
            topic=topic, queue_id=queue_id, offset=offset, max_messages=max_count,
            max_bytes=_MAX_PULL_BYTES, tags=list(tags), wait_ms=0,
        )  # fmt: skip
        what = f"pull {topic}/{queue_id} at {offset}"
        shard = client.route(topic).queues[queue_id].endpoint
        try:
            raw = client.call_bytes(what, shard, _PULL, request.SerializeToString())
        except BrokerUnavailableError:
            # The shard may have moved: once more with a fresh route.
            shard = client.route(topic, refresh=True).queues[queue_id].endpoint
            raw = client.call_bytes(what, shard, _PULL, request.SerializeToString())
        return raw

    return pull


def broker_pull(
    client: Client, topic: str, queue_id: int, tags: Sequence[str]
) -> Pull[Sequence[QueueMessage]]:
    """``Pull`` over ``Shard.Pull``, as message objects (the driver's few probes)."""
    raw_pull = _raw_pull(client, topic, queue_id, tags)

    def pull(offset: int, max_count: int) -> tuple[Sequence[QueueMessage], int]:
        messages, next_offset, _, _ = decode_pull_response(raw_pull(offset, max_count))
        return messages, next_offset

    return pull


def _columns_pull(
    client: Client,
    topic: str,
    queue_id: int,
    tags: Sequence[str],
    end: int,
    keys: Sequence[str],
) -> Pull[PulledColumns]:
    """``Pull`` over ``Shard.Pull``, as columns, rows from ``end`` on and without one of
    ``keys`` (if given) left out by the decoder."""
    raw_pull = _raw_pull(client, topic, queue_id, tags)

    def pull(offset: int, max_count: int) -> tuple[PulledColumns, int]:
        pulled = decode_pull_columns(raw_pull(offset, max_count), end_offset=end, keys=list(keys))
        return pulled, pulled.next_offset

    return pull
