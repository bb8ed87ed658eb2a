"""The official RocketMQ 5 clients over TLS against ``rmq serve --tls-cert/--tls-key``:
routes from the access point and sends, receives and acks on the shards' native data
plane, every connection TLS (the broker serves nothing in plain text then).

The Python client (``rocketmq-python-client``) verifies the broker against the test's own
certificate. The Java client (``rocketmq-client-java``) trusts any certificate by design,
so its test shows the traffic is TLS: the same client without TLS gets nowhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from rmq.client import Client
from rmq.cluster.local import LocalBroker

from tests.support.brokers import Brokers
from tests.support.certificates import self_signed_certificate
from tests.support.native_requests import native_requests
from tests.support.rocketmq_java import JavaClient, build_harness

COUNT = 20
QUEUES = 4
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class TlsBroker:
    broker: LocalBroker
    cert: Path
    topic: str

    def stored(self) -> int:
        """How many messages the topic's queues hold."""
        with Client(self.broker.endpoint, tls_root_cert=self.cert) as client:
            return sum(client.queue_offsets(self.topic, q)[1] for q in range(QUEUES))


def tls_broker(brokers: Brokers, tmp_path: Path, topic_prefix: str) -> TlsBroker:
    """A two-shard broker serving only TLS, with a new topic of QUEUES queues."""
    cert, key = self_signed_certificate(tmp_path, "broker")
    broker = brokers.start(shards=2, args=["--tls-cert", str(cert), "--tls-key", str(key)])
    topic = f"{topic_prefix}-{uuid.uuid4().hex[:8]}"
    with Client(broker.endpoint, tls_root_cert=cert) as client:
        client.create_topic(topic, queues=QUEUES)
    return TlsBroker(broker, cert, topic)


def test_the_official_python_client_sends_and_receives_over_tls(
    brokers: Brokers, tmp_path: Path
) -> None:
    served = tls_broker(brokers, tmp_path, "tls")
    broker, cert, topic, group = served.broker, served.cert, served.topic, "tls-group"
    env = {**os.environ, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(cert)}
    run = subprocess.run(
        [sys.executable, "-m", "tests.support.rocketmq_python_tls",
         broker.rocketmq_endpoint, topic, group, str(COUNT)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert sorted(result["sent"]) == sorted(f"tls-{i}" for i in range(COUNT))
    assert result["received"] == result["sent"]
    assert_answered_natively(broker)


def test_the_official_java_client_sends_and_receives_over_tls(
    brokers: Brokers, tmp_path: Path
) -> None:
    served = tls_broker(brokers, tmp_path, "tls-java")
    broker, topic, group = served.broker, served.topic, "tls-java-group"
    java = JavaClient(build_harness(), broker.rocketmq_endpoint, tmp_path / "java", tls=True)
    java.produce(topic, COUNT // 2, body_prefix="sync")
    java.produce(topic, COUNT // 2, async_send=True, body_prefix="async")
    received = java.simple_consume(topic, group, COUNT, max_seconds=60)
    sent = [f"sync-{i}" for i in range(COUNT // 2)] + [f"async-{i}" for i in range(COUNT // 2)]
    assert sorted(line["body"] for line in received.items) == sorted(sent)
    assert_answered_natively(broker)

    plain = JavaClient(build_harness(), broker.rocketmq_endpoint, tmp_path / "plain")
    refused = plain.produce(topic, 1, body_prefix="plain", timeout=30, check=False)
    assert refused.returncode != 0, refused.describe()
    assert served.stored() == COUNT


def assert_answered_natively(broker: LocalBroker) -> None:
    """The sends, receives and acks were answered by the shards' native data plane."""
    answered = native_requests(broker)
    for method in ("SendMessage", "ReceiveMessage", "AckMessage"):
        path = f"/apache.rocketmq.v2.MessagingService/{method}"
        assert answered.get((path, "answered"), 0) >= 1, (method, answered)
