"""The shard's two data planes answer alike: the native one (the engine's own gRPC server
in front, the default) and the Python one (``--data-plane python``, and every broker with
TLS). Both run here side by side on the same requests; the native plane's status table is
the Python broker's; and a long poll waiting on one side wakes for a send on the other.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from rmq._rmqcore import native_status_codes
from rmq.broker.status import STATUS_BY_ERROR
from rmq.cluster.local import LocalBroker
from rmq.proto.v1 import broker_pb2 as pb

from tests.support.brokers import Brokers
from tests.support.engine_errors import ENGINE_ERRORS

PLANES = ("native", "python")


@pytest.fixture(scope="module")
def brokers_by_plane(module_brokers: Brokers) -> dict[str, LocalBroker]:
    return {plane: module_brokers.start(shards=1, args=["--data-plane", plane]) for plane in PLANES}


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
def shards(
    brokers_by_plane: dict[str, LocalBroker], module_brokers: Brokers
) -> Iterator[tuple[str, dict[str, Shard]]]:
    topic = f"plane-{uuid.uuid4().hex[:8]}"
    out = {}
    for plane, broker in brokers_by_plane.items():
        route = module_brokers.client(broker).create_topic(topic, 2)
        out[plane] = Shard(route.queues[0].endpoint)
    yield topic, out
    for shard in out.values():
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
    assert sorted(native) == sorted(cls.__name__ for cls in ENGINE_ERRORS)
    for cls in ENGINE_ERRORS:
        assert native[cls.__name__] == STATUS_BY_ERROR[cls].value[0], cls.__name__


def test_both_planes_store_and_answer_alike(shards: tuple[str, dict[str, Shard]]) -> None:
    topic, by_plane = shards
    answers: dict[str, list[Any]] = {}
    for plane, shard in by_plane.items():
        sent = shard.call(
            "Send",
            pb.SendRequest(
                topic=topic, queue_id=0, messages=[message(i) for i in range(3)], sequence=7
            ),
            pb.SendResponse,
        )
        assert (list(sent.queue_offsets), sent.sequence, len(sent.msg_ids)) == ([0, 1, 2], 7, 3)
        batches = shard.call(
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
            (a.sequence, a.WhichOneof("outcome"), list(a.result.queue_offsets))
            for a in batches.answers
        ]
        assert outcomes[:2] == [(8, "result", [3]), (9, "result", [0])]
        assert batches.answers[2].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        everything = shard.call(
            "Pull", pb.PullRequest(topic=topic, queue_id=0, offset=0), pb.PullResponse
        )
        evens = shard.call(
            "Pull",
            pb.PullRequest(topic=topic, queue_id=0, offset=0, tags=["even"]),
            pb.PullResponse,
        )
        started = time.monotonic()
        waited = shard.call(
            "Pull", pb.PullRequest(topic=topic, queue_id=0, offset=4, wait_ms=300), pb.PullResponse
        )
        assert time.monotonic() - started >= 0.25
        answers[plane] = [
            comparable(everything),
            (everything.next_offset, everything.min_offset, everything.max_offset),
            comparable(evens),
            evens.next_offset,
            (comparable(waited), waited.next_offset, waited.max_offset),
        ]
        with pytest.raises(grpc.RpcError) as caught:
            shard.call("Pull", pb.PullRequest(topic=topic, queue_id=0, offset=99), pb.PullResponse)
        assert caught.value.code() is grpc.StatusCode.OUT_OF_RANGE
    assert answers["native"] == answers["python"]
    assert [m[3] for m in answers["native"][0]] == [b"body-0", b"body-1", b"body-2", b"body-3"]


def test_a_waiting_pull_wakes_for_a_send_the_python_path_stores(
    shards: tuple[str, dict[str, Shard]],
) -> None:
    topic, by_plane = shards
    shard = by_plane["native"]
    result: list[pb.PullResponse] = []
    waiter = threading.Thread(
        target=lambda: result.append(
            shard.call(
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
    # A property given twice: the native plane leaves it to the Python path (a map keeps
    # the last value), which stores it and must wake the native plane's waiting pull.
    first = pb.Message.PropertiesEntry(key="n", value="first").SerializeToString()
    inner = field(4, first) + message(9).SerializeToString()
    duplicated = pb.SendRequest(topic=topic, queue_id=1).SerializeToString() + field(3, inner)
    shard.channel.unary_unary("/rmq.v1.Shard/Send")(duplicated, timeout=10)
    waiter.join(10)
    assert result, "the pull did not return"
    assert time.monotonic() - started < 10
    [got] = result[0].messages
    assert (got.body, got.properties["n"]) == (b"body-9", "9")
