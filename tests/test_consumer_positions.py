"""Where a consumer starts each queue: at its group's committed offset where there is
one, else at the queue's first (``start="earliest"``) or next (``"latest"``) offset; the
offsets of every shard and queue are asked for all at once."""

from __future__ import annotations

import time

from rmq.client import Client, Consumer, ReceivedMessage
from rmq.cluster.local import LocalBroker

from tests.support.brokers import Brokers

TOPIC = "positions"
QUEUES = 4


def send_to_every_queue(client: Client, count: int, tag: str) -> None:
    with client.producer(linger_ms=1) as producer:
        for queue_id in range(QUEUES):
            for i in range(count):
                producer.send(TOPIC, f"{tag} {queue_id}/{i}".encode(), queue_id=queue_id)
        assert producer.flush(timeout=30)


def poll_until(consumer: Consumer, want: int, got: list[ReceivedMessage]) -> None:
    deadline = time.monotonic() + 30
    while len(got) < want and time.monotonic() < deadline:
        got.extend(consumer.poll(timeout=0.5))
    # Nothing more than wanted comes.
    got.extend(consumer.poll(timeout=0.3))


def test_committed_queues_resume_and_the_others_start_at_the_end(module_brokers: Brokers) -> None:
    broker: LocalBroker = module_brokers.start(shards=2)
    client = module_brokers.client(broker)
    client.create_topic(TOPIC, queues=QUEUES)
    send_to_every_queue(client, 10, "old")
    # The group commits queues 0 and 1 half way; 2 and 3 it never read.
    with client.consumer("g", TOPIC, queues=[0, 1]) as first:
        first.seek(0, 5)
        first.seek(1, 5)
        first.commit()
    with client.consumer("g", TOPIC, start="latest") as consumer:
        # The first poll places every queue, before the new messages are sent.
        got = consumer.poll(timeout=0.3)
        send_to_every_queue(client, 1, "new")
        poll_until(consumer, 2 * 6 + 2, got)
    by_queue = {q: [m.queue_offset for m in got if m.queue_id == q] for q in range(QUEUES)}
    assert by_queue == {0: list(range(5, 11)), 1: list(range(5, 11)), 2: [10], 3: [10]}


def test_a_new_group_reads_every_queue_from_its_start(module_brokers: Brokers) -> None:
    broker: LocalBroker = module_brokers.start(shards=2)
    client = module_brokers.client(broker)
    client.create_topic(TOPIC, queues=QUEUES)
    send_to_every_queue(client, 3, "old")
    got: list[ReceivedMessage] = []
    with client.consumer("fresh", TOPIC) as consumer:
        poll_until(consumer, 3 * QUEUES, got)
    assert sorted((m.queue_id, m.queue_offset) for m in got) == [
        (q, o) for q in range(QUEUES) for o in range(3)
    ]
