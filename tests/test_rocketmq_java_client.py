"""``rmq serve``'s RocketMQ 5 access point (``apache.rocketmq.v2.MessagingService``) as the
official Apache RocketMQ 5 Java client sees it.

The client (rocketmq-client-java) runs as the harness in tests/rocketmq_clients/java/,
built once per session with Maven (tests/support/rocketmq_java.py); each test drives it
as a separate process against one broker the module shares, each on its own topic and
consumer groups:

* sends, sync and async, read back and acked by a SimpleConsumer (and not seen again);
* a message not acked comes back after its invisible duration, delivery attempt 2;
* a FIFO consumer group gets each message group's messages in send order;
* a PushConsumer's listener gets everything, and what it fails comes back;
* messages cross between the Java client and rmq's own client both ways with tag, keys
  and properties intact.

Nothing here is ever skipped: without Java or Maven the tests fail.
"""

from __future__ import annotations

import time

import pytest
from rmq.client import Client, ReceivedMessage
from rmq.cluster.local import LocalBroker

from tests.support.brokers import Brokers
from tests.support.rocketmq_java import JavaClient, Line, build_harness

FIFO_GROUP = "java-fifo"
QUEUES = 4


@pytest.fixture(scope="module")
def broker(module_brokers: Brokers) -> LocalBroker:
    return module_brokers.start(shards=2, args=["--rocketmq-fifo-group", FIFO_GROUP])


@pytest.fixture(scope="module")
def client(module_brokers: Brokers, broker: LocalBroker) -> Client:
    return module_brokers.client(broker)


@pytest.fixture(scope="module")
def java(broker: LocalBroker, tmp_path_factory: pytest.TempPathFactory) -> JavaClient:
    endpoint = broker.rocketmq_endpoint
    return JavaClient(build_harness(), endpoint, tmp_path_factory.mktemp("java-client"))


@pytest.fixture
def topic(client: Client, request: pytest.FixtureRequest) -> str:
    """A new topic for the test, named after it."""
    name = "java-" + request.node.name.removeprefix("test_").replace("_", "-")
    client.create_topic(name, queues=QUEUES)
    return name


def bodies(lines: list[Line]) -> list[str]:
    return [line["body"] for line in lines]


def poll_all(client: Client, group: str, topic: str, count: int) -> list[ReceivedMessage]:
    """``count`` messages of ``topic`` through rmq's own consumer (fails after 30 s)."""
    received: list[ReceivedMessage] = []
    deadline = time.monotonic() + 30
    with client.consumer(group, topic) as consumer:
        while len(received) < count and time.monotonic() < deadline:
            received += consumer.poll(timeout=1.0)
    assert len(received) == count, f"rmq's consumer got {len(received)} of {count}"
    return received


# --- send and receive --------------------------------------------------------------------


def test_sync_and_async_sends_read_back_and_acked(java: JavaClient, topic: str) -> None:
    properties = {"order": "42", "region": "eu"}
    sync = java.produce(
        topic, 10, tag="TagA", keys=["k1", "k2"], properties=properties, body_prefix="sync"
    )
    sent = java.produce(topic, 10, async_send=True, tag="TagA", keys=["k3"], body_prefix="async")
    receipts = sync.items + sent.items
    assert [r["i"] for r in sync.items] == list(range(10)) == [r["i"] for r in sent.items]
    assert sync.done["sent"] == sent.done["sent"] == 10
    ids = {r["message_id"] for r in receipts}
    assert len(ids) == 20, "message ids are not unique"
    assert all(r["offset"] >= 0 and r["broker"].startswith("rmq-shard-") for r in receipts)
    # Both shard processes took some (the client spreads sends over the route's queues).
    assert len({r["broker"] for r in receipts}) == 2

    # Invisible for 3 s: were the acks lost, the messages would come back below.
    run = java.simple_consume(topic, "java-sc", 20, invisible_seconds=3, max_seconds=30)
    got = run.items
    assert run.done["received"] == 20
    assert sorted(bodies(got)) == sorted(
        [f"sync-{i}" for i in range(10)] + [f"async-{i}" for i in range(10)]
    )
    assert {m["message_id"] for m in got} == ids
    by_body = {m["body"]: m for m in got}
    for receipt, prefix in [(r, "sync") for r in sync.items] + [(r, "async") for r in sent.items]:
        message = by_body[f"{prefix}-{receipt['i']}"]
        assert message["message_id"] == receipt["message_id"]
        assert message["offset"] == receipt["offset"]
    for message in got:
        assert message["topic"] == topic
        assert message["tag"] == "TagA"
        assert message["delivery_attempt"] == 1
        assert message["message_group"] is None
        assert message["born_timestamp"] > 0 and message["born_host"]
        if message["body"].startswith("sync"):
            assert message["keys"] == ["k1", "k2"]
            assert message["properties"] == properties
        else:
            assert message["keys"] == ["k3"]
            assert message["properties"] == {}

    time.sleep(3.5)
    again = java.simple_consume(topic, "java-sc", 1, max_seconds=5)
    assert again.done["received"] == 0, f"acked messages came back: {again.items}"
    # Another group has its own position: it gets everything.
    other = java.simple_consume(topic, "java-sc-other", 20, max_seconds=30)
    assert other.done["received"] == 20


def test_tag_filter(java: JavaClient, topic: str) -> None:
    java.produce(topic, 5, tag="TagA", body_prefix="a")
    java.produce(topic, 5, tag="TagB", body_prefix="b")
    java.produce(topic, 5, body_prefix="untagged")
    # Asked for exactly as many as match: anything the filter let through in error would
    # take the place of a match.
    run = java.simple_consume(topic, "java-tags", 5, tag_filter="TagB", max_seconds=10)
    assert sorted(bodies(run.items)) == [f"b-{i}" for i in range(5)]
    assert {m["tag"] for m in run.items} == {"TagB"}
    both = java.simple_consume(topic, "java-tags-2", 10, tag_filter="TagA||TagB", max_seconds=10)
    assert sorted(bodies(both.items)) == [f"a-{i}" for i in range(5)] + [f"b-{i}" for i in range(5)]


def test_large_and_binary_bodies(java: JavaClient, client: Client, topic: str) -> None:
    size = 512 * 1024
    java.produce(topic, 3, size=size, body_prefix="big")
    with client.producer() as producer:
        producer.send_sync(topic, bytes(range(256)) * 4)
    run = java.simple_consume(topic, "java-big", 4, max_seconds=20)
    texts = [m for m in run.items if "body" in m]
    binary = [m for m in run.items if "body_b64" in m]
    assert sorted(m["body"][:5] for m in texts) == ["big-0", "big-1", "big-2"]
    assert all(m["body_size"] == size for m in texts)
    assert len(binary) == 1 and binary[0]["body_size"] == 1024


# --- redelivery --------------------------------------------------------------------------


def test_redelivery_after_invisible_duration(java: JavaClient, topic: str) -> None:
    (receipt,) = java.produce(topic, 1, body_prefix="again").items
    run = java.redeliver(topic, "java-redeliver", invisible_seconds=3)
    deliveries = {line["delivery"]: line for line in run.items}
    assert run.done["redelivered"], run.describe()
    first, second = deliveries[1], deliveries[2]
    assert first["message_id"] == second["message_id"] == receipt["message_id"]
    assert first["body"] == second["body"] == "again-0"
    assert (first["delivery_attempt"], second["delivery_attempt"]) == (1, 2)
    # Not before its invisible duration ended (a little slack for the two clocks).
    assert second["seconds"] - first["seconds"] >= 2.5, run.describe()
    assert "other" not in deliveries
    # The redelivery was acked: gone for good.
    time.sleep(3.5)
    assert java.simple_consume(topic, "java-redeliver", 1, max_seconds=5).done["received"] == 0


# --- FIFO --------------------------------------------------------------------------------


def test_fifo_message_groups_in_send_order(java: JavaClient, topic: str) -> None:
    groups = ["order-a", "order-b", "order-c"]
    sent: dict[str, list[str]] = {}
    for group in groups:
        run = java.produce(topic, 8, message_group=group, body_prefix=group)
        sent[group] = [f"{group}-{i}" for i in range(8)]
        # A message group lives on one broker (and there on one queue).
        assert len({r["broker"] for r in run.items}) == 1, run.describe()
    run = java.simple_consume(topic, FIFO_GROUP, 24, max_seconds=40)
    assert run.done["received"] == 24, run.describe()
    for group in groups:
        received = [m for m in run.items if m["message_group"] == group]
        assert bodies(received) == sent[group], f"message group {group} out of order"


def test_fifo_push_consumer_keeps_order_through_a_failure(java: JavaClient, topic: str) -> None:
    java.produce(topic, 5, message_group="only", body_prefix="fifo")
    run = java.push_consume(topic, FIFO_GROUP, 5, fail_first=1, max_seconds=60)
    assert run.done["complete"], run.describe()
    succeeded = [m for m in run.items if m["result"] == "SUCCESS"]
    assert bodies(succeeded) == [f"fifo-{i}" for i in range(5)]
    # Each failed first, then succeeded, before the next one was delivered.
    assert bodies(run.items) == [body for i in range(5) for body in [f"fifo-{i}"] * 2]


# --- push consumer -----------------------------------------------------------------------


def test_push_consumer_receives_everything(java: JavaClient, topic: str) -> None:
    java.produce(topic, 20, async_send=True, tag="push", body_prefix="push")
    run = java.push_consume(topic, "java-push", 20, max_seconds=60)
    assert run.done["complete"], run.describe()
    assert sorted(bodies(run.items)) == sorted(f"push-{i}" for i in range(20))
    assert {m["result"] for m in run.items} == {"SUCCESS"}
    assert {m["tag"] for m in run.items} == {"push"}


def test_push_consumer_failure_is_redelivered(java: JavaClient, topic: str) -> None:
    java.produce(topic, 3, body_prefix="retry")
    run = java.push_consume(topic, "java-push-retry", 3, fail_first=1, max_seconds=90)
    assert run.done["complete"], run.describe()
    for i in range(3):
        deliveries = [m for m in run.items if m["body"] == f"retry-{i}"]
        assert [m["result"] for m in deliveries] == ["FAILURE", "SUCCESS"], run.describe()
        assert [m["delivery_attempt"] for m in deliveries] == [1, 2], run.describe()


# --- with rmq's own client ---------------------------------------------------------------


def test_java_producer_to_rmq_consumer(java: JavaClient, client: Client, topic: str) -> None:
    properties = {"trace": "t-1", "unicode": "größe"}
    run = java.produce(
        topic, 6, tag="created", keys=["order-1", "order-2"], properties=properties,
        body_prefix="from-java",
    )  # fmt: skip
    receipts = {f"from-java-{r['i']}": r for r in run.items}
    received = poll_all(client, "rmq-reader", topic, 6)
    assert sorted(m.body for m in received) == sorted(f"from-java-{i}".encode() for i in range(6))
    for message in received:
        assert message.topic == topic
        assert message.tags == "created"
        assert list(message.keys) == ["order-1", "order-2"]
        for name, value in properties.items():
            assert message.properties.get(name) == value, message.properties
        receipt = receipts[message.body.decode()]
        assert message.queue_offset == receipt["offset"]
        # RocketMQ keeps the client's message id in the UNIQ_KEY property.
        assert message.properties.get("UNIQ_KEY") == receipt["message_id"]


def test_rmq_producer_to_java_consumer(java: JavaClient, client: Client, topic: str) -> None:
    with client.producer() as producer:
        for i in range(6):
            producer.send_sync(
                topic, f"from-rmq-{i}".encode(), tags="shipped", keys=[f"key-{i}", "all"],
                properties={"source": "rmq", "n": str(i)},
            )  # fmt: skip
    run = java.simple_consume(topic, "java-reader", 6, max_seconds=20)
    assert sorted(bodies(run.items)) == sorted(f"from-rmq-{i}" for i in range(6))
    for message in run.items:
        i = int(message["body"].rpartition("-")[2])
        assert message["tag"] == "shipped"
        assert message["keys"] == [f"key-{i}", "all"]
        assert message["properties"] == {"source": "rmq", "n": str(i)}
        assert message["delivery_attempt"] == 1
    # The broker gives each message sent without a client message id one of its own.
    ids = {m["message_id"] for m in run.items}
    assert len(ids) == 6 and "" not in ids
