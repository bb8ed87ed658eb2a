"""The engine's protobuf encoding of pulled messages (crates/rmqcore-py/src/pull_encoding.rs)
against the generated Python classes: a shard's Pull answer must decode to exactly what
building the response message by message would have sent."""

from __future__ import annotations

import json
import random
import tarfile
from pathlib import Path

import pytest
import rmq
from rmq.broker import convert
from rmq.proto.v1 import broker_pb2 as pb

TOPIC = "Wire"


def _expected(store: rmq.Store, queue_id: int, offset: int, count: int) -> pb.PullResponse:
    result = store.pull(TOPIC, queue_id, offset, count)
    return pb.PullResponse(
        messages=[convert.stored_message(m) for m in result.messages],
        next_offset=result.next_offset,
        min_offset=result.min_offset,
        max_offset=result.max_offset,
    )


def _response(encoded: rmq.EncodedPull) -> bytes:
    """A serialized ``PullResponse`` as the shard sends it: the engine's messages (field 1),
    then the scalars (protobuf merges fields that follow one another)."""
    tail = pb.PullResponse(
        next_offset=encoded.next_offset,
        min_offset=encoded.min_offset,
        max_offset=encoded.max_offset,
    )
    return encoded.messages + tail.SerializeToString()


def _decoded(store: rmq.Store, queue_id: int, offset: int, count: int) -> pb.PullResponse:
    encoded = store.pull_encoded(TOPIC, queue_id, offset, count)
    response = pb.PullResponse.FromString(_response(encoded))
    assert encoded.count == len(response.messages)
    return response


def test_every_field_decodes_as_protobuf_encodes_it(tmp_path: Path) -> None:
    with rmq.Store(tmp_path / "s", store_host="[2001:db8::7]:10911") as store:
        store.put(TOPIC, b"")  # every optional field at its default
        store.put(
            TOPIC,
            b"\x00\xff" * 700,  # a body whose length needs a two-byte varint
            tags="TagA",
            keys=["k1", "ключ"],
            properties={"p": "v", "ü": "ß"},
            flag=-7,  # negative int32: a ten-byte varint
            born_timestamp=1,
            born_host="10.0.0.1:65535",
        )
        store.put(TOPIC, b"x", tags="é" * 40, keys="a b", properties={"n" * 200: "v" * 300})
        expected = _expected(store, 0, 0, 10)
        assert len(expected.messages) == 3
        assert _decoded(store, 0, 0, 10) == expected


def test_random_batches_match(tmp_path: Path) -> None:
    rng = random.Random(5)
    with rmq.Store(tmp_path / "s", commitlog_segment_size=1 << 16) as store:
        for queue_id in range(3):
            for _ in range(20):
                batch = [
                    rmq.Message(
                        rng.randbytes(rng.randrange(0, 3000)),
                        tags=rng.choice([None, "TagA", "标签"]),
                        keys=[f"k{rng.randrange(10**9)}" for _ in range(rng.randrange(3))],
                        properties={f"p{i}": "v" * (i + 1) for i in range(rng.randrange(3))},
                        flag=rng.randrange(-(2**31), 2**31),
                    )
                    for _ in range(rng.randrange(1, 6))
                ]
                store.put_batch(TOPIC, queue_id, batch)
        for queue_id in range(3):
            end = store.max_offset(TOPIC, queue_id)
            for offset in (0, 1, end // 2, end - 1, end):
                expected = _expected(store, queue_id, offset, 17)
                assert _decoded(store, queue_id, offset, 17) == expected


@pytest.mark.parametrize("name", ["rocketmq-4.9.8-clean", "rocketmq-5.3.3-clean"])
def test_records_rocketmq_wrote_match(name: str, tmp_path: Path) -> None:
    """RocketMQ's records carry properties rmq never writes (UNIQ_KEY, WAIT, ...)."""
    fixtures = Path(__file__).parent / "fixtures" / "rocketmq"
    dump = json.loads((fixtures / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[0])
    with tarfile.open(fixtures / f"{name}.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    with rmq.Store(
        tmp_path / "store",
        read_only=True,
        commitlog_segment_size=dump["commitlogSegmentSize"],
        consume_queue_entries_per_file=dump["cqEntriesPerFile"],
    ) as store:
        compared = 0
        for topic in store.topics():
            for queue_id in range(store.queue_count(topic)):
                start = store.min_offset(topic, queue_id)
                expected = store.pull(topic, queue_id, start, 1000)
                encoded = store.pull_encoded(topic, queue_id, start, 1000)
                answer = pb.PullResponse.FromString(_response(encoded))
                assert list(answer.messages) == [
                    convert.stored_message(m) for m in expected.messages
                ]
                assert answer.next_offset == expected.next_offset
                compared += len(answer.messages)
        assert compared > 40
