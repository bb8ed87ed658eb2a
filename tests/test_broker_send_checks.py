"""The shard's one send path (the native data plane, rmqnet ``send_check.rs`` and the
engine's message rules) on random requests through a running broker: it refuses exactly
the requests the broker's rules refuse, with INVALID_ARGUMENT and nothing stored, and
stores the others as protobuf reads them. The rules are written out here again, as the
test's own oracle."""

from __future__ import annotations

import random
from collections.abc import Iterator

import grpc
import pytest
from rmq.cluster.local import LocalBroker
from rmq.proto.v1 import broker_pb2 as pb
from rmq.proto.v1 import broker_pb2_grpc as pb_grpc

from tests.support.brokers import Brokers
from tests.support.native_requests import native_requests

TOPIC = "Checked"
MAX_MESSAGES = 64
MAX_BYTES = 64 * 1024
SEPARATORS = ("\x01", "\x02")
_TEXTS = ["", "a", "TagA", "with space", "sep\x01x", "sep\x02", "ключ", "TAGS", "KEYS", "p"]


def accepted(request: pb.SendRequest) -> bool:
    """The broker's rules for a send, independent of its code."""
    messages = request.messages
    if not 0 < len(messages) <= MAX_MESSAGES or sum(len(m.body) for m in messages) > MAX_BYTES:
        return False
    for message in messages:
        texts = list(message.keys) + [t for pair in message.properties.items() for t in pair]
        if message.HasField("tags"):
            texts.append(message.tags)
        if any(not text or any(s in text for s in SEPARATORS) for text in texts):
            return False
        if any(" " in key for key in message.keys):
            return False
        if any(name in ("TAGS", "KEYS") for name in message.properties):
            return False
    return True


def random_request(rng: random.Random) -> pb.SendRequest:
    request = pb.SendRequest(topic=TOPIC, queue_id=rng.randrange(2), sequence=rng.randrange(9))
    for _ in range(rng.choice([0, 1, 3, 20, 70])):
        message = request.messages.add(body=rng.randbytes(rng.choice([0, 1, 100, 4096])))
        if rng.random() < 0.5:
            message.tags = rng.choice(_TEXTS)
        for _ in range(rng.choice([0, 0, 1, 2])):
            message.keys.append(rng.choice(_TEXTS))
        for _ in range(rng.choice([0, 0, 1, 2])):
            message.properties[rng.choice(_TEXTS)] = rng.choice(_TEXTS)
        if rng.random() < 0.3:
            message.flag = rng.randrange(-(2**31), 2**31)
        if rng.random() < 0.2:
            message.born_timestamp = rng.randrange(1, 2**40)  # below any real "now"
    return request


@pytest.fixture(scope="module")
def broker(module_brokers: Brokers) -> LocalBroker:
    limits = ["--max-batch-messages", str(MAX_MESSAGES), "--max-batch-bytes", str(MAX_BYTES)]
    broker = module_brokers.start(shards=1, args=limits)
    module_brokers.client(broker).create_topic(TOPIC, 2)
    return broker


@pytest.fixture
def channel(broker: LocalBroker, module_brokers: Brokers) -> Iterator[grpc.Channel]:
    endpoint = module_brokers.client(broker).route(TOPIC).queues[0].endpoint
    with grpc.insecure_channel(endpoint) as channel:
        yield channel


@pytest.fixture
def shard(channel: grpc.Channel) -> pb_grpc.ShardStub:
    return pb_grpc.ShardStub(channel)


def test_refuses_what_the_rules_refuse_and_stores_the_rest_as_sent(
    broker: LocalBroker, shard: pb_grpc.ShardStub
) -> None:
    rng = random.Random(11)
    stored = refused = 0
    for _ in range(400):
        request = random_request(rng)
        queue = request.queue_id
        end = shard.Pull(pb.PullRequest(topic=TOPIC, queue_id=queue, max_messages=1)).max_offset
        if not accepted(request):
            with pytest.raises(grpc.RpcError) as caught:
                shard.Send(request, timeout=10)
            assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT, request
            after = shard.Pull(pb.PullRequest(topic=TOPIC, queue_id=queue, max_messages=1))
            assert after.max_offset == end
            refused += 1
            continue
        answer = shard.Send(request, timeout=10)
        assert (answer.sequence, list(answer.queue_offsets)) == (
            request.sequence,
            list(range(end, end + len(request.messages))),
        )
        pulled = shard.Pull(
            pb.PullRequest(topic=TOPIC, queue_id=queue, offset=end, max_messages=MAX_MESSAGES)
        ).messages
        assert len(pulled) == len(request.messages)
        for got, sent in zip(pulled, request.messages, strict=True):
            assert (got.body, got.HasField("tags"), got.tags) == (
                sent.body,
                sent.HasField("tags"),
                sent.tags,
            )
            assert (list(got.keys), dict(got.properties)) == (
                list(sent.keys),
                dict(sent.properties),
            )
            assert got.flag == sent.flag
            if sent.born_timestamp:
                assert got.born_timestamp == sent.born_timestamp
        stored += 1
    assert stored > 20 and refused > 20  # both sides were exercised
    counts = native_requests(broker)
    assert counts.get(("/rmq.v1.Shard/Send", "declined"), 0) == 0
    assert counts.get(("/rmq.v1.Shard/Send", "answered"), 0) >= stored + refused


@pytest.mark.parametrize(
    "raw",
    [
        b"\x0a\x05ab",  # a length past the end
        b"\x0a\x02\xff\xfe",  # a topic that is not UTF-8
        b"\x1a\x03\x0a\x05x",  # a message whose body overruns it
        b"\x10\x01\x0b",  # wire type 3 (groups)
    ],
)
def test_bytes_that_are_not_a_request_are_malformed(channel: grpc.Channel, raw: bytes) -> None:
    call = channel.unary_unary("/rmq.v1.Shard/Send")
    with pytest.raises(grpc.RpcError) as caught:
        call(raw, timeout=10)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "malformed SendRequest" in (caught.value.details() or "")
