"""RocketMQ 5's consume side served by the native data plane (rmqnet): ReceiveMessage,
AckMessage and ChangeInvisibleDuration on the lease book the Python path shares. The
broker's ``rmq_native_requests`` metric shows which requests the fast path answered
itself and which it passed to Python, so these tests fail if it silently declines
everything, or takes what it should leave to Python (a message out of attempts, which
Python moves to the dead-letter topic). The leases the native path keeps are read back
after a restart on the same data.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import grpc
import rmq
from google.protobuf.duration_pb2 import Duration
from rmq.cluster.local import LocalBroker
from rmq.rocketmq.wire import rpc, service, v2

from tests.support.brokers import Brokers
from tests.support.native_requests import native_requests

SERVICE = "/apache.rocketmq.v2.MessagingService/"
GROUP = "native-group"


def native_counts(broker: LocalBroker) -> dict[tuple[str, str], float]:
    """The broker's ``rmq_native_requests`` of this service, by (method name, outcome)."""
    return {
        (method.removeprefix(SERVICE), outcome): value
        for (method, outcome), value in native_requests(broker).items()
        if method.startswith(SERVICE)
    }


class Shard:
    """A raw v2 stub to the shard process serving a new one-queue topic."""

    def __init__(self, broker: LocalBroker, client: rmq.Client) -> None:
        self.topic = f"nc-{uuid.uuid4().hex[:8]}"
        route = client.create_topic(self.topic, 1)
        self.channel = grpc.insecure_channel(route.queues[0].endpoint)
        self.stub = service.MessagingServiceStub(self.channel)

    def send(self, *bodies: bytes) -> None:
        messages = []
        for body in bodies:
            m = v2.Message(topic=v2.Resource(name=self.topic), body=body)
            m.system_properties.message_id = uuid.uuid4().hex
            m.system_properties.message_type = v2.NORMAL
            messages.append(m)
        answer = self.stub.SendMessage(rpc.SendMessageRequest(messages=messages), timeout=10)
        assert answer.status.code == v2.OK

    def receive(self, batch: int, invisible_ms: int, wait_s: float = 0.2) -> list[Any]:
        request = rpc.ReceiveMessageRequest(
            group=v2.Resource(name=GROUP),
            message_queue=v2.MessageQueue(topic=v2.Resource(name=self.topic), id=0),
            filter_expression=v2.FilterExpression(type=v2.TAG, expression="*"),
            batch_size=batch,
            invisible_duration=Duration(
                seconds=invisible_ms // 1000, nanos=invisible_ms % 1000 * 1_000_000
            ),
            long_polling_timeout=Duration(seconds=int(wait_s), nanos=int(wait_s % 1 * 1e9)),
        )
        answers = list(self.stub.ReceiveMessage(request, timeout=wait_s + 10))
        if answers[0].status.code == v2.MESSAGE_NOT_FOUND:
            return []
        assert answers[0].status.code == v2.OK, answers[0].status
        assert answers[1].HasField("delivery_timestamp")
        return [a.message for a in answers[2:]]

    def ack(self, *handles: str) -> Any:
        return self.stub.AckMessage(
            rpc.AckMessageRequest(
                group=v2.Resource(name=GROUP),
                topic=v2.Resource(name=self.topic),
                entries=[rpc.AckMessageEntry(message_id="m", receipt_handle=h) for h in handles],
            ),
            timeout=10,
        )

    def change_invisible(self, handle: str, invisible_ms: int) -> Any:
        return self.stub.ChangeInvisibleDuration(
            rpc.ChangeInvisibleDurationRequest(
                group=v2.Resource(name=GROUP),
                topic=v2.Resource(name=self.topic),
                receipt_handle=handle,
                invisible_duration=Duration(nanos=invisible_ms * 1_000_000),
                message_id="m",
            ),
            timeout=10,
        )


def handle(message: Any) -> str:
    return str(message.system_properties.receipt_handle)


def test_receive_ack_and_redelivery_are_served_natively(brokers: Brokers) -> None:
    broker = brokers.start(shards=1)
    shard = Shard(broker, brokers.client(broker))
    shard.send(b"a", b"b", b"c")
    first = shard.receive(3, invisible_ms=1000)
    assert [m.body for m in first] == [b"a", b"b", b"c"]
    for offset, m in enumerate(first):
        system = m.system_properties
        assert (system.queue_id, system.queue_offset, system.delivery_attempt) == (0, offset, 1)
        assert system.born_host == "127.0.0.1"
        assert system.store_timestamp.seconds > 0
        assert system.invisible_duration == Duration(seconds=1)
        assert handle(m).startswith(f"0/{offset}/1/")
    assert shard.receive(3, invisible_ms=1000) == [], "all three are invisible"
    assert shard.ack(handle(first[0])).status.code == v2.OK
    time.sleep(1.2)
    again = shard.receive(3, invisible_ms=1000)
    assert [(m.body, m.system_properties.delivery_attempt) for m in again] == [
        (b"b", 2),
        (b"c", 2),
    ]
    # The first delivery of b was superseded: its receipt no longer acks anything.
    stale = shard.ack(handle(first[1]))
    assert stale.status.code == v2.INVALID_RECEIPT_HANDLE
    assert stale.entries[0].status.code == v2.INVALID_RECEIPT_HANDLE
    assert shard.ack(handle(again[0])).status.code == v2.OK
    # c made visible at once: received again, its third delivery.
    changed = shard.change_invisible(handle(again[1]), 0)
    assert changed.status.code == v2.OK
    assert changed.receipt_handle != handle(again[1])
    [third] = shard.receive(3, invisible_ms=1000)
    assert (third.body, third.system_properties.delivery_attempt) == (b"c", 3)
    assert shard.change_invisible(handle(again[1]), 0).status.code == v2.INVALID_RECEIPT_HANDLE
    assert shard.ack(handle(third)).status.code == v2.OK
    counts = native_counts(broker)
    assert counts[("ReceiveMessage", "answered")] == 4
    assert counts[("AckMessage", "answered")] == 4
    assert counts[("ChangeInvisibleDuration", "answered")] == 2
    assert counts[("ReceiveMessage", "declined")] == counts[("AckMessage", "declined")] == 0
    shard.channel.close()


def test_a_waiting_receive_is_woken_by_a_send(brokers: Brokers) -> None:
    broker = brokers.start(shards=1)
    shard = Shard(broker, brokers.client(broker))
    sender = threading.Timer(0.5, shard.send, args=(b"late",))
    sender.start()
    started = time.monotonic()
    found = shard.receive(4, invisible_ms=5000, wait_s=15)
    sender.join()
    assert [m.body for m in found] == [b"late"]
    assert time.monotonic() - started < 5, "woken by the send, not by the 1 s recheck"
    assert native_counts(broker)[("ReceiveMessage", "answered")] == 1
    shard.channel.close()


def test_a_message_out_of_attempts_is_left_to_python_for_the_dead_letter_topic(
    brokers: Brokers,
) -> None:
    broker = brokers.start(shards=1, args=["--rocketmq-max-delivery-attempts", "1"])
    client = brokers.client(broker)
    shard = Shard(broker, client)
    shard.send(b"poison")
    [got] = shard.receive(1, invisible_ms=1000)
    time.sleep(1.2)
    assert shard.receive(1, invisible_ms=1000) == []
    counts = native_counts(broker)
    assert counts[("ReceiveMessage", "answered")] == 1
    assert counts[("ReceiveMessage", "declined")] == 1
    with client.consumer("dlq-reader", f"%DLQ%{GROUP}") as reader:
        read: list[Any] = []
        deadline = time.monotonic() + 15
        while not read and time.monotonic() < deadline:
            read += reader.poll(timeout=1.0)
    assert [m.body for m in read] == [b"poison"]
    assert read[0].properties["UNIQ_KEY"] == got.system_properties.message_id
    shard.channel.close()


def test_native_leases_are_read_back_after_a_restart(
    brokers: Brokers,
) -> None:
    broker = brokers.start(shards=1)
    shard = Shard(broker, brokers.client(broker))
    shard.send(b"m0", b"m1", b"m2")
    found = shard.receive(3, invisible_ms=60_000)
    assert shard.ack(handle(found[0]), handle(found[2])).status.code == v2.OK
    time.sleep(0.5)  # the books are saved every 0.2 s
    shard.channel.close()
    broker.stop()
    again = brokers.start(shards=1, data=broker.data_dir)
    same = Shard.__new__(Shard)
    same.topic = shard.topic
    endpoint = brokers.client(again).route(shard.topic).queues[0].endpoint
    same.channel = grpc.insecure_channel(endpoint)
    same.stub = service.MessagingServiceStub(same.channel)
    same.send(b"m3")
    # m1 stays invisible for its 60 s, m0 and m2 are acked: only the new m3 comes.
    assert [m.body for m in same.receive(3, invisible_ms=60_000)] == [b"m3"]
    assert same.ack(handle(found[1])).status.code == v2.OK
    assert same.ack(handle(found[1])).status.code == v2.INVALID_RECEIPT_HANDLE
    same.channel.close()
