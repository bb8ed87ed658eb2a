"""SendBatches through `rmq serve` on loopback: several queues' batches in one call, each
stored all or none on its own and answered in order; and the producer, which groups the
batches it has ready for one shard into such a call."""

from __future__ import annotations

import time

import grpc
import pytest
from rmq import errors
from rmq.client import Client
from rmq.proto.v1 import broker_pb2 as pb
from rmq.proto.v1 import broker_pb2_grpc as pb_grpc

from tests.support.brokers import Brokers

TOPIC = "grouped"


@pytest.fixture(scope="module")
def client(module_brokers: Brokers) -> Client:
    client = module_brokers.client(module_brokers.start(shards=1))
    client.create_topic(TOPIC, queues=4)
    return client


def _batch(queue_id: int, *bodies: bytes, **fields: str) -> pb.SendRequest:
    request = pb.SendRequest(topic=TOPIC, queue_id=queue_id, sequence=queue_id + 100)
    for body in bodies:
        request.messages.add(body=body, **fields)
    return request


def _raw_send_batches(client: Client) -> grpc.UnaryUnaryMultiCallable[bytes, bytes]:
    endpoint = client.route(TOPIC).queues[0].endpoint
    channel = grpc.insecure_channel(endpoint)
    return channel.unary_unary(
        "/rmq.v1.Shard/SendBatches", request_serializer=None, response_deserializer=None
    )


def _shard_stub(client: Client, queue_id: int) -> pb_grpc.ShardStub:
    """A raw grpcio stub of the shard of ``queue_id`` (the client has no stubs)."""
    return pb_grpc.ShardStub(grpc.insecure_channel(client.route(TOPIC).queues[queue_id].endpoint))


def _pull(client: Client, queue_id: int) -> list[bytes]:
    stub = _shard_stub(client, queue_id)
    pulled = stub.Pull(pb.PullRequest(topic=TOPIC, queue_id=queue_id, offset=0, max_messages=99))
    return [m.body for m in pulled.messages]


def test_each_batch_is_stored_or_refused_on_its_own_and_answered_in_order(
    client: Client,
) -> None:
    before = [len(_pull(client, q)) for q in range(4)]
    request = pb.SendBatchesRequest(
        batches=[
            _batch(0, b"q0-a", b"q0-b", tags="TagA"),
            _batch(1, b"refused", tags=""),  # empty tags: the checked path refuses it
            pb.SendRequest(topic=TOPIC, queue_id=9, messages=[pb.Message(body=b"nowhere")]),
            _batch(3, b"q3-a"),
        ]
    )
    send = _shard_stub(client, 0).SendBatches
    answers = send(request, timeout=30).answers

    assert [a.WhichOneof("outcome") for a in answers] == ["result", "error", "error", "result"]
    assert answers[1].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert "tags" in answers[1].error.message
    assert answers[2].error.code == grpc.StatusCode.OUT_OF_RANGE.value[0]
    assert list(answers[0].result.queue_offsets) == [before[0], before[0] + 1]
    assert answers[0].sequence == 100 and answers[3].result.sequence == 103
    assert _pull(client, 0)[before[0] :] == [b"q0-a", b"q0-b"]
    assert len(_pull(client, 1)) == before[1]  # nothing of the refused batch
    assert _pull(client, 3)[before[3] :] == [b"q3-a"]


def test_a_malformed_batch_is_refused_alone(client: Client) -> None:
    before = len(_pull(client, 2))
    good = _batch(2, b"kept").SerializeToString()
    # Field 1 (batches) holding bytes that are not a SendRequest: a field-1 string that
    # runs past its end.
    raw = b"\x0a\x03\x0a\x09x" + b"\x0a" + bytes([len(good)]) + good
    answer = pb.SendBatchesResponse.FromString(_raw_send_batches(client)(raw, timeout=30))
    assert [a.WhichOneof("outcome") for a in answer.answers] == ["error", "result"]
    assert answer.answers[0].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert _pull(client, 2)[before:] == [b"kept"]


@pytest.mark.parametrize("raw", [b"\x0a\x05abc", b"\x12\x00", b"\xff"])
def test_bytes_that_are_not_a_request_get_invalid_argument(client: Client, raw: bytes) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        _raw_send_batches(client)(raw, timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_an_empty_request_gets_an_empty_answer(client: Client) -> None:
    assert _raw_send_batches(client)(b"", timeout=30) == b""


def test_the_producer_sends_ready_batches_of_one_shard_together(client: Client) -> None:
    """With a long linger, the batches of all four queues become due together at the flush
    and leave in one SendBatches call; the one the broker refuses fails alone."""
    with client.producer(linger_ms=60_000) as producer:
        futures = [
            producer.send(TOPIC, f"m{q}".encode(), queue_id=q, tags="" if q == 2 else "T")
            for q in range(4)
        ]
        assert producer.flush(timeout=30)
        assert producer._calls_made == 1
    for queue_id in (0, 1, 3):
        assert futures[queue_id].result(timeout=0).queue_id == queue_id
    error = futures[2].exception(timeout=0)
    assert isinstance(error, errors.InvalidArgumentError) and "tags" in str(error), error


def test_batches_due_while_a_shard_has_two_calls_in_flight_leave_together(
    client: Client,
) -> None:
    """Each send_batch batch is due at once; its shard takes two calls at a time, so the
    batches that come meanwhile (of other queues, or next in theirs) leave together with
    the next answer's: fewer calls than batches, every batch stored once and in order."""
    with client.producer() as producer:
        # The route known and every queue idle, as in a producer that has been sending:
        # a first batch waiting for the route would make every queue's batches due together.
        for queue_id in range(4):
            producer.send_batch_sync(TOPIC, [b"warm"], queue_id=queue_id)
        before = producer._calls_made
        futures = [
            producer.send_batch(TOPIC, [b"%d" % index] * 8, queue_id=index % 4)
            for index in range(40)
        ]
        assert producer.flush(timeout=30)
        calls = producer._calls_made - before
    assert calls < 40, calls
    for queue_id in range(4):
        offsets = [
            futures[index].result(timeout=0)[0].queue_offset for index in range(queue_id, 40, 4)
        ]
        assert offsets == list(range(offsets[0], offsets[0] + 80, 8)), offsets


def test_a_send_waiting_for_room_sends_lingering_batches_at_once(client: Client) -> None:
    with client.producer(linger_ms=60_000, max_buffered_messages=2) as producer:
        started = time.monotonic()
        futures = [producer.send(TOPIC, b"w", queue_id=q % 4) for q in range(5)]
        assert time.monotonic() - started < 10
        assert producer.flush(timeout=30)
    assert all(f.result(timeout=0).topic == TOPIC for f in futures)
