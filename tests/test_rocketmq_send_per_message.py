"""RocketMQ 5's SendMessage answers each message of a request on its own, as the Python
path did before the native data plane took every request: a refused message gets its own
status and is not stored, the others are stored in request order; the response's status
is the first refusal's. gzip bodies are stored inflated, with a bound on how far they
may inflate (a zip bomb is refused with the body-size code).

The expected answers were recorded against the Python path (``shard_backend.send``)
before it was removed, so the native answers are held to the same codes and texts.
"""

from __future__ import annotations

import gzip
import time
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from rmq.rocketmq.wire import rpc, service, v2

from tests.support.brokers import Brokers
from tests.test_rocketmq_native_send import Plane, fifo, message, native_counts, start_planes

MAX_BODY = 4 * 1024 * 1024


@pytest.fixture(scope="module")
def plane(module_brokers: Brokers) -> Iterator[tuple[str, Plane]]:
    topic = f"pm-{uuid.uuid4().hex[:6]}"
    planes = start_planes(module_brokers, [topic])
    yield topic, planes["native"]
    planes["native"].channel.close()


def answered(answer: Any) -> list[tuple[str, str, str]]:
    return [(e.message_id, v2.Code.Name(e.status.code), e.status.message) for e in answer.entries]


def bodies(plane: Plane, topic: str, ends: list[int]) -> dict[str, bytes]:
    """The messages stored since ``ends`` (the queues' ends before), by message id."""
    count = sum(plane.ends([topic])) - sum(ends)
    read: list[Any] = []
    with plane.client.consumer(f"reader-{uuid.uuid4().hex[:6]}", topic) as reader:
        for queue_id, end in enumerate(ends):
            reader.seek(queue_id, end)
        deadline = time.monotonic() + 15
        while len(read) < count and time.monotonic() < deadline:
            read += reader.poll(timeout=0.5)
    return {m.properties["UNIQ_KEY"]: m.body for m in read}


def test_a_gzip_body_is_stored_inflated(plane: tuple[str, Plane]) -> None:
    topic, native = plane
    ends = native.ends([topic])
    before = native_counts(native.broker)
    inflated = b"zipped " * 1000
    answer = native.send(
        message(topic, "GZ-1", gzip.compress(inflated), body_encoding=v2.GZIP),
        # Two gzip members, one after the other, inflate to both.
        message(
            topic, "GZ-2", gzip.compress(b"one ") + gzip.compress(b"two"), body_encoding=v2.GZIP
        ),
    )
    assert answered(answer) == [("GZ-1", "OK", "OK"), ("GZ-2", "OK", "OK")]
    assert bodies(native, topic, ends) == {"GZ-1": inflated, "GZ-2": b"one two"}
    after = native_counts(native.broker)
    assert after == {"answered": before["answered"] + 1, "declined": before["declined"]}


def test_a_corrupt_gzip_body_is_refused_alone(plane: tuple[str, Plane]) -> None:
    topic, native = plane
    ends = native.ends([topic])
    truncated = gzip.compress(b"x" * 1000)[:-6]
    answer = native.send(
        message(topic, "BAD-1", b"not gzip", body_encoding=v2.GZIP),
        message(topic, "OK-1", b"plain"),
        message(topic, "BAD-2", truncated, body_encoding=v2.GZIP),
    )
    codes = [(e.message_id, v2.Code.Name(e.status.code)) for e in answer.entries]
    assert codes == [("BAD-1", "MESSAGE_CORRUPTED"), ("OK-1", "OK"), ("BAD-2", "MESSAGE_CORRUPTED")]
    for entry in (answer.entries[0], answer.entries[2]):
        assert entry.status.message.startswith("the gzip body does not decode: ")
    assert answer.status == answer.entries[0].status
    assert bodies(native, topic, ends) == {"OK-1": b"plain"}


def test_an_oversized_inflated_body_is_refused(plane: tuple[str, Plane]) -> None:
    topic, native = plane
    ends = native.ends([topic])
    at_limit = gzip.compress(b"\0" * MAX_BODY)
    bomb = gzip.compress(b"\0" * (64 * MAX_BODY))  # 256 MiB inflated, a quarter MiB sent
    answer = native.send(
        message(topic, "LIMIT", at_limit, body_encoding=v2.GZIP),
        message(topic, "BOMB", bomb, body_encoding=v2.GZIP),
    )
    codes = [(e.message_id, v2.Code.Name(e.status.code)) for e in answer.entries]
    assert codes == [("LIMIT", "OK"), ("BOMB", "MESSAGE_BODY_TOO_LARGE")]
    assert str(MAX_BODY) in answer.entries[1].status.message
    assert answer.status.code == v2.MESSAGE_BODY_TOO_LARGE
    assert bodies(native, topic, ends) == {"LIMIT": b"\0" * MAX_BODY}


def test_a_mixed_request_is_answered_per_message(plane: tuple[str, Plane]) -> None:
    topic, native = plane
    ends = native.ends([topic])
    request = [
        message(topic, "S-1", b"one", tag="t"),
        message(topic, "R-tag", tag="a|b"),
        fifo(topic, "S-2", "g", body=b"two"),
        message(topic, "R-empty", b""),
        message("no-such-topic", "R-topic"),
        message(topic, "R-crc", user_properties={"__CRC32#": "1"}),  # the engine refuses it
        message(topic, "S-3", gzip.compress(b"three"), body_encoding=v2.GZIP),
        message(topic, "R-reserved", user_properties={"ok": "1", "KEYS": "x"}),
        message(topic, "R-type", message_type=v2.DELAY),
        message(topic, "R-key", keys=["two words"]),
        fifo(topic, "R-group", "\t"),
        message(topic, "R-value", user_properties={"p": ""}),
        message("bad topic!", "R-illegal"),
        message(topic, "S-4", b"four", keys=["k1", "k2"]),
    ]
    answer = native.send(*request)
    assert answered(answer) == EXPECTED_MIXED
    assert (answer.status.code, answer.status.message) == (
        v2.ILLEGAL_MESSAGE_TAG,
        "tag 'a|b' is blank or holds '|'",
    )
    stored = bodies(native, topic, ends)
    assert stored == {"S-1": b"one", "S-2": b"two", "S-3": b"three", "S-4": b"four"}


EXPECTED_MIXED = [
    ("S-1", "OK", "OK"),
    ("R-tag", "ILLEGAL_MESSAGE_TAG", "tag 'a|b' is blank or holds '|'"),
    ("S-2", "OK", "OK"),
    ("R-empty", "MESSAGE_BODY_EMPTY", "the message body is empty"),
    ("R-topic", "TOPIC_NOT_FOUND", "topic 'no-such-topic' does not exist"),
    (
        "R-crc",
        "BAD_REQUEST",
        'invalid properties: property "__CRC32#" is reserved for the record CRC',
    ),
    ("S-3", "OK", "OK"),
    (
        "R-reserved",
        "ILLEGAL_MESSAGE_PROPERTY_KEY",
        "property 'KEYS' is reserved by the broker or holds a control character",
    ),
    (
        "R-type",
        "NOT_IMPLEMENTED",
        "delay and transactional messages are not supported; send normal or FIFO messages",
    ),
    ("R-key", "ILLEGAL_MESSAGE_KEY", "key 'two words' is blank or holds a space"),
    ("R-group", "ILLEGAL_MESSAGE_GROUP", "message group '\\t' is blank"),
    ("R-value", "ILLEGAL_MESSAGE_PROPERTY_KEY", "property 'p' is empty"),
    (
        "R-illegal",
        "ILLEGAL_TOPIC",
        "invalid topic: the topic name \"bad topic!\" contains ' '; topic names may use only "
        "letters, digits and %|_-",
    ),
    ("S-4", "OK", "OK"),
]


@pytest.mark.parametrize("compression", [grpc.Compression.Gzip, grpc.Compression.Deflate])
def test_a_send_in_a_compressed_grpc_frame_is_stored(
    plane: tuple[str, Plane], compression: grpc.Compression
) -> None:
    """grpcio (and the official clients, when asked) may compress request frames; the
    data plane inflates them and stores the message as if it came uncompressed."""
    topic, native = plane
    ends = native.ends([topic])
    before = native_counts(native.broker)
    endpoint = native.client.route(topic).queues[native.local[0]].endpoint
    body = bytes(range(256)) * 40
    with grpc.insecure_channel(endpoint, compression=compression) as channel:
        stub = service.MessagingServiceStub(channel)
        request = rpc.SendMessageRequest(messages=[message(topic, "Z", body)])
        answer = stub.SendMessage(request, timeout=10)
    assert answered(answer) == [("Z", "OK", "OK")]
    assert bodies(native, topic, ends) == {"Z": body}
    after = native_counts(native.broker)
    assert after == {"answered": before["answered"] + 1, "declined": before["declined"]}
