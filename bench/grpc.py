"""``grpc``: produce then consume N messages over loopback: rmq vs RocketMQ, its proxy, Kafka.

Each broker with its own clients; and rmq serve's RocketMQ v2 access point against
RocketMQ's proxy with the official RocketMQ 5 Java client (``apache.rocketmq.v2``) driving
both. The cases, the systems' notes and the figures' description; how each system is
started and driven is in ``bench/grpc_systems.py``."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any

from bench.basics import NotMeasurable
from bench.grpc_engine import EngineLimit
from bench.grpc_systems import QUEUES, SHARDS, V2, JavaBroker, RmqBroker
from bench.harness import Benchmark, Case, Context, Metrics, System


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
    # Sends per size the v2 client JVM makes before the measured cases, on top of the
    # consume warm-up (the same for both systems): 20,000 sends in, its JIT compiler still
    # took a third of its CPU, and its CPU per send halved again by 80,000.
    v2_warm_sends = ctx.pick(1_000, 50_000, 100_000)
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
    engine = EngineLimit()

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
            access point (RocketMQ's proxy is a JVM of its own), after the v2 client
            sent v2_warm_sends of each size: its JIT compiler takes longer to settle."""
            if v2 and not v2_skip:
                for body in (100, 1024):
                    params = {"count": v2_warm_sends, "body": body, "phase": "produce"}
                    with contextlib.suppress(NotMeasurable):  # the cases will say why
                        run(
                            Case("warm-up", {**params, "client": "v2"}), Path(tempfile.gettempdir())
                        )
            for body in (100, 1024):
                params = {"count": count, "body": body, "phase": "consume", "batch": 128}
                run(Case("warm-up", params), Path(tempfile.gettempdir()))
                if v2 and not v2_skip:
                    params = {"count": v2_count, "body": body, "phase": "consume", "client": "v2"}
                    with contextlib.suppress(NotMeasurable):  # the cases will say why
                        run(Case("warm-up", params), Path(tempfile.gettempdir()))

        tags = frozenset() if role != "peer" else frozenset({"java", name})
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
            "(N produced and consumed at each size, not measured; the RocketMQ 5 client "
            "first also sends v2_warm_sends of each size) and measured, then "
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
                f"rmq serve --shards {SHARDS}; rmq.Client from one Python process: "
                "Producer.send_batch of 128 messages per call (tags and keys as columns, "
                "each call's queue round-robin; p50/p99 per batch), and Consumer.poll",
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
            system(
                "rmq engine",
                engine,
                "limit",
                "the engine alone: the same messages (tag + key, 8 queues, batches of 128) "
                "put_batch into one rmq.Store in the bench process, then read_bodies per "
                "queue; no network, one thread (bench/grpc_engine.py). Goal (issue 20): "
                "rmq serve's 100 B produce >= 0.4 of this",
                v2=False,
            ),
        ],
        parameters={
            "messages": count,
            "queues": QUEUES,
            "shards": SHARDS,
            "batch": 128,
            "v2_messages": v2_count,
            "v2_warm_sends": v2_warm_sends,
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
