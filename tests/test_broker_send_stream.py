"""SendStream through `rmq serve` on loopback: pipelined batches are answered in order
with their sequence numbers, a refused batch gets an error answer while the stream goes
on, and what was acknowledged is stored."""

from __future__ import annotations

import grpc
from rmq.proto.v1 import broker_pb2 as pb
from rmq.proto.v1 import broker_pb2_grpc as pb_grpc

from tests.support.brokers import Brokers

TOPIC = "streamed"


def _batch(sequence: int, bodies: list[bytes], **fields: str) -> pb.SendRequest:
    request = pb.SendRequest(topic=TOPIC, queue_id=0, sequence=sequence)
    for body in bodies:
        request.messages.add(body=body, **fields)
    return request


def test_pipelined_batches_are_answered_in_order(brokers: Brokers) -> None:
    client = brokers.client(brokers.start(shards=2))
    client.create_topic(TOPIC, queues=2)
    endpoint = client.route(TOPIC).queues[0].endpoint
    requests = [
        _batch(1, [b"a1", b"a2"], tags="TagA"),
        _batch(2, [b"b1"]),
        _batch(3, [b"refused"], tags=""),  # empty tags: the checked path refuses it
        _batch(4, [b"c1", b"c2", b"c3"]),
    ]
    for message in requests[3].messages:
        message.keys.append("k")
    stub = pb_grpc.ShardStub(grpc.insecure_channel(endpoint))
    answers = list(stub.SendStream(iter(requests), timeout=30))

    assert [a.sequence for a in answers] == [1, 2, 3, 4]
    assert [a.WhichOneof("outcome") for a in answers] == ["result", "result", "error", "result"]
    assert answers[2].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert "tags" in answers[2].error.message
    assert list(answers[0].result.queue_offsets) == [0, 1]
    assert list(answers[1].result.queue_offsets) == [2]
    assert list(answers[3].result.queue_offsets) == [3, 4, 5]
    assert answers[3].result.sequence == 4

    pulled = stub.Pull(pb.PullRequest(topic=TOPIC, queue_id=0, offset=0, max_messages=10))
    assert [m.body for m in pulled.messages] == [b"a1", b"a2", b"b1", b"c1", b"c2", b"c3"]
    assert [m.tags for m in pulled.messages[:2]] == ["TagA", "TagA"]
    assert list(pulled.messages[5].keys) == ["k"]


def test_malformed_bytes_end_the_stream_with_invalid_argument(brokers: Brokers) -> None:
    client = brokers.client(brokers.start(shards=1))
    client.create_topic(TOPIC, queues=1)
    endpoint = client.route(TOPIC).queues[0].endpoint
    channel = grpc.insecure_channel(endpoint)
    raw_stream = channel.stream_stream(
        "/rmq.v1.Shard/SendStream",
        request_serializer=None,
        response_deserializer=pb.SendStreamResponse.FromString,
    )
    good = _batch(7, [b"ok"]).SerializeToString()
    call = raw_stream(iter([good, b"\x0a\x05ab"]), timeout=30)
    first = next(call)
    assert first.sequence == 7 and first.WhichOneof("outcome") == "result"
    try:
        next(call)
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    else:
        raise AssertionError("malformed bytes were answered")
    channel.close()
