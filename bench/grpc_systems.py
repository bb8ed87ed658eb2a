"""The systems ``bench grpc`` measures, each driven by its own clients: ``rmq serve``
(``rmq.Client``), Apache RocketMQ and Kafka (their Java tools), and the official
RocketMQ 5 Java client against rmq's v2 access point and RocketMQ's proxy."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.basics import DEFAULT_WORK, NotMeasurable
from bench.harness import Case, Metrics, percentile
from bench.workload import TAGS

SHARDS = 2
QUEUES = 8
V2 = "RocketMQ 5 client"  # the cases where the official v2 Java client drives both
_topic_ids = itertools.count()


def topic_for(case: Case) -> str:
    return f"bench_{case.params['body']}_{os.getpid()}_{next(_topic_ids)}_{int(time.time())}"


# --------------------------------------------------------------------------- rmq


def client_class() -> Any:
    """``rmq.Client`` (or ``rmq.client.Client``), or NotMeasurable saying why not."""
    try:
        import rmq
    except Exception as exc:
        raise NotMeasurable(f"rmq does not import yet ({exc})") from exc
    client = getattr(rmq, "Client", None)
    if client is None:
        try:
            from rmq.client import Client as client
        except Exception as exc:
            raise NotMeasurable(
                f"rmq.Client does not exist yet (gRPC client: issue 6): {exc}"
            ) from exc
    return client


START_ATTEMPTS = 3


class RmqBroker:
    """``rmq serve --shards 2`` in a temporary directory, driven by ``rmq.Client``."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.home: Path | None = None
        self.port = 0
        self.rocketmq_port = 0
        self.v2 = V2Client()

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def setup(self) -> None:
        client_class()
        probe = subprocess.run(
            [sys.executable, "-m", "rmq", "serve", "--help"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if probe.returncode != 0:
            raise NotMeasurable("`rmq serve` does not exist yet (gRPC broker: issue 6)")
        # A port picked free may be taken again before the broker binds it (a client's
        # ephemeral port): the broker then stops, and a round would wait on it for as long
        # as its sends retry. Such a start is tried again on fresh ports.
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self._start()
                return
            except NotMeasurable:
                self.teardown()
                if attempt == START_ATTEMPTS:
                    raise

    def _start(self) -> None:
        from bench.peers.common import free_port, free_port_block, wait_port

        DEFAULT_WORK.mkdir(parents=True, exist_ok=True)
        self.home = Path(tempfile.mkdtemp(prefix="rmq-serve-", dir=DEFAULT_WORK))
        self.port = free_port_block(SHARDS + 1)  # route service, then one port per shard
        self.rocketmq_port = free_port()  # the RocketMQ 5 clients' access point
        metrics_port = free_port()
        log = open(self.home / "serve.out", "ab")  # noqa: SIM115 - lives with the process
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rmq",
                "serve",
                "--data",
                str(self.home / "data"),
                "--shards",
                str(SHARDS),
                "--port",
                str(self.port),
                "--rocketmq-port",
                str(self.rocketmq_port),
                # A free port rather than the default 9081, which another broker on the
                # machine may hold; the metrics stay on, as in production.
                "--metrics-port",
                str(metrics_port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_port(self.port, self.proc, 90, "rmq serve")
        wait_port(self.rocketmq_port, self.proc, 30, "rmq serve's RocketMQ access point")
        wait_port(metrics_port, self.proc, 30, "rmq serve's metrics endpoint")

    def teardown(self) -> None:
        from bench.peers.common import stop_process

        self.v2.close()
        stop_process(self.proc)
        self.proc = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)

    def produce(self, client: Any, topic: str, count: int, body: bytes, batch: int) -> Metrics:
        """``Producer.send_batch`` of ``batch`` messages per call, each call's queue chosen
        round-robin, as the RocketMQ peer sends batches of 128 per queue. The tags and keys
        go as columns made before the clock, as the engine row makes them; p50/p99 are
        each batch's time from its call to its callback."""
        producer = client.producer()
        bodies = [body] * batch
        tags = [TAGS[i & 3] for i in range(count)]
        keys = [[f"order-{i:09d}"] for i in range(count)]
        lat: list[float] = []
        clock = time.perf_counter
        try:
            t0 = clock()
            for start in range(0, count, batch):
                end = min(count, start + batch)
                sent = clock()
                fut = producer.send_batch(
                    topic, bodies[: end - start], tags=tags[start:end], keys=keys[start:end]
                )
                fut.add_done_callback(lambda _f, s=sent: lat.append(clock() - s))
            producer.flush()
            seconds = clock() - t0
        finally:
            producer.close()
        out: Metrics = {
            "seconds": seconds,
            "msgs_per_s": count / seconds,
            "mb_per_s": count * len(body) / seconds / 1e6,
        }
        if lat:
            lat.sort()
            out["p50_us"] = percentile(lat, 50) * 1e6
            out["p99_us"] = percentile(lat, 99) * 1e6
        return out

    def consume(self, client: Any, topic: str, count: int, body_size: int) -> Metrics:
        consumer = client.consumer(f"bench-{os.getpid()}-{next(_topic_ids)}", topic)
        seen = 0
        try:
            t0 = time.perf_counter()
            idle = time.perf_counter()
            while seen < count:
                got = consumer.poll(timeout=1.0)
                if got:
                    seen += len(got)
                    idle = time.perf_counter()
                elif time.perf_counter() - idle > 30:
                    raise RuntimeError(f"rmq consumer stalled at {seen} of {count}")
            seconds = time.perf_counter() - t0
        finally:
            consumer.close()
        return {
            "seconds": seconds,
            "msgs_per_s": seen / seconds,
            "mb_per_s": seen * body_size / seconds / 1e6,
        }

    def run(self, case: Case, workdir: Path) -> Metrics:
        count, size = case.params["count"], case.params["body"]
        body = os.urandom(size)
        client = client_class()(self.endpoint)
        try:
            topic = topic_for(case)
            client.create_topic(topic, queues=QUEUES)
            if case.params.get("client") == "v2":
                return self.v2.run(f"127.0.0.1:{self.rocketmq_port}", topic, case)
            produced = self.produce(client, topic, count, body, case.params["batch"])
            if case.params["phase"] == "produce":
                return produced
            return self.consume(client, topic, count, size)
        finally:
            close = getattr(client, "close", None)
            if close is not None:
                close()


class V2Client:
    """The official RocketMQ 5 Java client (bench/peers/rocketmq_client): one load JVM per
    system and round, started on first use, so that the warm-up warms the client too."""

    def __init__(self) -> None:
        self.load: Any = None

    def run(self, endpoint: str, topic: str, case: Case) -> Metrics:
        """Produce (sendAsync, a window in flight), or produce then receive and ack all."""
        from bench.peers.rocketmq_client import V2Load

        if self.load is None:
            self.load = V2Load()
        count, size = case.params["count"], case.params["body"]
        if case.params["phase"] == "produce":
            produced: Metrics = self.load.produce(endpoint, topic, count, size)
            return produced
        group = f"bench-v2-{os.getpid()}-{next(_topic_ids)}"
        consumed: Metrics = self.load.consume(endpoint, topic, count, size, group)
        return consumed

    def close(self) -> None:
        if self.load is not None:
            self.load.close()
            self.load = None


# --------------------------------------------------------------------------- peers


class JavaBroker:
    def __init__(self, kind: str, proxy: bool = False) -> None:
        self.kind = kind
        self.with_proxy = proxy
        self.peer: Any = None
        self.proxy: Any = None
        self.v2 = V2Client()

    def setup(self) -> None:
        if self.kind == "rocketmq":
            from bench.peers.rocketmq import RocketMQ

            self.peer = RocketMQ()
        else:
            from bench.peers.kafka import Kafka

            self.peer = Kafka()
        try:
            self.peer.start()
            if self.with_proxy:
                from bench.peers.rocketmq_proxy import RocketMQProxy

                self.proxy = RocketMQProxy(self.peer)
                self.proxy.start()
        except BaseException:
            self.teardown()
            raise

    def teardown(self) -> None:
        self.v2.close()
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        if self.peer is not None:
            self.peer.stop()

    def run(self, case: Case, workdir: Path) -> Metrics:
        count, size = case.params["count"], case.params["body"]
        topic = topic_for(case)
        self.peer.create_topic(topic, QUEUES)
        if case.params.get("client") == "v2":
            if self.proxy is None:
                raise NotMeasurable(f"{self.kind} has no RocketMQ 5 proxy here")
            return self.v2.run(self.proxy.endpoint, topic, case)
        produced: Metrics = self.peer.produce(topic, count, size, case.params["batch"])
        if case.params["phase"] == "produce":
            return produced
        consumed: Metrics = self.peer.consume(topic, count)
        return consumed
