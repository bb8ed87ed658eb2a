"""Reliability promise 11 against a running broker: every malformed request gets a precise
status and message, nothing is stored, and every shard keeps serving."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
import rmq
from grpc_health.v1 import health_pb2, health_pb2_grpc
from rmq.cluster.local import LocalBroker
from rmq.proto.v1 import broker_pb2 as pb
from rmq.proto.v1 import broker_pb2_grpc as pb_grpc

from tests.support.bad_requests import CASES, TOPIC, message, send
from tests.support.brokers import Brokers
from tests.support.native_requests import native_requests

# Methods the shard's native data plane answers itself, always (never passed to Python).
NATIVE_METHODS = ("Send", "SendBatches", "Pull", "QueueOffsets", "FetchOffsets")


class Broker:
    def __init__(self, local: LocalBroker) -> None:
        self.local = local
        self.route_channel = grpc.insecure_channel(local.endpoint)
        self.route = pb_grpc.RouteStub(self.route_channel)
        layout = self.route.CreateTopic(pb.CreateTopicRequest(topic=TOPIC, queues=8))
        self.endpoints = {q.queue_id: q.endpoint for q in layout.queues}
        self.channels = {e: grpc.insecure_channel(e) for e in set(self.endpoints.values())}
        # A shard process and a queue it serves, and a queue it does not.
        self.shard_endpoint = self.endpoints[0]
        self.shard = pb_grpc.ShardStub(self.channels[self.shard_endpoint])
        self.local_queue = 0
        self.foreign_queue = next(q for q, e in self.endpoints.items() if e != self.shard_endpoint)
        self.shard.Send(pb.SendRequest(topic=TOPIC, queue_id=0, messages=[pb.Message(body=b"x")]))

    def raw(self, service: str, method: str) -> Callable[..., bytes]:
        channel = self.route_channel if service == "Route" else self.channels[self.shard_endpoint]
        return channel.unary_unary(f"/rmq.v1.{service}/{method}")

    def snapshot(self) -> dict[str, Any]:
        """What the broker stores, read beside it through read-only stores."""
        data = self.local.data_dir
        state: dict[str, Any] = {
            "files": sorted(
                str(p)
                for p in data.parent.rglob("*")
                if "serve.log" not in p.name and p.name != "serve.json"
            )
        }
        for shard in sorted(data.glob("shard-*")):
            with rmq.Store(shard, read_only=True) as store:
                state[shard.name] = (
                    store.commitlog_max_offset(),
                    sorted(store.topics()),
                    [store.max_offset(TOPIC, q) for q in range(8)],
                )
        return state

    def close(self) -> None:
        for channel in [self.route_channel, *self.channels.values()]:
            channel.close()


@pytest.fixture(scope="module")
def broker(module_brokers: Brokers) -> Iterator[Broker]:
    broker = Broker(module_brokers.start(shards=2))
    yield broker
    broker.close()


MALFORMED = [
    ("Shard", method)
    for method in (
        "Send",
        "SendBatches",
        "Pull",
        "QueueOffsets",
        "CommitOffsets",
        "FetchOffsets",
        "GetByMsgId",
        "HostTopic",
    )
] + [("Route", method) for method in ("GetRoute", "CreateTopic", "DeleteTopic", "DescribeTopic")]


def check_unchanged(broker: Broker, before: dict[str, Any]) -> None:
    assert broker.snapshot() == before, "a rejected request changed the store"


def check_alive(broker: Broker) -> None:
    for endpoint, channel in broker.channels.items():
        status = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
        assert status.status == health_pb2.HealthCheckResponse.SERVING, endpoint
    state = broker.local.state()
    assert all(p["serving"] and p["restarts"] == 0 for p in state["processes"]), state


@pytest.mark.parametrize(
    ("case", "service", "method", "request_", "code", "fragment"), CASES, ids=[c[0] for c in CASES]
)
def test_bad_request_gets_a_precise_status_and_stores_nothing(
    broker: Broker,
    case: str,
    service: str,
    method: str,
    request_: Any,
    code: grpc.StatusCode,
    fragment: str,
) -> None:
    if case == "queue of another shard":
        request_ = send(queue_id=broker.foreign_queue)
    before = broker.snapshot()
    counted = native_requests(broker.local)
    with pytest.raises(grpc.RpcError) as caught:
        broker.raw(service, method)(request_.SerializeToString(), timeout=30)
    assert caught.value.code() is code, caught.value.details()
    assert fragment in (caught.value.details() or ""), caught.value.details()
    check_unchanged(broker, before)
    check_alive(broker)
    if method in NATIVE_METHODS:
        check_answered_natively(broker, counted, method)


def check_answered_natively(
    broker: Broker, before: dict[tuple[str, str], float], method: str
) -> None:
    """The native data plane answered the request itself: the Python server got none."""
    path = f"/rmq.v1.Shard/{method}"
    after = native_requests(broker.local)
    assert after.get((path, "answered"), 0) == before.get((path, "answered"), 0) + 1
    for key, count in after.items():
        if key[1] == "declined":
            assert count == before.get(key, 0), f"{key} went to the Python server"


SEND_CASES = [c for c in CASES if c[2] == "Send" and c[4] is not grpc.StatusCode.RESOURCE_EXHAUSTED]


@pytest.mark.parametrize(
    ("case", "request_", "code", "fragment"),
    [(c[0], c[3], c[4], c[5]) for c in SEND_CASES],
    ids=[c[0] for c in SEND_CASES],
)
def test_a_bad_batch_of_send_batches_gets_its_own_status_natively(
    broker: Broker, case: str, request_: Any, code: grpc.StatusCode, fragment: str
) -> None:
    """A bad Send request as the middle batch of a SendBatches call: refused with the
    status a Send of it gets, while the batches around it are stored."""
    if case == "queue of another shard":
        request_ = send(queue_id=broker.foreign_queue)
    bad = pb.SendRequest()
    bad.CopyFrom(request_)
    bad.sequence = 2
    first, last = send(messages=[message(body=b"first")]), send(messages=[message(body=b"last")])
    first.sequence, last.sequence = 1, 3
    counted = native_requests(broker.local)
    raw = broker.raw("Shard", "SendBatches")(
        pb.SendBatchesRequest(batches=[first, bad, last]).SerializeToString(), timeout=30
    )
    answers = pb.SendBatchesResponse.FromString(raw).answers
    assert [a.sequence for a in answers] == [1, 2, 3]
    assert [a.WhichOneof("outcome") for a in answers] == ["result", "error", "result"]
    assert answers[2].result.queue_offsets[0] == answers[0].result.queue_offsets[0] + 1
    assert answers[1].error.code == code.value[0], answers[1].error.message
    assert fragment in answers[1].error.message
    check_answered_natively(broker, counted, "SendBatches")


@pytest.mark.parametrize(("service", "method"), MALFORMED, ids=[f"{s}.{m}" for s, m in MALFORMED])
def test_malformed_protobuf_is_invalid_argument(broker: Broker, service: str, method: str) -> None:
    before = broker.snapshot()
    counted = native_requests(broker.local)
    with pytest.raises(grpc.RpcError) as caught:
        broker.raw(service, method)(b"\x0a\xff\xff\xff\xff\x0f", timeout=10)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "malformed" in (caught.value.details() or "")
    check_unchanged(broker, before)
    if method in NATIVE_METHODS:
        check_answered_natively(broker, counted, method)


def test_a_burst_of_random_requests_leaves_every_shard_serving(broker: Broker) -> None:
    rng = random.Random(6)
    methods = [
        ("Shard", m)
        for m in (
            "Send",
            "Pull",
            "QueueOffsets",
            "CommitOffsets",
            "FetchOffsets",
            "QueryByKey",
            "GetByMsgId",
            "OffsetForTime",
        )
    ]
    methods += [("Route", m) for m in ("GetRoute", "DescribeTopic", "ListTopics")]
    codes: set[grpc.StatusCode] = set()
    before = broker.snapshot()
    for _ in range(400):
        service, method = rng.choice(methods)
        if rng.random() < 0.5:
            payload = rng.randbytes(rng.randrange(0, 64))
        else:  # structurally valid, semantically hostile
            payload = pb.SendRequest(
                topic=rng.choice(["", "..", "a/b", "nosuch", "x" * 200, "ok\x01"]),
                queue_id=rng.randrange(-(2**31), 2**31),
                messages=[pb.Message(body=rng.randbytes(8), properties={"k\x02": "v"})],
            ).SerializeToString()
        try:
            broker.raw(service, method)(payload, timeout=10)
        except grpc.RpcError as error:
            codes.add(error.code())
    assert grpc.StatusCode.UNKNOWN not in codes
    assert grpc.StatusCode.UNAVAILABLE not in codes
    check_unchanged(broker, before)
    check_alive(broker)
    # And real work still goes through.
    answer = broker.shard.Send(send(messages=[message(body=b"after the burst")]), timeout=10)
    assert len(answer.commitlog_offsets) == 1


def test_requests_without_the_token_are_refused_before_the_store(brokers: Brokers) -> None:
    local = brokers.start(shards=1, args=["--token", "s3cret"])
    route_channel = grpc.insecure_channel(local.endpoint)
    route = pb_grpc.RouteStub(route_channel)
    with pytest.raises(grpc.RpcError) as caught:
        route.CreateTopic(pb.CreateTopicRequest(topic="t", queues=1), timeout=10)
    assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
    auth = (("authorization", "Bearer s3cret"),)
    layout = route.CreateTopic(
        pb.CreateTopicRequest(topic="t", queues=1), metadata=auth, timeout=10
    )
    shard_channel = grpc.insecure_channel(layout.queues[0].endpoint)
    shard = pb_grpc.ShardStub(shard_channel)
    for metadata in [(), (("authorization", "Bearer wrong"),), (("authorization", "s3cret"),)]:
        with pytest.raises(grpc.RpcError) as caught:
            shard.Send(send(topic="t"), metadata=metadata, timeout=10)
        assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
        assert "token" in (caught.value.details() or "")
    # Health stays open for probes; the data plane works with the token.
    health = health_pb2_grpc.HealthStub(shard_channel).Check(
        health_pb2.HealthCheckRequest(), timeout=5
    )
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    pulled = shard.Pull(pb.PullRequest(topic="t", queue_id=0), metadata=auth, timeout=10)
    assert list(pulled.messages) == []  # the refused sends stored nothing
    assert len(shard.Send(send(topic="t"), metadata=auth, timeout=10).queue_offsets) == 1
    route_channel.close()
    shard_channel.close()
