"""A shard process that stops answering (SIGSTOP: alive, its port open, nothing read):
the supervisor notices, restarts it, and still stops at once on SIGTERM."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from rmq.cluster.supervisor import PROBE_INTERVAL, PROBE_TIMEOUT, UNANSWERED_PROBES

from tests.support.brokers import Brokers
from tests.support.certificates import self_signed_certificate


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_sigterm_stops_the_broker_while_a_shard_does_not_answer(brokers: Brokers) -> None:
    broker = brokers.start(shards=2)
    pids = broker.shard_pids()
    os.kill(pids[0], signal.SIGSTOP)
    # Long enough for the supervisor to be waiting on the stopped shard's answer.
    time.sleep(PROBE_INTERVAL + 1)
    started = time.monotonic()
    code = broker.stop(timeout=30)
    took = time.monotonic() - started
    assert code == 0, broker.log_text()
    assert took < 5, f"rmq serve took {took:.1f} s to stop"
    assert all(_gone(pid) for pid in pids)


def test_a_shard_that_does_not_answer_is_restarted(brokers: Brokers) -> None:
    broker = brokers.start(shards=2)
    client = brokers.client(broker, retry_timeout=60)
    client.create_topic("before", queues=4)
    stopped = broker.shard_pids()[1]
    os.kill(stopped, signal.SIGSTOP)
    broker.wait_for(
        lambda s: s["processes"][1]["restarts"] == 1 and s["processes"][1]["serving"],
        timeout=UNANSWERED_PROBES * (PROBE_INTERVAL + PROBE_TIMEOUT) + 30,
        what="the restart of the shard process that does not answer",
    )
    assert _gone(stopped)
    assert "did not answer" in broker.log_text()
    assert broker.state()["processes"][0]["restarts"] == 0
    # Both processes serve again: a topic on both is created, written and read.
    client.create_topic("after", queues=4)
    with client.producer() as producer:
        for topic in ("before", "after"):
            for queue in range(4):
                producer.send(topic, b"m", queue_id=queue).result(30)
    for topic in ("before", "after"):
        with client.consumer(f"reader-{topic}", topic) as consumer:
            seen = 0
            deadline = time.monotonic() + 30
            while seen < 4 and time.monotonic() < deadline:
                seen += len(consumer.poll(timeout=1.0))
        assert seen == 4
    started = time.monotonic()
    assert broker.stop(timeout=30) == 0
    assert time.monotonic() - started < 5


def test_healthy_shards_answer_the_checks_over_tls_with_a_token(
    brokers: Brokers, tmp_path: Path
) -> None:
    cert, key = self_signed_certificate(tmp_path, "broker")
    args = ["--tls-cert", str(cert), "--tls-key", str(key), "--token", "t0k"]
    broker = brokers.start(shards=2, args=args)
    # Long enough for a first check that went unanswered to be logged.
    time.sleep(PROBE_INTERVAL + PROBE_TIMEOUT + 1)
    assert "health check" not in broker.log_text()
    assert [p["restarts"] for p in broker.state()["processes"]] == [0, 0]
    assert broker.stop(timeout=30) == 0
