"""``metrics``: what a broker's metrics cost: produce over gRPC with the Prometheus endpoint
scraped every second, against the same broker serving no metrics endpoint.

The engine's counters and histograms are always kept (they are lock-free atomics on the
hot path), so both systems pay for them; what differs is the endpoint and its scrapes,
which gather every shard process's figures (15 times as often as Prometheus's default
interval). Besides msgs/s, each round reports the CPU seconds the broker's processes
(supervisor and shards) spent per million messages, which the machine's noise moves less
than throughput.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.harness import Benchmark, Case, Context, Metrics, NotMeasurable, System, percentile
from bench.workload import TAGS

SHARDS = 2
QUEUES = 8
SCRAPE_EVERY = 1.0


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of the processes so far (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


class Broker:
    """``rmq serve --shards 2 --port 0`` with or without its metrics endpoint."""

    def __init__(self, metrics: bool) -> None:
        self.metrics = metrics
        self.home: Path | None = None
        self.broker: Any = None

    def setup(self) -> None:
        try:
            from rmq.cluster.local import LocalBroker
        except Exception as exc:
            raise NotMeasurable(f"rmq does not import ({exc})") from exc
        self.home = Path(tempfile.mkdtemp(prefix="rmq-metrics-"))
        args = [] if self.metrics else ["--metrics-port", "0"]
        args += ["--rocketmq-port", "0"]
        self.broker = LocalBroker(self.home / "data", shards=SHARDS, args=args).start()

    def teardown(self) -> None:
        if self.broker is not None:
            self.broker.stop()
            self.broker = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)

    def run(self, case: Case, workdir: Path) -> Metrics:
        from rmq.client import Client

        state = self.broker.state()
        pids = [self.broker.pid] + [p["pid"] for p in state["processes"]]
        url = state.get("metrics")
        stop = threading.Event()
        scrapes: list[float] = []

        def scrape() -> None:
            while not stop.wait(SCRAPE_EVERY):
                began = time.perf_counter()
                with urllib.request.urlopen(url, timeout=10) as answer:
                    answer.read()
                scrapes.append(time.perf_counter() - began)

        scraper = threading.Thread(target=scrape, daemon=True) if url else None
        count, body = case.params["count"], os.urandom(case.params["body"])
        client = Client(self.broker.endpoint)
        try:
            topic = f"metrics_{os.getpid()}_{time.monotonic_ns()}"
            client.create_topic(topic, queues=QUEUES)
            cpu_before = _cpu_seconds(pids)
            if scraper is not None:
                scraper.start()
            producer = client.producer()
            try:
                began = time.perf_counter()
                for i in range(count):
                    producer.send(topic, body, tags=TAGS[i & 3], keys=[f"order-{i:09d}"])
                producer.flush()
                seconds = time.perf_counter() - began
            finally:
                producer.close()
            stop.set()
            if scraper is not None:
                scraper.join()
            cpu = _cpu_seconds(pids) - cpu_before
        finally:
            stop.set()
            client.close()
        out: Metrics = {
            "seconds": seconds,
            "msgs_per_s": count / seconds,
            "mb_per_s": count * len(body) / seconds / 1e6,
            "cpu_s_per_m": cpu / count * 1e6,
        }
        if scrapes:
            scrapes.sort()
            out["scrapes"] = float(len(scrapes))
            out["scrape_p50_ms"] = percentile(scrapes, 50) * 1e3
        return out


def build(ctx: Context) -> Benchmark:
    count = ctx.pick(5_000, 200_000, 1_000_000)
    scraped, bare = Broker(metrics=True), Broker(metrics=False)
    systems = [
        System(
            "rmq, metrics scraped every 1 s",
            scraped.run,
            role="rmq",
            setup=scraped.setup,
            teardown=scraped.teardown,
            isolate=False,
            note="rmq serve --shards 2 with its Prometheus endpoint, scraped every second",
        ),
        System(
            "rmq, no metrics endpoint",
            bare.run,
            role="peer",
            setup=bare.setup,
            teardown=bare.teardown,
            isolate=False,
            note="rmq serve --shards 2 --metrics-port 0 (the engine still counts)",
        ),
    ]
    return Benchmark(
        name="metrics",
        title="what metrics cost a broker",
        description=(
            "Produce N messages of 100 B (tags + key) through rmq.Client to a 2-shard broker, "
            "with the metrics endpoint scraped every second, and with no endpoint. The "
            "ratio is scraped ÷ bare: 0.97 or more meets the goal of under 3 % cost."
        ),
        cases=[Case("100 B produce", {"count": count, "body": 100})],
        systems=systems,
        parameters={"count": count, "shards": SHARDS, "queues": QUEUES},
        columns={
            "msgs_per_s": "msgs/s",
            "cpu_s_per_m": "broker CPU s per 1M msgs",
            "scrape_p50_ms": "scrape p50 ms",
        },
        one_server_at_a_time=True,
    )
