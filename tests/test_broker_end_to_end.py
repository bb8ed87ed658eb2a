"""End to end through `rmq serve` with real processes on loopback: produce tens of
thousands of varied messages, consume them with a group, look them up, restart with other
shard counts."""

from __future__ import annotations

import random
import time
from collections import defaultdict
from pathlib import Path

import pytest
from rmq.client import Client, ReceivedMessage, SendResult
from rmq.cluster.local import LocalBroker

from tests.support.brokers import Brokers

TOPIC = "e2e"
COUNT = 30_000


def expected_message(index: int, rng: random.Random) -> dict[str, object]:
    size = rng.choice([0, 1, 17, 100, 100, 1000, 4096]) if index % 997 else 200_000
    keys = [f"key-{index}"] + ([f"pair-{index // 2}"] if index % 5 == 0 else [])
    return {
        "body": index.to_bytes(4, "big") + rng.randbytes(max(size - 4, 0)) if size else b"",
        "tags": rng.choice(["a", "b", "c", None]),
        "keys": keys,
        "properties": {"index": str(index)} if index % 3 else {},
    }


def consume_all(client: Client, group: str, want: int, **options: object) -> list[ReceivedMessage]:
    got: list[ReceivedMessage] = []
    deadline = time.monotonic() + 120
    with client.consumer(group, TOPIC, **options) as consumer:  # type: ignore[arg-type]
        while len(got) < want and time.monotonic() < deadline:
            got.extend(consumer.poll(timeout=1.0))
        consumer.commit()
    return got


@pytest.fixture(scope="module")
def produced(
    module_brokers: Brokers,
) -> tuple[Client, dict[tuple[int, int], dict[str, object]], list[SendResult]]:
    broker = module_brokers.start(shards=2)
    client = module_brokers.client(broker)
    route = client.create_topic(TOPIC, queues=8)
    assert len(route.queues) == 8 and {q.shard for q in route.queues} == {0, 1}
    rng = random.Random(42)
    messages = [expected_message(i, rng) for i in range(COUNT)]
    with client.producer(linger_ms=2) as producer:
        futures = [
            producer.send(
                TOPIC,
                m["body"],  # type: ignore[arg-type]
                tags=m["tags"],  # type: ignore[arg-type]
                keys=m["keys"],  # type: ignore[arg-type]
                properties=m["properties"],  # type: ignore[arg-type]
                sharding_key=f"user-{i % 13}" if i % 2 else None,
            )
            for i, m in enumerate(messages)
        ]
        producer.flush()
    results = [f.result(timeout=60) for f in futures]
    by_position = {(r.queue_id, r.queue_offset): m for r, m in zip(results, messages, strict=True)}
    return client, by_position, results


def test_every_message_comes_back_once_with_its_content_in_queue_order(produced) -> None:  # type: ignore[no-untyped-def]
    client, by_position, _ = produced
    assert len(by_position) == COUNT  # distinct queue positions: nothing overwritten
    got = consume_all(client, "group-1", COUNT)
    assert len(got) == COUNT
    per_queue: dict[int, list[int]] = defaultdict(list)
    for message in got:
        expected = by_position[(message.queue_id, message.queue_offset)]
        assert message.body == expected["body"]
        assert message.tags == expected["tags"]
        assert list(message.keys) == expected["keys"]
        assert message.properties == expected["properties"]
        assert message.topic == TOPIC
        per_queue[message.queue_id].append(message.queue_offset)
    assert sorted(per_queue) == list(range(8))
    for offsets in per_queue.values():
        assert offsets == list(range(len(offsets))), "a queue was delivered out of order"
    # The group committed everything: a new consumer of the group gets nothing more.
    with client.consumer("group-1", TOPIC) as again:
        assert again.poll(timeout=0.5) == []


def test_messages_with_one_sharding_key_share_a_queue(produced) -> None:  # type: ignore[no-untyped-def]
    _, _, results = produced
    queues_of_key: dict[str, set[int]] = defaultdict(set)
    for index, result in enumerate(results):
        if index % 2:
            queues_of_key[f"user-{index % 13}"].add(result.queue_id)
    assert all(len(queues) == 1 for queues in queues_of_key.values())


def test_a_tag_filter_delivers_exactly_the_tagged_messages(produced) -> None:  # type: ignore[no-untyped-def]
    client, by_position, _ = produced
    want = sum(1 for m in by_position.values() if m["tags"] == "b")
    got = consume_all(client, "only-b", want, tags=["b"])
    assert len(got) == want and all(m.tags == "b" for m in got)


def test_lookups_by_msg_id_and_key_through_the_broker(produced) -> None:  # type: ignore[no-untyped-def]
    client, by_position, results = produced
    for result in random.Random(1).sample(results, 20):
        found = client.get_by_msg_id(result.msg_id)
        assert (found.queue_id, found.queue_offset) == (result.queue_id, result.queue_offset)
        assert found.body == by_position[(result.queue_id, result.queue_offset)]["body"]
    found_by_key = client.query_by_key(TOPIC, "key-1234")
    assert [m.keys[0] for m in found_by_key] == ["key-1234"]


def test_describe_shows_every_queue_with_its_offsets(produced) -> None:  # type: ignore[no-untyped-def]
    client, by_position, _ = produced
    queues = client.describe_topic(TOPIC)
    assert [q.queue_id for q in queues] == list(range(8))
    assert sum(q.max_offset - q.min_offset for q in queues) == len(by_position)


def test_restarting_with_other_shard_counts_keeps_every_message_reachable(tmp_path: Path) -> None:
    data = tmp_path / "data"
    bodies: dict[tuple[int, int], bytes] = {}
    with LocalBroker(data, shards=2) as broker, Client(broker.endpoint) as client:
        client.create_topic(TOPIC, queues=8)
        with client.producer() as producer:
            futures = {i: producer.send(TOPIC, b"first-%d" % i) for i in range(2000)}
        for i, future in futures.items():
            result = future.result()
            bodies[(result.queue_id, result.queue_offset)] = b"first-%d" % i
        half = consume_all(client, "halfway", 1000)
        assert len(half) >= 1000

    with LocalBroker(data, shards=3) as broker, Client(broker.endpoint) as client:
        assert len(client.cluster_info()) == 3
        route = client.create_topic("later", queues=6)
        assert 2 in {q.shard for q in route.queues}, "the new shard takes new queues"
        got = consume_all(client, "from-scratch", len(bodies))
        assert {(m.queue_id, m.queue_offset): m.body for m in got} == bodies
        resumed = consume_all(client, "halfway", len(bodies) - len(half))
        assert len(resumed) == len(bodies) - len(half)
        client.producer().send_sync(
            "later", b"on shard 2", queue_id=[q.shard for q in route.queues].index(2)
        )

    with LocalBroker(data, shards=1) as broker, Client(broker.endpoint) as client:
        processes = client.cluster_info()
        assert len(processes) == 1 and processes[0].shards == (0, 1, 2)
        got = consume_all(client, "one-process", len(bodies))
        assert {(m.queue_id, m.queue_offset): m.body for m in got} == bodies
        assert sum(q.max_offset for q in client.describe_topic("later")) == 1


def test_batches_split_at_their_limits_and_keep_queue_order(brokers: Brokers) -> None:
    """Batches close at ``batch_max_messages`` and ``batch_max_bytes``; a message larger
    than a whole batch still goes, alone; one queue's messages keep their send order."""
    sizes = [10, 10, 10, 10, 5000, 10, 3000, 3000, 10, 10, 10]
    broker = brokers.start(shards=1)
    client = brokers.client(broker)
    client.create_topic("limits", queues=1)
    with client.producer(batch_max_messages=3, batch_max_bytes=4000, linger_ms=50) as p:
        futures = [p.send("limits", bytes([i]) * size, queue_id=0) for i, size in enumerate(sizes)]
        p.flush()
    offsets = [f.result(timeout=30).queue_offset for f in futures]
    assert offsets == list(range(len(sizes)))
    with client.consumer("limits-group", "limits") as consumer:
        got: list[ReceivedMessage] = []
        deadline = time.monotonic() + 30
        while len(got) < len(sizes) and time.monotonic() < deadline:
            got.extend(consumer.poll(timeout=1.0))
    assert [m.body for m in got] == [bytes([i]) * s for i, s in enumerate(sizes)]
