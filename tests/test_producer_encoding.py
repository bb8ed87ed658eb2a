"""The producer encodes what protobuf itself would (``ProducerCore.send`` and
crates/rmqnet/src/client/encode.rs): random batches decode to the same ``SendRequest`` as
one built with the generated classes, and wrong argument types raise ``TypeError`` and
queue nothing. No broker: a ``ProducerCore`` that never sends, whose open batches are
read back encoded."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence

import pytest
from rmq._rmqcore import ProducerCore
from rmq.proto.v1 import broker_pb2 as pb

_TEXTS = ["", "a", "TagA", "with space", "sep\x01x", "ключ", "x" * 200]


def _random_message(
    rng: random.Random,
) -> tuple[bytes, str | None, list[str] | None, dict[str, str] | None]:
    body = rng.randbytes(rng.choice([0, 1, 100, 127, 128, 1024, 20_000]))
    tags = rng.choice(_TEXTS) if rng.random() < 0.6 else None
    keys = (
        [rng.choice(_TEXTS) for _ in range(rng.choice([0, 1, 3]))] if rng.random() < 0.7 else None
    )
    properties = (
        {rng.choice(_TEXTS): rng.choice(_TEXTS) for _ in range(rng.choice([0, 1, 4]))}
        if rng.random() < 0.4
        else None
    )
    return body, tags, keys, properties


def _expected(
    topic: str,
    queue_id: int,
    messages: Sequence[tuple[bytes, str | None, Sequence[str] | None, Mapping[str, str] | None]],
) -> pb.SendRequest:
    request = pb.SendRequest(topic=topic, queue_id=queue_id)
    for body, tags, keys, properties in messages:
        message = request.messages.add(body=body)
        if tags is not None:
            message.tags = tags
        if keys:
            message.keys.extend(keys)
        if properties:
            message.properties.update(properties)
    return request


class _KeepingProducer(ProducerCore):
    """Never sends: not started, and with limits no batch reaches, every message stays in
    its queue's open batch."""

    def __init__(self) -> None:
        self._configure(
            batch_max_messages=1 << 40,
            batch_max_bytes=1 << 40,
            linger=3600.0,
            max_buffered_bytes=1 << 40,
            max_buffered_messages=1 << 40,
        )

    def kept(self, topic: str, queue_id: int) -> pb.SendRequest:
        raw = self._open_batch(topic, queue_id)
        assert raw is not None
        return pb.SendRequest.FromString(raw)


def test_random_batches_decode_as_protobuf_builds_them() -> None:
    rng = random.Random(20261121)
    for round_ in range(300):
        topic = rng.choice(["t", "Topic_%|-", "T" * 127])
        queue_id = rng.choice([0, 1, 7, 65_535])
        messages = [_random_message(rng) for _ in range(rng.choice([1, 2, 50]))]
        producer = _KeepingProducer()
        for body, tags, keys, properties in messages:
            producer.send(
                topic, body, tags=tags, keys=keys, properties=properties, queue_id=queue_id
            )
        assert producer.pending == len(messages)
        decoded = producer.kept(topic, queue_id)
        assert decoded == _expected(topic, queue_id, messages), f"round {round_}"


def test_keys_and_properties_take_any_sequence_and_mapping() -> None:
    producer = _KeepingProducer()
    producer.send("t", b"b", keys=("k1", "k2"), properties=_Properties({"a": "1"}), queue_id=0)
    producer.send("t", b"c", keys="one key", queue_id=0)  # a string is one key
    decoded = producer.kept("t", 0)
    assert list(decoded.messages[0].keys) == ["k1", "k2"]
    assert dict(decoded.messages[0].properties) == {"a": "1"}
    assert list(decoded.messages[1].keys) == ["one key"]


class _Properties(Mapping[str, str]):
    def __init__(self, items: dict[str, str]) -> None:
        self._items = items

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


@pytest.mark.parametrize(
    "arguments",
    [
        {"body": "text, not bytes"},
        {"body": b"b", "tags": 5},
        {"body": b"b", "keys": [b"bytes"]},
        {"body": b"b", "keys": 5},
        {"body": b"b", "properties": {"a": 1}},
        {"body": b"b", "properties": {1: "a"}},
    ],
)
def test_wrong_types_raise_type_error_and_add_nothing(arguments: dict[str, object]) -> None:
    producer = _KeepingProducer()
    with pytest.raises(TypeError):
        producer.send("t", queue_id=0, **arguments)  # type: ignore[arg-type]
    assert producer.pending == 0 and producer._open_batch("t", 0) is None


class _KeysThatSend(Sequence[str]):
    """Keys whose reading sends another message on the same thread: Python runs inside
    ``send``, as a signal handler may."""

    def __init__(self, producer: ProducerCore) -> None:
        self._producer = producer
        self._keys = ["outer-key"]

    def __getitem__(self, index: int) -> str:  # type: ignore[override]  # one index, no slices
        return self._keys[index]

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        self._producer.send("t", b"inner" * 40, tags="in", keys=["inner-key"], queue_id=0)
        return iter(self._keys)


def test_a_send_made_inside_a_send_is_encoded_whole_and_first() -> None:
    # Each thread encodes its messages in one reused buffer: a send that runs while
    # another is being made must neither lose its bytes nor mix them with the outer one.
    producer = _KeepingProducer()
    producer.send("t", b"before", queue_id=0)
    producer.send("t", b"outer" * 50, tags="out", keys=_KeysThatSend(producer), queue_id=0)
    producer.send("t", b"after", keys=["after-key"], queue_id=0)
    expected = _expected(
        "t",
        0,
        [
            (b"before", None, None, None),
            (b"inner" * 40, "in", ["inner-key"], None),
            (b"outer" * 50, "out", ["outer-key"], None),
            (b"after", None, ["after-key"], None),
        ],
    )
    assert producer.kept("t", 0) == expected
