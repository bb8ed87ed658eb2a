"""``rmq._rmqcore.decode_pull_response`` and ``ReceivedMessage`` against the generated
protobuf classes: random responses decode to the same fields; malformed bytes raise."""

from __future__ import annotations

import gc
import random

import pytest
from rmq._rmqcore import ReceivedMessage, decode_pull_response
from rmq.proto.v1 import broker_pb2 as pb

FIELDS = [
    "topic", "queue_id", "queue_offset", "commitlog_offset", "store_size", "body",
    "born_timestamp", "store_timestamp", "born_host", "store_host", "msg_id", "flag",
    "sys_flag", "reconsume_times",
]  # fmt: skip


def random_text(rng: random.Random) -> str:
    return "".join(rng.choice("abcXYZ019-_ é中") for _ in range(rng.randrange(0, 12)))


def random_message(rng: random.Random) -> pb.StoredMessage:
    m = pb.StoredMessage(
        topic=random_text(rng),
        queue_id=rng.choice([0, 1, 7, -1, 2**31 - 1]),
        queue_offset=rng.choice([0, 1, 2**40, -5]),
        commitlog_offset=rng.randrange(0, 2**50),
        store_size=rng.randrange(0, 5000),
        body=rng.randbytes(rng.choice([0, 1, 100, 1024])),
        keys=[random_text(rng) for _ in range(rng.randrange(0, 4))],
        properties={random_text(rng): random_text(rng) for _ in range(rng.randrange(0, 4))},
        born_timestamp=rng.randrange(0, 2**42),
        store_timestamp=rng.randrange(0, 2**42),
        born_host=f"10.0.0.{rng.randrange(256)}:{rng.randrange(65536)}",
        store_host="127.0.0.1:10911",
        msg_id=rng.randbytes(16).hex().upper(),
        flag=rng.choice([0, 3, -2]),
        sys_flag=rng.choice([0, 4]),
        reconsume_times=rng.randrange(0, 16),
    )
    if rng.random() < 0.7:
        m.tags = random_text(rng)  # present even when empty
    return m


def test_random_responses_decode_like_the_generated_classes() -> None:
    rng = random.Random(7)
    for _ in range(200):
        response = pb.PullResponse(
            messages=[random_message(rng) for _ in range(rng.randrange(0, 6))],
            next_offset=rng.randrange(0, 2**40),
            min_offset=rng.randrange(0, 100),
            max_offset=rng.randrange(0, 2**40),
        )
        raw = response.SerializeToString()
        messages, next_offset, min_offset, max_offset = decode_pull_response(raw)
        assert (next_offset, min_offset, max_offset) == (
            response.next_offset, response.min_offset, response.max_offset,
        )  # fmt: skip
        assert len(messages) == len(response.messages)
        for got, want in zip(messages, response.messages, strict=True):
            for field in FIELDS:
                assert getattr(got, field) == getattr(want, field), field
            assert got.tags == (want.tags if want.HasField("tags") else None)
            assert got.keys == tuple(want.keys)
            assert got.properties == dict(want.properties)
            assert got == ReceivedMessage.from_proto(want)
            assert not gc.is_tracked(got)


def test_messages_differ_when_any_field_differs() -> None:
    rng = random.Random(3)
    base = random_message(rng)
    for change in (
        lambda m: setattr(m, "body", m.body + b"!"),
        lambda m: setattr(m, "queue_offset", m.queue_offset + 1),
        lambda m: m.keys.append("another"),
        lambda m: m.properties.__setitem__("extra", "1"),
        lambda m: m.ClearField("tags") if m.HasField("tags") else setattr(m, "tags", ""),
    ):
        other = pb.StoredMessage()
        other.CopyFrom(base)
        change(other)
        assert ReceivedMessage.from_proto(base) != ReceivedMessage.from_proto(other)
    assert ReceivedMessage.from_proto(base) != "not a message"


@pytest.mark.parametrize(
    "raw",
    [
        b"\x0a\x05abc",  # a message field longer than the bytes
        b"\x0a\x03\x0a\x09x",  # a StoredMessage whose topic runs past its end
        b"\x0f",  # wire type 7 does not exist
        b"\x10",  # a varint that never ends
    ],
)
def test_malformed_responses_raise_value_error(raw: bytes) -> None:
    with pytest.raises(ValueError, match="malformed"):
        decode_pull_response(raw)
