"""The Prometheus endpoint of ``rmq serve`` (issue 23), scraped from a real broker after
known traffic: message and byte counters, per-topic messages and bytes in and out,
consumer lag after a partial consume, the histograms, the tier's backlog, the
dashboard's metrics, ``rmq status``, and a shard process killed with SIGKILL showing in
the restart counter.

The module's broker (two shard processes, tiered to the test S3 server) gets its traffic
once; the restart test comes last because it resets the killed shard's counters.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from rmq._rmqcore import decode_pull_response
from rmq.cli.status import Snapshot, parse, quantile
from rmq.client import Client
from rmq.client.transport import method_path
from rmq.cluster.local import LocalBroker
from rmq.cluster.shard_metrics import cumulative_buckets
from rmq.proto.v1 import broker_pb2 as pb

from bench.peers.s3 import S3Server
from tests.support.brokers import Brokers
from tests.support.cli import rmq_cli

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "docs" / "grafana-dashboard.json"
TOPIC = "metered"
QUEUES = 4
COUNT = 600
SIZE = 200
GROUP = "half-way"
# Two more topics with exact traffic: (queues, messages), each body's size known.
EXACT = {"ledger": (3, 90), "audit": (2, 40)}
PULLED = "ledger"  # read once per queue, up to PULL_MAX messages; "audit" is never read
PULL_MAX = 7
PULL_METHOD = method_path("Shard", "Pull")


def body_size(topic: str, i: int) -> int:
    return (120 if topic == "ledger" else 40) + i % 13


def scrape(broker: LocalBroker) -> Snapshot:
    url = broker.state()["metrics"]
    with urllib.request.urlopen(url, timeout=10) as response:
        return parse(response.read().decode(), time.monotonic())


def total(snapshot: Snapshot, name: str, **labels: str) -> float:
    return sum(
        value
        for key, value in snapshot.series(name).items()
        if all(dict(key).get(k) == v for k, v in labels.items())
    )


class Traffic:
    def __init__(self, broker: LocalBroker, committed: dict[int, int], ends: dict[int, int]):
        self.broker = broker
        self.committed = committed  # the group's committed offset per queue
        self.ends = ends  # each queue's max offset


@pytest.fixture(scope="module")
def traffic(module_brokers: Brokers, s3_server: S3Server) -> Traffic:
    bucket = s3_server.create_bucket(f"metrics-{uuid.uuid4().hex[:12]}")
    args = ["--store-option", "commitlog_segment_size=65536"]
    args += ["--tier-url", f"s3://{bucket}/broker", "--tier-endpoint", s3_server.endpoint]
    broker = module_brokers.start(shards=2, args=args, env=s3_server.subprocess_env())
    client = module_brokers.client(broker)
    client.create_topic(TOPIC, queues=QUEUES)
    with client.producer() as producer:
        futures = [producer.send(TOPIC, bytes([65 + i % 26]) * SIZE) for i in range(COUNT)]
        producer.flush()
    assert [f.exception() for f in futures] == [None] * COUNT
    # Small pulls so that stopping at half cannot overshoot to the end (a poll reads at
    # most max_messages from each of the queues).
    with client.consumer(GROUP, TOPIC, max_messages=25) as consumer:
        seen = 0
        deadline = time.monotonic() + 30
        while seen < COUNT // 2 and time.monotonic() < deadline:
            seen += len(consumer.poll(timeout=2.0))
        consumer.commit()
        committed = consumer.positions()
    assert COUNT // 2 <= sum(committed.values()) < COUNT
    ends = {q: client.queue_offsets(TOPIC, q)[1] for q in range(QUEUES)}
    assert sum(ends.values()) == COUNT
    return Traffic(broker, committed, ends)


class Exact:
    def __init__(
        self, broker: LocalBroker, sent: dict[str, tuple[int, int]], received: tuple[int, int]
    ):
        self.broker = broker
        self.sent = sent  # (messages, body bytes) per topic
        self.received = received  # (messages, body bytes) the pulls of PULLED handed out


@pytest.fixture(scope="module")
def exact(module_brokers: Brokers, traffic: Traffic) -> Exact:
    """Known sends to two topics, and one pull of each queue of one of them, issued
    by hand so that nothing reads ahead: what the client receives is what was read."""
    client = module_brokers.client(traffic.broker)
    sent = {}
    with client.producer() as producer:
        for topic, (queues, count) in EXACT.items():
            client.create_topic(topic, queues=queues)
            bodies = [bytes([97 + i % 26]) * body_size(topic, i) for i in range(count)]
            futures = [producer.send(topic, body) for body in bodies]
            producer.flush()
            assert [f.exception() for f in futures] == [None] * count
            sent[topic] = (count, sum(map(len, bodies)))
    messages = body_bytes = 0
    for queue in range(EXACT[PULLED][0]):
        end = client.queue_offsets(PULLED, queue)[1]
        shard = client.route(PULLED).queues[queue].endpoint
        request = pb.PullRequest(topic=PULLED, queue_id=queue, offset=0, max_messages=PULL_MAX)
        raw = client.call_bytes("pull", shard, PULL_METHOD, request.SerializeToString())
        got, _, _, _ = decode_pull_response(raw)
        assert len(got) == min(PULL_MAX, end)
        messages += len(got)
        body_bytes += sum(len(message.body) for message in got)
    assert 0 < messages < EXACT[PULLED][1]  # a partial consume
    return Exact(traffic.broker, sent, (messages, body_bytes))


# ---- without a broker ------------------------------------------------------------------


def test_engine_histograms_become_cumulative_prometheus_buckets() -> None:
    histogram = {"bounds": [25, 100, 1000], "counts": [2, 0, 5, 1], "sum": 4000}
    assert cumulative_buckets(histogram, 1e6) == [
        ("2.5e-05", 2),
        ("0.0001", 2),
        ("0.001", 7),
        ("+Inf", 8),
    ]
    assert cumulative_buckets({"bounds": [4096], "counts": [0, 3], "sum": 1}, 1) == [
        ("4096.0", 0),
        ("+Inf", 3),
    ]
    # rmq status's p99: within the bucket that holds it, as histogram_quantile does.
    assert quantile({0.001: 50, 0.002: 100, float("inf"): 100}, 0.99) == pytest.approx(0.00198)
    assert quantile({0.001: 0, float("inf"): 0}, 0.99) is None


def test_a_taken_metrics_port_stops_serve_before_it_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = rmq_cli(
            "serve", "--data", str(tmp_path / "data"), "--shards", "1", "--port", "0",
            "--metrics-port", str(port), check=False,
        )  # fmt: skip
    assert result.returncode == 1
    assert f"cannot serve metrics on 127.0.0.1:{port}" in result.stderr.decode()
    assert "--metrics-port" in result.stderr.decode()


# ---- against the module's broker ---------------------------------------------------------


def test_counters_match_the_traffic(traffic: Traffic) -> None:
    snapshot = scrape(traffic.broker)
    assert total(snapshot, "rmq_messages_in_total") == COUNT
    assert total(snapshot, "rmq_bytes_in_total") == COUNT * SIZE
    assert total(snapshot, "rmq_topic_messages_total", topic=TOPIC) == COUNT
    # Both shards stored some, and each shard's figures add up to the whole.
    by_shard = snapshot.by("rmq_messages_in_total", "shard")
    assert set(by_shard) == {"0", "1"} and all(v > 0 for v in by_shard.values())
    # Pulls read ahead of what the consumer handed out, never less.
    delivered = sum(traffic.committed.values())
    assert total(snapshot, "rmq_messages_out_total") >= delivered
    assert total(snapshot, "rmq_bytes_out_total") >= delivered * SIZE
    # Each engine histogram: cumulative buckets ending in +Inf == _count.
    for name in ("rmq_put_latency_seconds", "rmq_pull_latency_seconds"):
        for shard in ("0", "1"):
            buckets = sorted(
                (float(dict(k)["le"]), v)
                for k, v in snapshot.series(f"{name}_bucket").items()
                if dict(k)["shard"] == shard
            )
            counts = [v for _, v in buckets]
            assert counts == sorted(counts) and counts[-1] > 0
            assert counts[-1] == total(snapshot, f"{name}_count", shard=shard)
            assert total(snapshot, f"{name}_sum", shard=shard) > 0
    assert total(snapshot, "rmq_commitlog_size_bytes") > COUNT * SIZE
    assert total(snapshot, "rmq_shard_metrics_up") == 2
    for shard in ("0", "1"):
        assert 0 < total(snapshot, "rmq_disk_used_ratio", shard=shard) < 1
        assert total(snapshot, "rmq_disk_threshold_ratio", shard=shard, threshold="max_used") == (
            0.75
        )


def test_per_topic_messages_and_bytes_in_and_out_match_the_traffic(exact: Exact) -> None:
    snapshot = scrape(exact.broker)
    for topic, (messages, body_bytes) in exact.sent.items():
        assert total(snapshot, "rmq_topic_messages_in_total", topic=topic) == messages
        assert total(snapshot, "rmq_topic_bytes_in_total", topic=topic) == body_bytes
    assert (
        total(snapshot, "rmq_topic_messages_out_total", topic=PULLED),
        total(snapshot, "rmq_topic_bytes_out_total", topic=PULLED),
    ) == exact.received
    assert total(snapshot, "rmq_topic_messages_out_total", topic="audit") == 0
    assert total(snapshot, "rmq_topic_bytes_out_total", topic="audit") == 0
    assert total(snapshot, "rmq_topic_messages_in_total", topic=TOPIC) == COUNT
    assert total(snapshot, "rmq_topic_bytes_in_total", topic=TOPIC) == COUNT * SIZE
    # Per shard, the topics add up to the shard's own counters (so the consumer's reads,
    # read-ahead included, are all in the topic it read).
    for family in ("messages_in", "bytes_in", "messages_out", "bytes_out"):
        per_topic = snapshot.by(f"rmq_topic_{family}_total", "shard")
        assert per_topic == snapshot.by(f"rmq_{family}_total", "shard"), family
        assert set(per_topic) == {"0", "1"}


def test_consumer_lag_per_queue_after_a_partial_consume(traffic: Traffic) -> None:
    snapshot = scrape(traffic.broker)
    for queue in range(QUEUES):
        labels = {"topic": TOPIC, "group": GROUP, "queue": str(queue)}
        assert total(snapshot, "rmq_consumer_lag_messages", **labels) == (
            traffic.ends[queue] - traffic.committed[queue]
        )
        assert (
            total(snapshot, "rmq_consumer_committed_offset", **labels) == (traffic.committed[queue])
        )
    assert total(snapshot, "rmq_consumer_lag_messages", group=GROUP) == COUNT - sum(
        traffic.committed.values()
    )


def test_the_tier_shows_its_segments_and_uploads(traffic: Traffic) -> None:
    deadline = time.monotonic() + 20
    while True:
        snapshot = scrape(traffic.broker)
        if total(snapshot, "rmq_tier_uploaded_bytes_total") > 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert total(snapshot, "rmq_tier_uploaded_bytes_total") > 0
    assert total(snapshot, "rmq_tier_segments", state="active") == 2
    assert "rmq_tier_pending_bytes" in snapshot.samples
    assert total(snapshot, "rmq_tier_upload_failing") == 0


def test_every_metric_of_the_dashboard_is_scraped(traffic: Traffic) -> None:
    snapshot = scrape(traffic.broker)
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])
    ]
    expressions += [
        variable["definition"]
        for variable in dashboard["templating"]["list"]
        if "definition" in variable
    ]
    named = {name for expr in expressions for name in re.findall(r"\brmq_[a-z0-9_]+", expr)}
    assert len(named) > 30
    missing = sorted(named - set(snapshot.samples))
    assert not missing, f"the dashboard names metrics the broker does not serve: {missing}"


def test_the_docs_describe_every_metric_served(traffic: Traffic) -> None:
    snapshot = scrape(traffic.broker)
    families = {
        re.sub(r"_(bucket|count|sum|total)$", "", name)
        for name in snapshot.samples
        if name.startswith("rmq_")
    }
    docs = (ROOT / "docs" / "metrics.md").read_text()
    undocumented = sorted(f for f in families if f not in docs)
    assert not undocumented, f"docs/metrics.md does not name {undocumented}"


def test_rmq_status_once_shows_each_shard_and_the_lag(traffic: Traffic) -> None:
    started = time.monotonic()
    result = rmq_cli("status", "--data", str(traffic.broker.data_dir), "--once")
    assert time.monotonic() - started < 15
    lines = result.stdout.decode().splitlines()
    header = next(line for line in lines if line.split()[:2] == ["shard", "proc"])
    assert "p99 put" in header and "group lag" in header and "restarts" in header
    rows = [line.split() for line in lines if re.match(r"\s*\d+\s+\d+\s+up\s", line)]
    assert [row[0] for row in rows] == ["0", "1"]
    lag = COUNT - sum(traffic.committed.values())
    assert [GROUP, TOPIC, str(lag)] in [line.split() for line in lines]
    assert [TOPIC, str(COUNT)] in [line.split()[:2] for line in lines]
    topic_header = next(line for line in lines if line.split()[:2] == ["topic", "messages"])
    assert topic_header.split()[2:] == ["in", "msg", "out", "msg", "in", "bytes", "out", "bytes"]


def test_rmq_status_says_when_no_broker_runs(tmp_path: Path) -> None:
    result = rmq_cli("status", "--data", str(tmp_path), "--once", check=False)
    assert result.returncode == 2
    assert "no running broker" in result.stderr.decode()


def test_a_killed_shard_process_shows_in_the_restart_counter(traffic: Traffic) -> None:
    broker = traffic.broker
    before = scrape(broker)
    assert total(before, "rmq_shard_restarts_total") == 0
    os.kill(broker.state()["processes"][1]["pid"], signal.SIGKILL)
    broker.wait_for(
        lambda s: s["processes"][1]["restarts"] == 1 and s["processes"][1]["serving"],
        timeout=30,
        what="the restart of shard process 1",
    )
    after = scrape(broker)
    assert total(after, "rmq_shard_restarts_total", process="1") == 1
    assert total(after, "rmq_shard_restarts_total", process="0") == 0
    assert total(after, "rmq_shard_up") == 2
    assert total(after, "rmq_shard_metrics_up") == 2
    # The restarted shard found no clean shutdown; its engine counters start again, while
    # what is on disk (the topic's messages, the group's lag) is unchanged.
    assert total(after, "rmq_recovery_abnormal", shard="1") == 1
    assert total(after, "rmq_recovery_abnormal", shard="0") == 0
    assert total(after, "rmq_messages_in_total", shard="1") == 0
    assert total(after, "rmq_topic_messages_in_total", shard="1", topic=TOPIC) == 0
    assert total(after, "rmq_messages_in_total", shard="0") == total(
        before, "rmq_messages_in_total", shard="0"
    )
    assert total(after, "rmq_topic_messages_total", topic=TOPIC) == COUNT
    assert total(after, "rmq_consumer_lag_messages", group=GROUP) == COUNT - sum(
        traffic.committed.values()
    )


def test_metrics_port_0_serves_no_endpoint(brokers: Brokers) -> None:
    broker = brokers.start(shards=1, args=["--metrics-port", "0"])
    assert broker.state()["metrics"] is None
    assert "metrics on" not in broker.log_text()
    with Client(broker.endpoint) as client:
        client.create_topic("plain", queues=1)
