"""``rmq._rmqcore.decode_pull_columns``: a Pull response straight into Arrow buffers gives
the same record batch as the message objects of ``decode_pull_response`` (what the Spark
stream source built its batches from before), with the end offset and keys filters
applied as ``keep_messages`` applies them."""

from __future__ import annotations

import random

import pytest
from rmq._rmqcore import decode_pull_columns, decode_pull_response
from rmq.proto.v1 import broker_pb2 as pb
from rmq.spark.arrow import ARROW_SCHEMA, to_record_batch
from rmq.spark.queue_read import keep_messages
from rmq.spark.rows import messages_to_batch

from tests.test_received_message import random_message


def random_response(rng: random.Random) -> pb.PullResponse:
    messages = [random_message(rng) for _ in range(rng.randrange(0, 8))]
    for offset, message in enumerate(messages):
        message.queue_offset = offset  # a queue's messages, in order
    return pb.PullResponse(messages=messages, next_offset=len(messages) + rng.randrange(0, 3))


def test_columns_equal_the_message_objects_batch_with_the_same_filters() -> None:
    rng = random.Random(11)
    narrow = ARROW_SCHEMA.empty_table().select(["shard", "queue_offset", "body"]).schema
    checked_rows = 0
    for _ in range(300):
        response = random_response(rng)
        raw = response.SerializeToString()
        end = rng.choice([2**62, rng.randrange(0, 9)])
        every_key = [key for m in response.messages for key in m.keys]
        keys = rng.sample(every_key, min(len(every_key), rng.choice([0, 0, 1, 2])))
        pulled = decode_pull_columns(raw, end_offset=end, keys=keys)
        messages, next_offset, _, _ = decode_pull_response(raw)
        kept = keep_messages(messages, end, keys)
        assert pulled.next_offset == next_offset == response.next_offset
        assert len(pulled) == pulled.num_rows == len(kept)
        for schema in (ARROW_SCHEMA, narrow):
            got = to_record_batch(pulled, "shard-1", schema)
            want = messages_to_batch(kept, "shard-1", schema)
            assert got.equals(want), (got.to_pylist(), want.to_pylist())
        checked_rows += len(kept)
    assert checked_rows > 300  # the filters left rows to compare


def test_a_repeated_property_keeps_its_later_value_as_the_message_objects_do() -> None:
    entry = pb.StoredMessage.PropertiesEntry
    message = pb.StoredMessage(topic="t", body=b"x")
    raw_message = message.SerializeToString() + b"".join(
        b"\x4a" + bytes([len(e)]) + e
        for e in (
            entry(key="a", value="1").SerializeToString(),
            entry(key="b", value="2").SerializeToString(),
            entry(key="a", value="3").SerializeToString(),
        )
    )
    raw = b"\x0a" + bytes([len(raw_message)]) + raw_message
    pulled = to_record_batch(decode_pull_columns(raw), "s")
    messages, _, _, _ = decode_pull_response(raw)
    assert pulled.column("properties").to_pylist() == [[("b", "2"), ("a", "3")]]
    assert pulled.equals(messages_to_batch(messages, "s"))


@pytest.mark.parametrize("raw", [b"\x0a\x05abc", b"\x0a\x03\x0a\x09x", b"\x0f", b"\x10"])
def test_malformed_responses_raise_value_error(raw: bytes) -> None:
    with pytest.raises(ValueError, match="malformed"):
        decode_pull_columns(raw)
