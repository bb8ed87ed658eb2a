"""The shard's native data plane (the engine's own gRPC server in front of the Python
one) answers sends and pulls as the broker's API says; its status table is the Python
broker's; and a long poll waiting on it wakes for a send the Python server's SendStream
stores (through the same engine function).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from rmq import errors
from rmq._rmqcore import native_status_codes
from rmq.broker.status import STATUS_BY_ERROR
from rmq.cluster.local import LocalBroker
from rmq.proto.v1 import broker_pb2 as pb

from tests.support.brokers import Brokers
from tests.support.engine_errors import ENGINE_ERRORS
from tests.support.native_requests import native_requests


@pytest.fixture(scope="module")
def broker(module_brokers: Brokers) -> LocalBroker:
    return module_brokers.start(shards=1)


class Shard:
    """Raw calls to the shard process that serves a topic."""

    def __init__(self, endpoint: str) -> None:
        self.channel = grpc.insecure_channel(endpoint)

    def call(self, method: str, request: Any, answer: Any, timeout: float = 10) -> Any:
        raw = self.channel.unary_unary(f"/rmq.v1.Shard/{method}")(
            request.SerializeToString(), timeout=timeout
        )
        return answer.FromString(raw)


@pytest.fixture
def shard(broker: LocalBroker, module_brokers: Brokers) -> Iterator[tuple[str, Shard]]:
    topic = f"plane-{uuid.uuid4().hex[:8]}"
    route = module_brokers.client(broker).create_topic(topic, 2)
    shard = Shard(route.queues[0].endpoint)
    yield topic, shard
    shard.channel.close()


def message(i: int, **fields: Any) -> pb.Message:
    return pb.Message(
        body=f"body-{i}".encode(),
        tags="even" if i % 2 == 0 else "odd",
        keys=[f"k{i}"],
        properties={"n": str(i)},
        **fields,
    )


def field(number: int, value: bytes) -> bytes:
    """A length-delimited protobuf field, written by hand."""
    out = bytearray([number << 3 | 2])
    length = len(value)
    while length >= 0x80:
        out.append(length & 0x7F | 0x80)
        length >>= 7
    out.append(length)
    return bytes(out) + value


def comparable(response: pb.PullResponse) -> list[tuple[Any, ...]]:
    return [
        (m.topic, m.queue_id, m.queue_offset, m.body, m.tags, list(m.keys), dict(m.properties))
        for m in response.messages
    ]


def test_the_native_status_table_is_the_python_brokers() -> None:
    native = native_status_codes()
    assert {cls.__name__ for cls in ENGINE_ERRORS} <= set(native)
    for name, code in native.items():
        assert code == STATUS_BY_ERROR[getattr(errors, name)].value[0], name


def test_sends_and_pulls_are_answered_as_the_api_says(shard: tuple[str, Shard]) -> None:
    topic, shard_ = shard
    sent = shard_.call(
        "Send",
        pb.SendRequest(
            topic=topic, queue_id=0, messages=[message(i) for i in range(3)], sequence=7
        ),
        pb.SendResponse,
    )
    assert (list(sent.queue_offsets), sent.sequence, len(sent.commitlog_offsets)) == (
        [0, 1, 2],
        7,
        3,
    )
    # The batch's msgIds are not listed: the answer names the store host they derive from.
    assert (list(sent.msg_ids), bool(sent.store_host)) == ([], True)
    batches = shard_.call(
        "SendBatches",
        pb.SendBatchesRequest(
            batches=[
                pb.SendRequest(topic=topic, queue_id=0, messages=[message(3)], sequence=8),
                pb.SendRequest(topic=topic, queue_id=1, messages=[message(4)], sequence=9),
                pb.SendRequest(topic=topic, queue_id=0, messages=[], sequence=10),
            ]
        ),
        pb.SendBatchesResponse,
    )
    outcomes = [
        (a.sequence, a.WhichOneof("outcome"), list(a.result.queue_offsets)) for a in batches.answers
    ]
    assert outcomes[:2] == [(8, "result", [3]), (9, "result", [0])]
    assert (batches.answers[2].sequence, batches.answers[2].error.code) == (
        10,
        grpc.StatusCode.INVALID_ARGUMENT.value[0],
    )
    everything = shard_.call(
        "Pull", pb.PullRequest(topic=topic, queue_id=0, offset=0), pb.PullResponse
    )
    assert [m[3] for m in comparable(everything)] == [b"body-0", b"body-1", b"body-2", b"body-3"]
    assert comparable(everything)[1] == (
        topic, 0, 1, b"body-1", "odd", ["k1"], {"n": "1"},
    )  # fmt: skip
    assert (everything.next_offset, everything.min_offset, everything.max_offset) == (4, 0, 4)
    assert {m.store_host for m in everything.messages} == {sent.store_host}
    evens = shard_.call(
        "Pull", pb.PullRequest(topic=topic, queue_id=0, offset=0, tags=["even"]), pb.PullResponse
    )
    assert ([m[2] for m in comparable(evens)], evens.next_offset) == ([0, 2], 4)
    started = time.monotonic()
    waited = shard_.call(
        "Pull", pb.PullRequest(topic=topic, queue_id=0, offset=4, wait_ms=300), pb.PullResponse
    )
    assert time.monotonic() - started >= 0.25
    assert (comparable(waited), waited.next_offset, waited.max_offset) == ([], 4, 4)
    with pytest.raises(grpc.RpcError) as caught:
        shard_.call("Pull", pb.PullRequest(topic=topic, queue_id=0, offset=99), pb.PullResponse)
    assert caught.value.code() is grpc.StatusCode.OUT_OF_RANGE
    assert "the queue holds offsets 0 to 4" in (caught.value.details() or "")


def test_a_consumers_positions_are_answered_natively(
    broker: LocalBroker, shard: tuple[str, Shard]
) -> None:
    """QueueOffsets and FetchOffsets come from the engine, not the Python server: the
    queue's bounds after sends, and only the queues the group committed."""
    topic, shard_ = shard
    shard_.call(
        "Send",
        pb.SendRequest(topic=topic, queue_id=1, messages=[message(i) for i in range(5)]),
        pb.SendResponse,
    )
    shard_.call(
        "CommitOffsets",
        pb.CommitOffsetsRequest(
            group="positions", topic=topic, offsets=[pb.QueueOffset(queue_id=1, offset=3)]
        ),
        pb.CommitOffsetsResponse,
    )
    before = native_requests(broker)
    bounds = shard_.call(
        "QueueOffsets", pb.QueueOffsetsRequest(topic=topic, queue_id=1), pb.QueueOffsetsResponse
    )
    assert (bounds.min_offset, bounds.max_offset) == (0, 5)
    fetched = shard_.call(
        "FetchOffsets",
        pb.FetchOffsetsRequest(group="positions", topic=topic, queue_ids=[0, 1]),
        pb.FetchOffsetsResponse,
    )
    assert [(o.queue_id, o.offset) for o in fetched.offsets] == [(1, 3)]
    after = native_requests(broker)
    for method in ("QueueOffsets", "FetchOffsets"):
        key = (f"/rmq.v1.Shard/{method}", "answered")
        assert after.get(key, 0) == before.get(key, 0) + 1, method


def test_a_waiting_pull_wakes_for_a_send_through_send_stream(shard: tuple[str, Shard]) -> None:
    topic, shard_ = shard
    result: list[pb.PullResponse] = []
    waiter = threading.Thread(
        target=lambda: result.append(
            shard_.call(
                "Pull",
                pb.PullRequest(topic=topic, queue_id=1, offset=0, wait_ms=20_000),
                pb.PullResponse,
                timeout=30,
            )
        )
    )
    started = time.monotonic()
    waiter.start()
    time.sleep(0.5)
    # SendStream is served by the Python server, which stores through the data plane's
    # send function; that must wake the data plane's waiting pull. A property given twice
    # keeps its last value, as a protobuf map does.
    first = pb.Message.PropertiesEntry(key="n", value="first").SerializeToString()
    inner = field(4, first) + message(9).SerializeToString()
    duplicated = pb.SendRequest(topic=topic, queue_id=1).SerializeToString() + field(3, inner)
    stream = shard_.channel.stream_stream("/rmq.v1.Shard/SendStream")
    [answer] = list(stream(iter([duplicated]), timeout=10))
    assert pb.SendStreamResponse.FromString(answer).WhichOneof("outcome") == "result"
    waiter.join(10)
    assert result, "the pull did not return"
    assert time.monotonic() - started < 10
    [got] = result[0].messages
    assert (got.body, got.properties["n"]) == (b"body-9", "9")
