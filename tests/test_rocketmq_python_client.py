"""Apache RocketMQ 5's official Python client (``rocketmq-python-client`` from PyPI)
against ``rmq serve``: the apache.rocketmq.v2 protocol end to end.

Each test starts the real client against a real broker on loopback: producer (sync and
async), SimpleConsumer with acks and redelivery, FIFO message groups, PushConsumer,
dead letters, leases across a shard restart, and messages crossing between the official
client and ``rmq.Client``.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from rmq.client import Client
from rmq.cluster.local import LocalBroker
from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    Message,
    MessageListener,
    Producer,
    PushConsumer,
    SimpleConsumer,
)

from tests.support.brokers import Brokers

QUEUES = 4


def new_topic(broker: LocalBroker, brokers: Brokers, queues: int = QUEUES) -> str:
    topic = f"t-{uuid.uuid4().hex[:10]}"
    brokers.client(broker).create_topic(topic, queues)
    return topic


def configuration(broker: LocalBroker) -> ClientConfiguration:
    return ClientConfiguration(broker.rocketmq_endpoint, Credentials(), request_timeout=10)


def message(
    topic: str,
    body: bytes,
    *,
    tag: str | None = None,
    keys: str | None = None,
    properties: dict[str, str] | None = None,
    group: str | None = None,
) -> Message:
    out = Message()
    out.topic = topic
    out.body = body
    if tag is not None:
        out.tag = tag
    if keys is not None:
        out.keys = keys
    for name, value in (properties or {}).items():
        out.add_property(name, value)
    if group is not None:
        out.message_group = group
    return out


class Running:
    """Official clients started for a test and shut down after it."""

    def __init__(self) -> None:
        self.clients: list[Any] = []

    def producer(self, broker: LocalBroker, topic: str) -> Producer:
        producer = Producer(configuration(broker), (topic,))
        producer.startup()
        self.clients.append(producer)
        return producer

    def simple_consumer(
        self, broker: LocalBroker, group: str, topic: str, wait: int = 2
    ) -> SimpleConsumer:
        consumer = SimpleConsumer(
            configuration(broker), group, {topic: FilterExpression("*")}, await_duration=wait
        )
        consumer.startup()
        self.clients.append(consumer)
        return consumer

    def push_consumer(
        self, broker: LocalBroker, group: str, topic: str, listener: MessageListener
    ) -> PushConsumer:
        consumer = PushConsumer(
            configuration(broker), group, listener, {topic: FilterExpression("*")}
        )
        consumer.startup()
        self.clients.append(consumer)
        return consumer

    def shutdown(self) -> None:
        for client in reversed(self.clients):
            client.shutdown()


@pytest.fixture
def running() -> Iterator[Running]:
    started = Running()
    try:
        yield started
    finally:
        started.shutdown()


def receive(
    consumer: SimpleConsumer,
    count: int,
    *,
    invisible: int = 30,
    ack: bool = True,
    timeout: float = 30.0,
    batch: int = 16,
) -> list[Message]:
    """Receive until ``count`` messages came (or ``timeout``), acking each if ``ack``."""
    found: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(found) < count and time.monotonic() < deadline:
        for received in consumer.receive(batch, invisible):
            found.append(received)
            if ack:
                consumer.ack(received)
    return found


def test_sent_messages_are_received_once_with_their_tag_keys_and_properties(
    broker: LocalBroker, module_brokers: Brokers, running: Running
) -> None:
    topic = new_topic(broker, module_brokers)
    producer = running.producer(broker, topic)
    receipts = {}
    for i in range(10):
        sent = message(topic, f"sync-{i}".encode(), tag="TagA", keys=f"key-{i}",
                       properties={"n": str(i)})  # fmt: skip
        receipts[f"sync-{i}".encode()] = producer.send(sent).message_id
    futures: dict[bytes, Future[Any]] = {}
    for i in range(10):
        sent = message(topic, f"async-{i}".encode(), tag="TagB", properties={"n": str(i)})
        futures[f"async-{i}".encode()] = producer.send_async(sent)
    for body, future in futures.items():
        receipts[body] = future.result(timeout=30).message_id

    consumer = running.simple_consumer(broker, "group-a", topic)
    found = receive(consumer, 20)
    assert sorted(m.body for m in found) == sorted(receipts)
    for m in found:
        assert m.message_id == receipts[m.body]
        assert m.topic == topic
        assert m.delivery_attempt == 1
        n = m.body.decode().rpartition("-")[2]
        assert m.properties == {"n": n}
        if m.body.startswith(b"sync"):
            assert (m.tag, set(m.keys)) == ("TagA", {f"key-{n}"})
        else:
            assert (m.tag, set(m.keys)) == ("TagB", set())
    # Acked: nothing comes again, to this group; another group reads them all.
    assert receive(consumer, 1, timeout=3) == []
    other = running.simple_consumer(broker, "group-b", topic)
    assert len(receive(other, 20)) == 20


def test_a_message_not_acked_in_time_is_delivered_again_with_its_attempt_counted(
    broker: LocalBroker, module_brokers: Brokers, running: Running
) -> None:
    topic = new_topic(broker, module_brokers, queues=1)
    running.producer(broker, topic).send(message(topic, b"again"))
    consumer = running.simple_consumer(broker, "group-redeliver", topic)
    [first] = receive(consumer, 1, invisible=5, ack=False)
    received_at = time.monotonic()
    assert first.delivery_attempt == 1
    # Still invisible: a receive (which waits up to 2 s) finds nothing.
    assert consumer.receive(16, 5) == []
    [second] = receive(consumer, 1, invisible=30, ack=False)
    assert time.monotonic() - received_at >= 4.5
    assert (second.message_id, second.delivery_attempt) == (first.message_id, 2)
    # The first delivery's receipt no longer acks it; the second's does.
    with pytest.raises(Exception, match="not out on this receipt"):
        consumer.ack(first)
    consumer.ack(second)
    assert receive(consumer, 1, timeout=3) == []


def test_a_message_group_is_received_in_the_order_it_was_sent(
    broker: LocalBroker, module_brokers: Brokers, running: Running
) -> None:
    topic = new_topic(broker, module_brokers)
    producer = running.producer(broker, topic)
    for i in range(30):
        group = f"order-{i % 3}"
        producer.send(message(topic, f"{group}:{i}".encode(), group=group))
    consumer = running.simple_consumer(broker, "group-fifo", topic)
    found = receive(consumer, 30, batch=4)
    by_group: dict[str, list[int]] = {}
    for m in found:
        group, _, i = m.body.decode().partition(":")
        assert m.message_group == group
        by_group.setdefault(group, []).append(int(i))
    assert by_group == {f"order-{g}": list(range(g, 30, 3)) for g in range(3)}


def test_an_unacked_message_of_a_group_holds_back_the_rest_of_its_queue(
    broker: LocalBroker, module_brokers: Brokers, running: Running
) -> None:
    topic = new_topic(broker, module_brokers, queues=1)
    producer = running.producer(broker, topic)
    for i in range(3):
        producer.send(message(topic, f"step-{i}".encode(), group="only"))
    consumer = running.simple_consumer(broker, "group-hold", topic)
    [first] = receive(consumer, 1, batch=1, ack=False)
    assert first.body == b"step-0"
    assert consumer.receive(1, 30) == []  # step-1 waits for step-0's ack
    consumer.ack(first)
    assert [m.body for m in receive(consumer, 2, batch=1)] == [b"step-1", b"step-2"]


class Recorder(MessageListener):  # type: ignore[misc]
    def __init__(self, fail_first: int = 0) -> None:
        self.lock = threading.Lock()
        self.bodies: list[bytes] = []
        self.attempts: dict[bytes, list[int]] = {}
        self.fail_first = fail_first

    def consume(self, message: Message) -> ConsumeResult:
        with self.lock:
            self.attempts.setdefault(message.body, []).append(message.delivery_attempt)
            if len(self.attempts[message.body]) <= self.fail_first:
                return ConsumeResult.FAILURE
            self.bodies.append(message.body)
        return ConsumeResult.SUCCESS


def poll(client: Client, topic: str, count: int) -> list[Any]:
    """``count`` messages of ``topic`` read with rmq's own consumer."""
    read: list[Any] = []
    with client.consumer(f"reader-{uuid.uuid4().hex[:6]}", topic) as reader:
        deadline = time.monotonic() + 15
        while len(read) < count and time.monotonic() < deadline:
            read += reader.poll(timeout=1.0)
    return read


def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_a_push_consumer_gets_every_message_and_failures_come_again(
    broker: LocalBroker, module_brokers: Brokers, running: Running
) -> None:
    topic = new_topic(broker, module_brokers)
    producer = running.producer(broker, topic)
    sent = {f"push-{i}".encode() for i in range(20)}
    for body in sorted(sent):
        producer.send(message(topic, body))
    recorder = Recorder(fail_first=1)
    running.push_consumer(broker, "group-push", topic, recorder)
    wait_until(lambda: set(recorder.bodies) == sent, 60, "every message consumed")
    assert sorted(recorder.bodies) == sorted(sent)  # each consumed successfully once
    assert all(attempts[:2] == [1, 2] for attempts in recorder.attempts.values())


def test_messages_cross_between_the_official_client_and_rmq_client(
    broker: LocalBroker, module_brokers: Brokers, running: Running
) -> None:
    topic = new_topic(broker, module_brokers, queues=2)
    client = module_brokers.client(broker)
    # Official client -> rmq.Client.
    producer = running.producer(broker, topic)
    message_id = producer.send(
        message(topic, b"from-v2", tag="T1", keys="k1", properties={"color": "red"})
    ).message_id
    [got] = poll(client, topic, 1)
    assert (got.body, got.tags, list(got.keys)) == (b"from-v2", "T1", ["k1"])
    assert got.properties["color"] == "red"
    assert got.properties["UNIQ_KEY"] == message_id
    # rmq.Client -> official client.
    with client.producer() as rmq_producer:
        result = rmq_producer.send_sync(
            topic, b"from-rmq", tags="T2", keys=["k2", "k3"], properties={"size": "L"}
        )
    consumer = running.simple_consumer(broker, "v2-reader", topic)
    found = {m.body: m for m in receive(consumer, 2)}
    assert set(found) == {b"from-v2", b"from-rmq"}
    mine = found[b"from-rmq"]
    assert (mine.tag, set(mine.keys), mine.properties) == ("T2", {"k2", "k3"}, {"size": "L"})
    assert mine.message_id == "01" + result.msg_id


def test_a_message_delivered_too_often_moves_to_the_dead_letter_topic(
    brokers: Brokers, running: Running
) -> None:
    broker = brokers.start(shards=2, args=["--rocketmq-max-delivery-attempts", "2"])
    topic = new_topic(broker, brokers, queues=1)
    running.producer(broker, topic).send(message(topic, b"poison", tag="P"))
    consumer = running.simple_consumer(broker, "group-dlq", topic)
    for attempt in (1, 2):
        [got] = receive(consumer, 1, invisible=1, ack=False)
        assert got.delivery_attempt == attempt
        time.sleep(1.2)
    assert receive(consumer, 1, timeout=3) == []
    [dead] = poll(brokers.client(broker), "%DLQ%group-dlq", 1)
    assert (dead.body, dead.tags) == (b"poison", "P")
    assert dead.properties["UNIQ_KEY"] == got.message_id


def test_acks_and_invisible_messages_survive_a_shard_restart(
    brokers: Brokers, running: Running
) -> None:
    broker = brokers.start(shards=1)
    topic = new_topic(broker, brokers, queues=1)
    producer = running.producer(broker, topic)
    for i in range(4):
        producer.send(message(topic, f"m{i}".encode()))
    consumer = running.simple_consumer(broker, "group-restart", topic)
    found = receive(consumer, 4, invisible=60, ack=False, batch=4)
    assert [m.body for m in found] == [b"m0", b"m1", b"m2", b"m3"]
    consumer.ack(found[0])
    consumer.ack(found[2])
    time.sleep(0.5)  # the leases are saved every 0.2 s
    [pid] = broker.shard_pids()
    os.kill(pid, signal.SIGKILL)
    broker.wait_for(
        lambda s: s["processes"][0]["pid"] != pid and s["processes"][0]["serving"],
        timeout=60,
        what="the shard process restarted",
    )
    # m1 and m3 stay invisible for their 60 s; m0 and m2 are acked. (The client's
    # channel may still be backing off from the restart: try again for a while.)
    deadline = time.monotonic() + 30
    while True:
        try:
            assert consumer.receive(16, 30) == []
            break
        except AssertionError:
            raise
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    # The group's committed offset is 1 (m0 acked, m1 not): rmq's consumer starts there.
    with brokers.client(broker).consumer("group-restart", topic) as same_group:
        read: list[Any] = []
        deadline = time.monotonic() + 15
        while len(read) < 3 and time.monotonic() < deadline:
            read += same_group.poll(timeout=1.0)
    assert [m.body for m in read] == [b"m1", b"m2", b"m3"]
