"""The producer's per-message core (``rmq._rmqcore.ProducerCore`` and ``SendFuture``)
against a real one-shard broker: buffer limits, futures, callbacks, failures."""

from __future__ import annotations

import gc
import logging
import threading
import time

import pytest
from rmq import errors
from rmq.client import BrokerError, Client, SendFuture, SendResult

from tests.support.brokers import Brokers


@pytest.fixture(scope="module")
def client(module_brokers: Brokers) -> Client:
    client = module_brokers.client(module_brokers.start(shards=1))
    client.create_topic("core", queues=4)
    return client


@pytest.mark.parametrize(
    ("options", "limit"),
    [({"max_buffered_messages": 4}, 4), ({"max_buffered_bytes": 3 * (100 + 64)}, 3)],
)
def test_send_waits_while_the_buffer_is_full(
    client: Client, options: dict[str, int], limit: int
) -> None:
    """Sends are much faster than round trips, so without the limit hundreds would be
    pending at once."""
    most = 0
    with client.producer(batch_max_messages=2, linger_ms=1, **options) as producer:  # type: ignore[arg-type]
        futures = []
        for i in range(300):
            futures.append(producer.send("core", bytes([i % 256]) * 100))
            most = max(most, producer.pending)
        assert producer.flush(timeout=30)
    assert most <= limit
    assert all(isinstance(f.result(timeout=5), SendResult) for f in futures)


def test_a_message_larger_than_the_buffer_still_goes(client: Client) -> None:
    with client.producer(max_buffered_bytes=1000) as producer:
        assert producer.send("core", b"x" * 5000).result(timeout=30).topic == "core"


def test_a_future_resolves_with_where_the_message_was_stored(client: Client) -> None:
    with client.producer() as producer:
        first = producer.send("core", b"one", queue_id=2, keys="k-1")
        second = producer.send("core", b"two", queue_id=2, keys=["k-2", "k-3"])
        a, b = first.result(timeout=30), second.result(timeout=30)
    assert (a.topic, a.queue_id, b.queue_id) == ("core", 2, 2)
    assert b.queue_offset == a.queue_offset + 1 and b.commitlog_offset > a.commitlog_offset
    assert first.done() and not first.running() and first.exception() is None
    assert not first.cancel() and not first.cancelled()
    assert "core/2" in repr(first) and "finished" in repr(first)
    fields = (a.topic, a.queue_id, a.queue_offset, a.msg_id, a.commitlog_offset)
    assert a == SendResult(*fields, a.store_timestamp) != SendResult(*fields, 0)
    assert hash(a) == hash(first.result()) and repr(a).startswith("SendResult(topic='core'")
    [found] = client.query_by_key("core", "k-1")
    assert found.body == b"one" and found.keys == ("k-1",)
    assert client.query_by_key("core", "k-3")[0].body == b"two"


def test_a_future_is_not_tracked_by_the_cycle_collector(client: Client) -> None:
    with client.producer() as producer:
        future = producer.send("core", b"x")
        assert isinstance(future, SendFuture) and not gc.is_tracked(future)
        future.result(timeout=30)


def test_callbacks_run_once_each_and_a_failing_one_harms_no_other(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    def boom(_future: SendFuture) -> None:
        calls.append("boom")
        raise RuntimeError("callback failure")

    with client.producer(linger_ms=50) as producer:
        future = producer.send("core", b"x")
        future.add_done_callback(boom)
        future.add_done_callback(lambda f: calls.append(f"after {f.result().topic}"))
        with caplog.at_level(logging.ERROR, logger="rmq.client.producer"):
            future.result(timeout=30)
            producer.flush(timeout=30)
        future.add_done_callback(lambda f: calls.append("late"))  # already done: at once
    assert calls == ["boom", "after core", "late"]
    assert any("callback failure" in (r.exc_text or "") for r in caplog.records)


def test_result_with_a_timeout_raises_while_the_batch_lingers(client: Client) -> None:
    with client.producer(linger_ms=60_000) as producer:
        future = producer.send("core", b"waits")
        with pytest.raises(TimeoutError):
            future.result(timeout=0.05)
        assert not future.done()
        assert producer.flush(timeout=30)
        assert future.result(timeout=0).topic == "core"


def test_another_thread_waits_for_the_same_future(client: Client) -> None:
    seen: list[SendResult] = []
    with client.producer(linger_ms=200) as producer:
        future = producer.send("core", b"shared")
        waiter = threading.Thread(target=lambda: seen.append(future.result(timeout=30)))
        waiter.start()
        waiter.join(30)
    assert len(seen) == 1 and seen[0] == future.result()


def test_a_send_to_a_missing_topic_fails_its_future(client: Client) -> None:
    with client.producer() as producer:
        future = producer.send("no-such-topic", b"x")
        error = future.exception(timeout=30)
    assert isinstance(error, BrokerError) and isinstance(error, errors.NotFoundError)
    with pytest.raises(errors.NotFoundError):
        future.result()


def test_a_queue_outside_the_topic_fails_with_invalid_argument(client: Client) -> None:
    with client.producer() as producer:
        future = producer.send("core", b"x", queue_id=99)
        with pytest.raises(errors.InvalidArgumentError, match="queue 99 does not exist"):
            future.result(timeout=30)


def test_wrong_argument_types_raise_and_queue_nothing(client: Client) -> None:
    with client.producer() as producer:
        with pytest.raises(TypeError):
            producer.send("core", b"x", keys=[1])  # type: ignore[list-item]
        with pytest.raises(TypeError):
            producer.send("core", b"x", properties={"a": 1})  # type: ignore[dict-item]
        with pytest.raises(TypeError):
            producer.send("core", b"x", sharding_key=7)  # type: ignore[arg-type]
        assert producer.pending == 0


def test_bad_limits_are_refused(client: Client) -> None:
    for options in ({"batch_max_messages": 0}, {"max_buffered_messages": 0}, {"linger_ms": -1}):
        with pytest.raises(errors.InvalidArgumentError):
            client.producer(**options)  # type: ignore[arg-type]


def test_a_closed_producer_refuses_sends(client: Client) -> None:
    producer = client.producer()
    producer.close()
    assert producer.closed
    with pytest.raises(errors.StoreClosedError):
        producer.send("core", b"late")


def test_flush_sends_lingering_batches_at_once(client: Client) -> None:
    with client.producer(linger_ms=60_000) as producer:
        future = producer.send("core", b"x")
        started = time.monotonic()
        assert producer.flush(timeout=10)
        assert time.monotonic() - started < 5 and future.done()
