"""``Producer.send_batch`` (one call, one request, one future per batch) against a real
``rmq serve``: messages keep their order and get consecutive offsets, their fields come
back as sent, a bad message or an oversized batch is refused whole before anything is
stored, the shard's own refusal fails the whole batch, and a broker that is gone fails the
future with the mapped error."""

from __future__ import annotations

import functools
import threading
import time
from pathlib import Path

import pytest
from rmq import Message
from rmq.client import (
    BrokerInvalidArgumentError,
    BrokerUnavailableError,
    Client,
    ReceivedMessage,
    SendBatchFuture,
)
from rmq.cluster.local import LocalBroker
from rmq.errors import InvalidArgumentError

from tests.support.brokers import Brokers

TOPIC = "batches"


@pytest.fixture(scope="module")
def client(module_brokers: Brokers) -> Client:
    client = module_brokers.client(module_brokers.start(shards=2))
    client.create_topic(TOPIC, queues=4)
    return client


def read_queue(client: Client, topic: str, queue_id: int, count: int) -> list[ReceivedMessage]:
    """The first ``count`` messages of one queue, in offset order."""
    got: list[ReceivedMessage] = []
    with client.consumer(f"reader-{time.monotonic_ns()}", topic, queues=[queue_id]) as consumer:
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            got.extend(consumer.poll(timeout=1.0))
    return got


def test_a_batch_keeps_its_order_and_takes_consecutive_offsets(client: Client) -> None:
    tags = ["TagA", "TagB", None]
    bodies = [b"body-%d" % i for i in range(300)]
    with client.producer() as producer:
        before = producer.send_sync(TOPIC, b"single before", queue_id=2)
        future = producer.send_batch(
            TOPIC,
            bodies,
            tags=[tags[i % 3] for i in range(300)],
            keys=[[f"order-{i}"] if i % 2 else f"order-{i} alt-{i}" for i in range(300)],
            queue_id=2,
        )
        after = producer.send(TOPIC, b"single after", queue_id=2)
        assert isinstance(future, SendBatchFuture) and len(future) == 300
        results = future.result(timeout=30)
        assert after.result(timeout=30).queue_offset == before.queue_offset + 301
    assert [r.queue_offset for r in results] == list(
        range(before.queue_offset + 1, before.queue_offset + 301)
    )
    assert {(r.topic, r.queue_id) for r in results} == {(TOPIC, 2)}
    assert len({r.msg_id for r in results}) == 300
    stored = read_queue(client, TOPIC, 2, 302)
    assert [m.body for m in stored] == [b"single before", *bodies, b"single after"]
    batch = stored[1:301]
    assert [m.tags for m in batch] == [tags[i % 3] for i in range(300)]
    # A key list is taken as is; one string holds space-separated keys.
    assert batch[1].keys == ("order-1",) and batch[2].keys == ("order-2", "alt-2")
    assert [m.msg_id for m in batch] == [r.msg_id for r in results]


def test_messages_carry_their_own_fields_and_a_shared_tag_applies_to_every_body(
    client: Client,
) -> None:
    messages = [
        Message(b"first", tags="Paid", keys=["k-1", "k-2"], properties={"region": "eu"}),
        Message(b"", properties={"note": "second"}),
        Message(b"third", keys="k-3", flag=7, born_timestamp=1_700_000_000_000),
    ]
    with client.producer() as producer:
        results = producer.send_batch_sync(TOPIC, messages, queue_id=1)
        shared = producer.send_batch_sync(TOPIC, [b"x", b"y"], tags="Shared", queue_id=1)
    found = [client.get_by_msg_id(r.msg_id) for r in results]
    assert [m.body for m in found] == [b"first", b"", b"third"]
    assert found[0].tags == "Paid" and found[0].keys == ("k-1", "k-2")
    assert found[0].properties["region"] == "eu"
    assert found[1].properties["note"] == "second" and found[1].tags is None
    assert found[2].keys == ("k-3",) and found[2].flag == 7
    assert found[2].born_timestamp == 1_700_000_000_000
    assert [m.body for m in client.query_by_key(TOPIC, "k-2")] == [b"first"]
    assert [client.get_by_msg_id(r.msg_id).tags for r in shared] == ["Shared", "Shared"]


def test_a_batch_may_be_any_iterable_of_messages(client: Client) -> None:
    with client.producer() as producer:
        as_list = producer.send_batch_sync(TOPIC, [b"l0", b"l1"], queue_id=3)
        as_tuple = producer.send_batch_sync(TOPIC, (b"t0", b"t1"), queue_id=3)
        as_generator = producer.send_batch_sync(TOPIC, (b"g%d" % n for n in range(2)), queue_id=3)
        with pytest.raises(InvalidArgumentError, match="sequence of bytes"):
            producer.send_batch(TOPIC, 42, queue_id=3)  # type: ignore[arg-type]
    offsets = [r.queue_offset for r in as_list + as_tuple + as_generator]
    assert offsets == list(range(offsets[0], offsets[0] + 6))


def test_a_bad_message_refuses_the_whole_batch_naming_it(client: Client) -> None:
    low, high = client.queue_offsets(TOPIC, 3)
    with client.producer() as producer:
        cases = [
            ([b"a", b"b", b"c"], {"tags": ["ok", "ok", "bad\x01tag"]}, "message 2: invalid tags"),
            ([b"a", b"b"], {"keys": [["k"], ["has space"]]}, "message 1: .*contains a space"),
            ([Message(b"a"), Message(b"b", properties={"x\x02": "1"})], {}, "message 1: "),
            ([b"a", "not bytes"], {}, "message 1: must be bytes or rmq.Message"),
            ([Message(b"a")], {"tags": "T"}, "an rmq.Message carries its own"),
            ([b"a", b"b"], {"keys": [["k"]]}, "has 1 entries for 2 messages"),
            ([], {}, "the batch has no messages"),
        ]
        for messages, columns, reason in cases:
            with pytest.raises(InvalidArgumentError, match=reason):
                producer.send_batch(TOPIC, messages, queue_id=3, **columns)  # type: ignore[arg-type]
        assert producer.pending == 0
    assert client.queue_offsets(TOPIC, 3) == (low, high)


def test_a_batch_over_the_producers_limits_is_refused_saying_which(client: Client) -> None:
    low, high = client.queue_offsets(TOPIC, 0)
    with client.producer(batch_max_messages=10, batch_max_bytes=4096) as producer:
        with pytest.raises(InvalidArgumentError, match=r"11 messages, more than .*of 10"):
            producer.send_batch(TOPIC, [b"m"] * 11, queue_id=0)
        with pytest.raises(InvalidArgumentError, match="more than the producer's batch_max_bytes"):
            producer.send_batch(TOPIC, [b"m" * 3000, b"n" * 1000], queue_id=0)
        # At the limits exactly it goes, as one request.
        assert len(producer.send_batch_sync(TOPIC, [b"m"] * 10, queue_id=0)) == 10
    assert client.queue_offsets(TOPIC, 0) == (low, high + 10)


def test_the_shards_refusal_fails_the_whole_batch(brokers: Brokers) -> None:
    broker = brokers.start(shards=1, args=["--max-batch-messages", "4"])
    client = brokers.client(broker)
    client.create_topic(TOPIC, queues=1)
    with client.producer() as producer:
        error = producer.send_batch(TOPIC, [b"m"] * 5).exception(timeout=30)
        assert isinstance(error, BrokerInvalidArgumentError), error
        assert "5 messages, more than the limit of 4" in str(error)
        assert len(producer.send_batch_sync(TOPIC, [b"m"] * 4)) == 4
    assert client.queue_offsets(TOPIC, 0) == (0, 4)


def test_callbacks_run_once_per_batch_in_the_order_of_a_queues_batches(client: Client) -> None:
    done: list[tuple[int, int]] = []
    lock = threading.Lock()

    def record(index: int, future: SendBatchFuture) -> None:
        with lock:
            done.append((index, future.result()[0].queue_offset))

    with client.producer(max_buffered_messages=256) as producer:
        for index in range(200):
            future = producer.send_batch(TOPIC, [b"%d" % index] * 16, sharding_key="one key")
            future.add_done_callback(functools.partial(record, index))
    assert [index for index, _ in done] == list(range(200))
    offsets = [offset for _, offset in done]
    assert offsets == list(range(offsets[0], offsets[0] + 200 * 16, 16))


def test_batches_without_callbacks_resolve_in_their_queues_order_with_the_others(
    client: Client,
) -> None:
    # A stored batch with no callback is resolved without the GIL, the others with it: a
    # callback still finds every earlier batch of its queue done, none of the later ones.
    futures: list[SendBatchFuture] = []
    seen: list[tuple[int, list[bool]]] = []

    def record(index: int, _future: SendBatchFuture) -> None:
        seen.append((index, [future.done() for future in futures]))

    with client.producer(max_buffered_messages=256) as producer:
        for index in range(120):
            future = producer.send_batch(TOPIC, [b"%d" % index] * 8, sharding_key="one key")
            futures.append(future)
            if index % 3 == 0:
                future.add_done_callback(functools.partial(record, index))
        producer.flush(timeout=30)
        offsets = [future.result(timeout=30)[0].queue_offset for future in futures]
        late: list[int] = []
        futures[1].add_done_callback(lambda future: late.append(future.result()[0].queue_offset))
    assert [index for index, _ in seen] == list(range(0, 120, 3))
    for index, done in seen:
        assert all(done[: index + 1]), index
        assert not any(done[index + 1 :]), index
    assert offsets == list(range(offsets[0], offsets[0] + 120 * 8, 8))
    assert late == [offsets[1]]


def test_a_broker_that_is_gone_fails_the_batch_unavailable(tmp_path: Path) -> None:
    broker = LocalBroker(tmp_path / "data", shards=1)
    with broker:
        client = Client(broker.endpoint, retry_timeout=1.5)
        client.create_topic(TOPIC, queues=1)
        producer = client.producer()
        assert len(producer.send_batch_sync(TOPIC, [b"before"] * 3)) == 3
    started = time.monotonic()
    future = producer.send_batch(TOPIC, [b"after"] * 3)
    error = future.exception(timeout=60)
    assert isinstance(error, BrokerUnavailableError), error
    with pytest.raises(BrokerUnavailableError):
        future.result()
    assert time.monotonic() - started >= 1.0, "failed without being retried"
    producer.close()
    client.close()
