"""Apache Kafka 4 in KRaft mode from its released jars: one combined broker+controller.

Small heap, loopback listeners, logs in a temporary directory. Load comes from Kafka's own
``ProducerPerformance`` and ``ConsumerPerformance`` (kafka-tools jar).
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

from bench.basics import DEFAULT_WORK, NotMeasurable
from bench.peers.common import (
    fetch_jars,
    free_port,
    run_java_tool,
    start_java,
    stop_process,
    wait_port,
)

NAME = "kafka"
VERSION = "4.1.0"  # keep in step with bench/peers/kafka/pom.xml

_PRODUCED = re.compile(
    r"(?P<n>\d+) records sent, (?P<rate>[\d.]+) records/sec \((?P<mb>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th"
)


def classpath() -> str:
    return f"{fetch_jars(NAME)}/*"


class Kafka:
    def __init__(self, heap: str = "512m") -> None:
        self.heap = heap
        self.home: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.cp = ""

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self.cp = classpath()
        DEFAULT_WORK.mkdir(parents=True, exist_ok=True)
        self.home = Path(tempfile.mkdtemp(prefix="kafka-", dir=DEFAULT_WORK))
        self.port = free_port()
        controller = free_port()
        props = self.home / "server.properties"
        props.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{controller}",
                    f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    f"log.dirs={self.home / 'data'}",
                    "num.partitions=8",
                    "offsets.topic.replication.factor=1",
                    "offsets.topic.num.partitions=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "share.coordinator.state.topic.replication.factor=1",
                    "share.coordinator.state.topic.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    "",
                ]
            )
        )
        cluster_id = _cluster_id()
        fmt = run_java_tool(
            "kafka.tools.StorageTool",
            ["format", "-t", cluster_id, "-c", str(props)],
            self.cp,
            180,
            heap="256m",
            home=self.home,
        )
        if fmt.returncode != 0:
            raise NotMeasurable(f"Kafka storage format failed: {(fmt.stdout + fmt.stderr)[-400:]}")
        self.proc = start_java(
            "kafka.Kafka",
            [str(props)],
            self.cp,
            self.home / "kafka.out",
            heap=self.heap,
            home=self.home,
        )
        wait_port(self.port, self.proc, 120, "Kafka broker")

    def create_topic(self, topic: str, partitions: int = 8) -> None:
        proc = run_java_tool(
            "org.apache.kafka.tools.TopicCommand",
            [
                "--bootstrap-server",
                self.bootstrap,
                "--create",
                "--topic",
                topic,
                "--partitions",
                str(partitions),
                "--replication-factor",
                "1",
            ],
            self.cp,
            120,
            heap="256m",
            home=self.home,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"Kafka topic create failed: {(proc.stdout + proc.stderr)[-500:]}")

    def produce(
        self, topic: str, count: int, body: int, batch: int = 0, payload: bytes | None = None
    ) -> dict[str, float]:
        """``batch`` is unused: the Kafka producer batches by bytes and linger itself.
        ``payload`` (``body`` bytes, no newline) is sent as every record's value instead of
        the tool's random bytes."""
        if payload is not None:
            assert self.home is not None and b"\n" not in payload and len(payload) == body
            payload_file = self.home / "payload"
            payload_file.write_bytes(payload)
            value = ["--payload-file", str(payload_file)]
        else:
            value = ["--record-size", str(body)]
        proc = run_java_tool(
            "org.apache.kafka.tools.ProducerPerformance",
            [
                "--topic",
                topic,
                "--num-records",
                str(count),
                *value,
                "--throughput",
                "-1",
                "--producer-props",
                f"bootstrap.servers={self.bootstrap}",
                "acks=1",
            ],
            self.cp,
            1800,
            heap="512m",
            home=self.home,
        )
        matches = list(_PRODUCED.finditer(proc.stdout))
        if proc.returncode != 0 or not matches:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
            raise RuntimeError(f"Kafka ProducerPerformance exit {proc.returncode}:\n{tail}")
        m = matches[-1]
        rate = float(m["rate"])
        return {
            "messages": float(m["n"]),
            "seconds": float(m["n"]) / rate,
            "msgs_per_s": rate,
            "mb_per_s": float(m["mb"]) * 1.048576,  # the tool's MB is MiB
            "p50_us": float(m["p50"]) * 1000,
            "p99_us": float(m["p99"]) * 1000,
        }

    def consume(self, topic: str, count: int) -> dict[str, float]:
        proc = run_java_tool(
            "org.apache.kafka.tools.ConsumerPerformance",
            [
                "--bootstrap-server",
                self.bootstrap,
                "--topic",
                topic,
                "--messages",
                str(count),
                "--timeout",
                "60000",
                "--group",
                f"bench-{uuid.uuid4().hex[:8]}",
            ],
            self.cp,
            1800,
            heap="512m",
            home=self.home,
        )
        lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
        header_at = next((i for i, ln in enumerate(lines) if ln.startswith("start.time")), None)
        if proc.returncode != 0 or header_at is None or header_at + 1 >= len(lines):
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
            raise RuntimeError(f"Kafka ConsumerPerformance exit {proc.returncode}:\n{tail}")
        names = [h.strip() for h in lines[header_at].split(",")]
        values = [v.strip() for v in lines[header_at + 1].split(",")]
        row = dict(zip(names, values, strict=False))
        n = float(row["data.consumed.in.nMsg"])
        fetch_ms = float(row.get("fetch.time.ms", "0") or 0)
        return {
            "messages": n,
            "seconds": fetch_ms / 1000 if fetch_ms else n / float(row["nMsg.sec"]),
            "msgs_per_s": float(row.get("fetch.nMsg.sec") or row["nMsg.sec"]),
            "mb_per_s": float(row.get("fetch.MB.sec") or row["MB.sec"]) * 1.048576,
            "with_group_join_msgs_per_s": float(row["nMsg.sec"]),
        }

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None


def _cluster_id() -> str:
    """A random KRaft cluster id: a UUID in URL-safe base64. One that begins with "-" is
    drawn again, as Kafka's own tool does: the storage tool's argument parser would read
    it as an option ("--cluster-id expected one argument")."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id
