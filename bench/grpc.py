"""``grpc``: produce then consume N messages over loopback: rmq broker vs RocketMQ vs Kafka."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.basics import DEFAULT_WORK
from bench.harness import (
    Benchmark,
    Case,
    Context,
    Metrics,
    NotMeasurable,
    System,
    percentile,
)
from bench.workload import TAGS

SHARDS = 2
QUEUES = 8
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
        from bench.peers.common import free_port_block, wait_port

        DEFAULT_WORK.mkdir(parents=True, exist_ok=True)
        self.home = Path(tempfile.mkdtemp(prefix="rmq-serve-", dir=DEFAULT_WORK))
        self.port = free_port_block(SHARDS + 1)  # route service, then one port per shard
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
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_port(self.port, self.proc, 90, "rmq serve")
        except BaseException:
            self.teardown()
            raise

    def teardown(self) -> None:
        from bench.peers.common import stop_process

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
            produced = self.produce(client, topic, count, body)
            if case.params["phase"] == "produce":
                return produced
            return self.consume(client, topic, count, size)
        finally:
            close = getattr(client, "close", None)
            if close is not None:
                close()


# --------------------------------------------------------------------------- peers


class JavaBroker:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.peer: Any = None

    def setup(self) -> None:
        if self.kind == "rocketmq":
            from bench.peers.rocketmq import RocketMQ

            self.peer = RocketMQ()
        else:
            from bench.peers.kafka import Kafka

            self.peer = Kafka()
        try:
            self.peer.start()
        except BaseException:
            self.peer.stop()
            raise

    def teardown(self) -> None:
        if self.peer is not None:
            self.peer.stop()

    def run(self, case: Case, workdir: Path) -> Metrics:
        count, size = case.params["count"], case.params["body"]
        topic = _topic(case)
        self.peer.create_topic(topic, QUEUES)
        produced: Metrics = self.peer.produce(topic, count, size, case.params["batch"])
        if case.params["phase"] == "produce":
            return produced
        consumed: Metrics = self.peer.consume(topic, count)
        return consumed


def build(ctx: Context) -> Benchmark:
    count = ctx.pick(2_000, 50_000, 200_000)
    cases = [
        Case(
            f"{'1 KiB' if body == 1024 else f'{body} B'} {phase}",
            {"count": count, "body": body, "phase": phase, "batch": 128},
        )
        for body in (100, 1024)
        for phase in ("produce", "consume")
    ]
    rmq_broker = RmqBroker()
    rocket = JavaBroker("rocketmq")
    kafka = JavaBroker("kafka")

    def system(name: str, obj: Any, role: str, note: str) -> System:
        run: Callable[[Case, Path], Metrics] = obj.run

        def warmup() -> None:
            """Both sizes produced and consumed once at full count, as a round would: a
            broker restarted for the round (the Java peers' JIT compilers above all)
            starts its measured cases as warm as after a first round. With a tenth of
            that, Kafka measured well below its warm speed."""
            for body in (100, 1024):
                params = {"count": count, "body": body, "phase": "consume", "batch": 128}
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
            "rounds only."
        ),
        one_server_at_a_time=True,
        cases=cases,
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
                "RocketConsume (lite pull consumer)",
            ),
            system(
                "kafka",
                kafka,
                "peer",
                "Apache Kafka 4.1.0 KRaft broker+controller (512 MiB heap); its "
                "ProducerPerformance (acks=1, default batching) and ConsumerPerformance "
                "(fetch rate, group join excluded)",
            ),
        ],
        parameters={"messages": count, "queues": QUEUES, "shards": SHARDS, "batch": 128},
        columns={
            "msgs_per_s": "msgs/s",
            "mb_per_s": "MB/s",
            "p50_us": "p50 µs",
            "p99_us": "p99 µs",
        },
    )
