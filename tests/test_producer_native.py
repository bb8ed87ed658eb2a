"""The producer's own connections (crates/rmqnet/src/client/sender.rs) against a real
`rmq serve` on loopback: the token goes with every batch, a queue's callbacks run in the
order of its sends, and a shard that is gone is retried, then fails as unavailable."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from rmq.client import AuthenticationError, BrokerUnavailableError, Client, SendFuture
from rmq.client.messages import TopicRoute
from rmq.cluster.local import LocalBroker

from tests.support.brokers import Brokers

TOPIC = "native"


@pytest.fixture(scope="module")
def client(module_brokers: Brokers) -> Client:
    client = module_brokers.client(module_brokers.start(shards=2))
    client.create_topic(TOPIC, queues=4)
    return client


def test_plaintext_producers_send_natively(client: Client) -> None:
    with client.producer() as producer:
        result = producer.send_sync(TOPIC, b"hello", queue_id=3)
    assert (result.topic, result.queue_id) == (TOPIC, 3)


def test_callbacks_of_a_queue_run_in_the_order_of_its_sends(client: Client) -> None:
    done: list[tuple[int, int]] = []
    lock = threading.Lock()

    def record(index: int, future: SendFuture) -> None:
        with lock:
            done.append((index, future.result().queue_offset))

    with client.producer(batch_max_messages=50, linger_ms=1) as producer:
        for index in range(6000):
            future = producer.send(TOPIC, b"%d" % index, queue_id=index % 2)
            future.add_done_callback(lambda f, i=index: record(i, f))
    assert len(done) == 6000
    for queue_id in (0, 1):
        indexes = [index for index, _ in done if index % 2 == queue_id]
        offsets = [offset for index, offset in done if index % 2 == queue_id]
        assert indexes == sorted(indexes)
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)


class RouteCountingClient(Client):
    """A client that counts the route lookups that ask the route service."""

    asked = 0

    def route(self, topic: str, *, refresh: bool = False) -> TopicRoute:
        if refresh or topic not in self._routes:
            self.asked += 1
        return super().route(topic, refresh=refresh)


def test_a_topic_the_client_created_is_sent_to_without_asking_its_route(client: Client) -> None:
    counting = RouteCountingClient(client.endpoint)
    try:
        counting.create_topic("created_here", queues=2)
        with counting.producer() as producer:
            assert producer.send_sync("created_here", b"x", queue_id=1).queue_id == 1
        assert counting.asked == 0
    finally:
        counting.close()


def test_a_queue_missing_from_a_cached_route_is_asked_about_again(client: Client) -> None:
    client.create_topic("grown", queues=2)
    other = Client(client.endpoint)
    try:
        other.create_topic("grown", queues=4)  # the first client's route is stale now
    finally:
        other.close()
    with client.producer() as producer:
        result = producer.send_sync("grown", b"to a new queue", queue_id=3)
    assert (result.topic, result.queue_id) == ("grown", 3)


def test_the_token_goes_with_every_batch(brokers: Brokers) -> None:
    token = ["--token", "s3cret"]
    broker = brokers.start(shards=1, args=token)
    client = brokers.client(broker, token="s3cret")
    client.create_topic(TOPIC, queues=1)
    with client.producer() as producer:
        assert producer.send_sync(TOPIC, b"with the token").queue_id == 0
        # The same producer's connections with a wrong token: refused, and not
        # retried (an authentication failure does not pass by itself).
        producer._stop()
        producer._start(timeout=10.0, metadata=[("authorization", "Bearer no")])
        started = time.monotonic()
        with pytest.raises(AuthenticationError, match="token"):
            producer.send_sync(TOPIC, b"without it", timeout=30)
        assert time.monotonic() - started < 5


def test_a_shard_that_is_gone_is_retried_then_fails_unavailable(tmp_path: Path) -> None:
    broker = LocalBroker(tmp_path / "data", shards=1)
    with broker:
        client = Client(broker.endpoint, retry_timeout=1.5)
        client.create_topic(TOPIC, queues=1)
        producer = client.producer()
        assert producer.send_sync(TOPIC, b"before").queue_id == 0
    # The broker is stopped: connections are refused, first the shard's, then the
    # route service's when the retry looks the route up again.
    started = time.monotonic()
    error = producer.send(TOPIC, b"after").exception(timeout=60)
    assert isinstance(error, BrokerUnavailableError), error
    assert time.monotonic() - started >= 1.0, "failed without being retried"
    producer.close()
    client.close()
