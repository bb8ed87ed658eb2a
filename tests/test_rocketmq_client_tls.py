"""The official RocketMQ 5 Python client (``rocketmq-python-client``) over TLS against
``rmq serve --tls-cert/--tls-key``: routes from the access point and sends, receives and
acks on the shards' native data plane, every connection TLS (the broker serves nothing
in plain text then), verified against the test's own certificate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from rmq.client import Client

from tests.support.brokers import Brokers
from tests.support.certificates import self_signed_certificate
from tests.support.native_requests import native_requests

COUNT = 20
REPO = Path(__file__).resolve().parent.parent


def test_the_official_python_client_sends_and_receives_over_tls(
    brokers: Brokers, tmp_path: Path
) -> None:
    cert, key = self_signed_certificate(tmp_path, "broker")
    broker = brokers.start(shards=2, args=["--tls-cert", str(cert), "--tls-key", str(key)])
    topic, group = f"tls-{uuid.uuid4().hex[:8]}", "tls-group"
    with Client(broker.endpoint, tls_root_cert=cert) as client:
        client.create_topic(topic, queues=4)
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
    answered = native_requests(broker)
    for method in ("SendMessage", "ReceiveMessage", "AckMessage"):
        path = f"/apache.rocketmq.v2.MessagingService/{method}"
        assert answered.get((path, "answered"), 0) >= 1, (method, answered)
