"""The shard's two Send paths agree: the engine's (``SendBatch`` + ``put_send_batch``,
crates/rmqcore-py/src/send_batch.rs) and the checked Python path (``convert`` and
``validation``). The fast path must decline every request the checks refuse, and store
exactly what the Python path stores for the rest."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import rmq
from rmq._rmqcore import SendBatch
from rmq.broker import convert
from rmq.broker.validation import Limits
from rmq.errors import InvalidArgumentError
from rmq.proto.v1 import broker_pb2 as pb

TOPIC = "Fast"
LIMITS = Limits(max_body_bytes=4096, max_batch_messages=64, max_batch_bytes=64 * 1024)


def _parse(raw: bytes) -> SendBatch | None:
    return SendBatch.parse(
        raw,
        max_body_bytes=LIMITS.max_body_bytes,
        max_batch_messages=LIMITS.max_batch_messages,
        max_batch_bytes=LIMITS.max_batch_bytes,
    )


def _python_accepts(request: pb.SendRequest) -> bool:
    try:
        convert.engine_messages(request.messages, LIMITS)
    except InvalidArgumentError:
        return False
    return True


_TEXTS = ["", "a", "TagA", "with space", "sep\x01x", "sep\x02", "ключ", "TAGS", "KEYS", "p"]


def _random_request(rng: random.Random) -> pb.SendRequest:
    request = pb.SendRequest(topic=TOPIC, queue_id=rng.randrange(2), sequence=rng.randrange(9))
    for _ in range(rng.choice([0, 1, 3, 20, 70])):
        body_size = rng.choice([0, 1, 100, 4096, 4097])
        message = request.messages.add(body=rng.randbytes(body_size))
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


def test_declines_whatever_the_checks_refuse() -> None:
    rng = random.Random(11)
    accepted = declined = 0
    for _ in range(3000):
        request = _random_request(rng)
        python_ok = _python_accepts(request)
        batch = _parse(request.SerializeToString())
        if not python_ok:
            assert batch is None, request
            declined += 1
        elif batch is not None:
            assert (batch.topic, batch.queue_id, batch.sequence) == (
                request.topic,
                request.queue_id,
                request.sequence,
            )
            assert len(batch) == len(request.messages)
            accepted += 1
    assert accepted > 100 and declined > 100  # both sides were exercised


@pytest.mark.parametrize(
    "raw",
    [
        b"\x0a\x05ab",  # a length past the end
        b"\x0a\x02\xff\xfe",  # a topic that is not UTF-8
        b"\x1a\x03\x0a\x05x",  # a message whose body overruns it
        b"\x10\x01\x0b",  # wire type 3 (groups)
        b"",  # no messages
    ],
)
def test_declines_bytes_that_are_not_a_request(raw: bytes) -> None:
    assert _parse(raw) is None


def test_stores_what_the_python_path_stores(tmp_path: Path) -> None:
    rng = random.Random(12)
    with (
        rmq.Store(tmp_path / "fast") as fast,
        rmq.Store(tmp_path / "checked") as checked,
    ):
        sent = 0
        while sent < 60:
            request = _random_request(rng)
            if not _python_accepts(request):
                continue
            raw = request.SerializeToString()
            batch = _parse(raw)
            assert batch is not None
            encoded = fast.put_send_batch(batch, born_host="10.1.2.3:4567")
            messages = convert.engine_messages(request.messages, LIMITS)
            results = checked.put_batch(
                TOPIC, request.queue_id, messages, born_host="10.1.2.3:4567"
            )
            answer = pb.SendResponse.FromString(encoded)
            expected = convert.send_response(results, request.sequence)
            assert list(answer.msg_ids) == list(expected.msg_ids)
            assert list(answer.commitlog_offsets) == list(expected.commitlog_offsets)
            assert list(answer.queue_offsets) == list(expected.queue_offsets)
            assert list(answer.store_sizes) == list(expected.store_sizes)
            assert answer.sequence == expected.sequence
            assert len(answer.store_timestamps) == len(expected.store_timestamps)
            sent += 1
        given = 0
        for queue_id in range(2):
            end = checked.max_offset(TOPIC, queue_id)
            assert fast.max_offset(TOPIC, queue_id) == end
            for a, b in zip(
                fast.get(TOPIC, queue_id, 0, end + 1),
                checked.get(TOPIC, queue_id, 0, end + 1),
                strict=True,
            ):
                for field in ("body", "tags", "keys", "properties", "flag", "born_host"):
                    assert getattr(a, field) == getattr(b, field), field
                if a.born_timestamp < 2**40:  # given in the request, not the time of the put
                    assert a.born_timestamp == b.born_timestamp
                    given += 1
        assert given > 0
