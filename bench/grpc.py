"""``grpc``: produce then consume N messages over loopback: rmq vs RocketMQ, its proxy, Kafka.

Each broker with its own clients; and rmq serve's RocketMQ v2 access point against
RocketMQ's proxy with the official RocketMQ 5 Java client (``apache.rocketmq.v2``) driving
both."""

from __future__ import annotations

import contextlib
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
from bench.harness import Benchmark, Case, Context, Metrics, System, percentile
from bench.workload import TAGS

SHARDS = 2
QUEUES = 8
V2 = "RocketMQ 5 client"  # the cases where the official v2 Java client drives both
_topic_ids = itertools.count()


def _topic(case: Case) -> str:
    return f"bench_{case.params['body']}_{os.getpid()}_{next(_topic_ids)}_{int(time.time())}"


# --------------------------------------------------------------------------- rmq


def _client_class() -> Any:
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
        _client_class()
        probe = subprocess.run(
            [sys.executable, "-m", "rmq", "serve", "--help"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if probe.returncode != 0:
            raise NotMeasurable("`rmq serve` does not exist yet (gRPC broker: issue 6)")
        from bench.peers.common import free_port, free_port_block, wait_port

        DEFAULT_WORK.mkdir(parents=True, exist_ok=True)
        self.home = Path(tempfile.mkdtemp(prefix="rmq-serve-", dir=DEFAULT_WORK))
        self.port = free_port_block(SHARDS + 1)  # route service, then one port per shard
        self.rocketmq_port = free_port()  # the RocketMQ 5 clients' access point
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
                str(free_port()),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_port(self.port, self.proc, 90, "rmq serve")
            wait_port(self.rocketmq_port, self.proc, 30, "rmq serve's RocketMQ access point")
        except BaseException:
            self.teardown()
            raise

    def teardown(self) -> None:
        from bench.peers.common import stop_process

        self.v2.close()
        stop_process(self.proc)
        self.proc = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)

    def produce(self, client: Any, topic: str, count: int, body: bytes) -> Metrics:
        producer = client.producer()
        lat: list[float] = []
        clock = time.perf_counter
        try:
            t0 = clock()
            for i in range(count):
                sent = clock()
                fut = producer.send(topic, body, tags=TAGS[i & 3], keys=[f"order-{i:09d}"])
                if hasattr(fut, "add_done_callback"):
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
        client = _client_class()(self.endpoint)
        try:
            topic = _topic(case)
            client.create_topic(topic, queues=QUEUES)
            if case.params.get("client") == "v2":
                return self.v2.run(f"127.0.0.1:{self.rocketmq_port}", topic, case)
            produced = self.produce(client, topic, count, body)
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
        topic = _topic(case)
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


def v2_client_parameters() -> dict[str, Any]:
    from bench.peers import rocketmq_client as c

    return {
        "artifact": f"org.apache.rocketmq:rocketmq-client-java:{c.CLIENT_VERSION}",
        "sends_in_flight": c.IN_FLIGHT,
        "receive_threads": c.RECEIVERS,
        "receive_batch": c.RECEIVE_BATCH,
    }


def _size(body: int) -> str:
    return "1 KiB" if body == 1024 else f"{body} B"


def build(ctx: Context) -> Benchmark:
    count = ctx.pick(2_000, 50_000, 200_000)
    # One message per RPC (and one ack per message) with the v2 client: fewer messages.
    v2_count = ctx.pick(1_000, 10_000, 50_000)
    # The official client is a Java program: left out with the Java peers.
    v2_skip = "java" in ctx.skip and f"skipped: the {V2} is Java (excluded with --skip java)"
    cases = [
        Case(
            f"{_size(body)} {phase}",
            {"count": count, "body": body, "phase": phase, "batch": 128},
        )
        for body in (100, 1024)
        for phase in ("produce", "consume")
    ]
    v2_cases = [
        Case(
            f"{_size(body)} {phase}, {V2}",
            {"count": v2_count, "body": body, "phase": phase, "client": "v2"},
        )
        for body in (100, 1024)
        for phase in ("produce", "consume")
    ]
    rmq_broker = RmqBroker()
    rocket = JavaBroker("rocketmq", proxy=True)
    kafka = JavaBroker("kafka")

    def system(name: str, obj: Any, role: str, note: str, v2: bool = True) -> System:
        def run(case: Case, workdir: Path) -> Metrics:
            if v2_skip and case.params.get("client") == "v2":
                raise NotMeasurable(v2_skip)
            measured: Metrics = obj.run(case, workdir)
            return measured

        def warmup() -> None:
            """Both sizes produced and consumed once at full count, as a round would: a
            broker restarted for the round (the Java peers' JIT compilers above all)
            starts its measured cases as warm as after a first round. With a tenth of
            that, Kafka measured well below its warm speed. The same through the v2
            access point (RocketMQ's proxy is a JVM of its own)."""
            for body in (100, 1024):
                params = {"count": count, "body": body, "phase": "consume", "batch": 128}
                run(Case("warm-up", params), Path(tempfile.gettempdir()))
                if v2 and not v2_skip:
                    params = {"count": v2_count, "body": body, "phase": "consume", "client": "v2"}
                    with contextlib.suppress(NotMeasurable):  # the cases will say why
                        run(Case("warm-up", params), Path(tempfile.gettempdir()))

        tags = frozenset() if role == "rmq" else frozenset({"java", name})
        return System(
            name,
            run,
            role=role,
            setup=obj.setup,
            teardown=obj.teardown,
            isolate=False,
            note=note,
            cases=None if v2 else [c.label for c in cases],
            tags=tags,
            warmup=warmup,
        )

    return Benchmark(
        name="grpc",
        title="produce then consume over loopback",
        description=(
            "N messages with a tag and one key each, 8 queues, produced then consumed over "
            "loopback. produce: the clock covers sending all N and waiting for every "
            "acknowledgement; consume: messages produced first (not timed), then the clock "
            "covers reading all N from offset 0. Each round uses a new topic. One broker "
            "runs at a time (idle, the three kept about a fifth of the two cores busy): in "
            "each round every system in turn, the order rotating, is started, warmed up "
            "(N produced and consumed at each size, not measured) and measured, then "
            "stopped, so a slow spell of the machine does not fall on one system's "
            f"rounds only. The cases marked '{V2}' drive rmq serve's RocketMQ v2 access "
            "point and RocketMQ's proxy (cluster mode, before the same broker) with the "
            "official Java client rocketmq-client-java (bench/peers/rocketmq_client), "
            "one message per send: produce keeps a window of sendAsync calls in flight "
            "(p50/p99: each send's time to its receipt); consume produces the messages "
            "first (not timed), then a SimpleConsumer of a new group receives them from "
            "several threads and acks each one; the clock runs from the first receive to "
            "the last ack's answer (p50/p99: a receive call that returned messages). "
            "Goal (issue 21): rmq at least 2x the proxy's msgs/s, and a lower p99."
        ),
        one_server_at_a_time=True,
        cases=cases + v2_cases,
        systems=[
            system(
                "rmq",
                rmq_broker,
                "rmq",
                f"rmq serve --shards {SHARDS}; rmq.Client producer (batches per queue) and "
                "consumer from one Python process",
            ),
            system(
                "rocketmq",
                rocket,
                "peer",
                "Apache RocketMQ 5.3.3 name server + 1 broker (512 MiB heap, async flush); "
                "bench/peers/java RocketProduce (batches of 128 per queue, 4 threads) and "
                f"RocketConsume (lite pull consumer); '{V2}' cases: its proxy (cluster mode, "
                "512 MiB heap) in front of that broker",
            ),
            system(
                "kafka",
                kafka,
                "peer",
                "Apache Kafka 4.1.0 KRaft broker+controller (512 MiB heap); its "
                "ProducerPerformance (acks=1, default batching) and ConsumerPerformance "
                "(fetch rate, group join excluded)",
                v2=False,
            ),
        ],
        parameters={
            "messages": count,
            "queues": QUEUES,
            "shards": SHARDS,
            "batch": 128,
            "v2_messages": v2_count,
            "v2_client": v2_client_parameters(),
            "goals": {V2: "rmq >= 2x RocketMQ proxy msgs/s, and a lower p99 (issue 21)"},
        },
        columns={
            "msgs_per_s": "msgs/s",
            "mb_per_s": "MB/s",
            "p50_us": "p50 µs",
            "p99_us": "p99 µs",
        },
    )
