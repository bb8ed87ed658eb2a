"""A RocketMQ 5 consumer goes on past messages lost from the tier (issue 21): against a
real S3-compatible server (versitygw on loopback), ``rmq serve`` and Apache RocketMQ 5's
official Python client. When a commit-log segment is gone from the bucket, a receive
passes over the lost messages in one step (the group's position moves past them, as
RocketMQ's broker corrects an offset that no longer exists), the broker logs how many it
skipped, and the consumer gets every message after the lost object, once.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer

from bench.peers.s3 import S3Server
from tests.support.tiered_store import broker_with_lost_segment

TOPIC = "TieredV2"
QUEUES = 2
COUNT = 1200
SKIPPED = re.compile(rf"group lost-v2 skips (\d+) messages of {TOPIC}/(\d+)")


def body(i: int) -> bytes:
    return f"message {i} ".encode() * 8


def test_a_simple_consumer_goes_on_past_messages_lost_from_the_tier(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    bodies = [body(i) for i in range(COUNT)]
    with broker_with_lost_segment(
        tmp_path / "data", s3_server, s3_bucket, TOPIC, QUEUES, bodies
    ) as lost_segment:
        broker = lost_segment.broker
        kept = {bodies[i] for i in lost_segment.kept()}
        lost = COUNT - len(kept)
        assert lost > QUEUES * 10, "the lost segment must hold many messages of each queue"

        configuration = ClientConfiguration(
            broker.rocketmq_endpoint, Credentials(), request_timeout=10
        )
        consumer = SimpleConsumer(
            configuration, "lost-v2", {TOPIC: FilterExpression("*")}, await_duration=2
        )
        consumer.startup()
        try:
            got: list[bytes] = []
            deadline = time.monotonic() + 60
            while len(got) < len(kept) and time.monotonic() < deadline:
                for message in consumer.receive(32, 30):
                    got.append(message.body)
                    consumer.ack(message)
            assert len(got) == len(set(got)), "a message came twice"
            assert set(got) == kept
            # The position moved past the lost messages: nothing more comes, not even
            # after the invisible time of what was acked.
            assert consumer.receive(32, 30) == []
        finally:
            consumer.shutdown()
        log = broker.log_text()
    skips = SKIPPED.findall(log)
    assert sorted(int(queue) for _, queue in skips) == list(range(QUEUES)), log
    assert sum(int(count) for count, _ in skips) == lost, log
