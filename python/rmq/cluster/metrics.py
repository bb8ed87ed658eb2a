"""Prometheus metrics of a running broker (``rmq serve --metrics-port``).

Each shard process serves its own metrics on an internal loopback port (it prints
``RMQ-SHARD-METRICS <port>`` on stdout before it says it is ready). On every scrape its
:class:`ShardCollector` reads the engine (``Store.metrics()``, disk usage, queue and
consumer offsets, the recovery report, the tier's state): nothing is counted on the hot
path beyond the engine's own lock-free counters.

The supervisor serves the one endpoint an operator scrapes: :class:`SupervisorCollector`
(shard process restarts and state) and :class:`ShardsCollector`, which fetches every
serving shard process's families in parallel (as JSON from ``/families``: parsing
Prometheus text back would cost the supervisor 15 times as much) and merges them, so
that each metric appears once with a ``shard`` label per shard directory. A shard
process's ``/metrics`` serves the same as Prometheus text, to look at by hand.

Counters that come from ``Store.metrics()`` count since the store was opened: a shard
process restart resets them, as a process restart resets any Prometheus counter
(``rate()`` handles that). ``rmq_topic_messages_total`` and the consumer offsets come
from the queues on disk and survive restarts.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

import rmq
from rmq.cluster.shard_metrics import ShardCollector

log = logging.getLogger(__name__)

DEFAULT_METRICS_PORT = 9081

SHARD_SCRAPE_TIMEOUT = 5.0


def families_json(registry: CollectorRegistry) -> bytes:
    """The registry's families as JSON, for the supervisor: parsing Prometheus text back
    costs the supervisor some 30 us a sample; JSON, 2 us."""
    return json.dumps(
        [
            [
                family.name,
                family.documentation,
                family.type,
                family.unit,
                [[sample.name, sample.labels, sample.value] for sample in family.samples],
            ]
            for family in registry.collect()
        ]
    ).encode()


def families_from_json(text: str | bytes) -> list[Metric]:
    families: list[Metric] = []
    for name, documentation, kind, unit, samples in json.loads(text):
        family = Metric(name, documentation, kind, unit)
        family.samples = [Sample(n, labels, value) for n, labels, value in samples]
        families.append(family)
    return families


class _ShardMetricsHandler(BaseHTTPRequestHandler):
    """``/metrics``: Prometheus text (to look at one shard process by hand);
    ``/families``: JSON for the supervisor."""

    registry: CollectorRegistry

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        try:
            if path == "/families":
                body, kind = families_json(self.registry), "application/json"
            elif path == "/metrics":
                body, kind = generate_latest(self.registry), CONTENT_TYPE_LATEST
            else:
                self.send_error(404)
                return
        except Exception as error:
            log.warning("cannot collect metrics: %s", error)
            self.send_error(500, str(error))
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the shard's log is for the broker, not for each scrape


def serve_shard_metrics(
    stores: Mapping[int, rmq.Store],
    layouts: Callable[[], Mapping[str, Sequence[int]]],
    options: Mapping[str, Any],
    host: str = "127.0.0.1",
    native: Any = None,
) -> tuple[ThreadingHTTPServer, int]:
    """Serve a shard process's metrics on a free loopback port: (server, port);
    ``native`` is its native data plane (``rmq._rmqcore.ShardServer``), if it has one."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ShardCollector(stores, layouts, options, native))
    handler = type("ShardMetricsHandler", (_ShardMetricsHandler,), {"registry": registry})
    server = ThreadingHTTPServer((host, 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server, int(server.server_port)


# ---- the supervisor's side ----------------------------------------------------------


@dataclass(frozen=True)
class ShardEndpoint:
    """A shard process as the supervisor's metrics see it."""

    process: int
    shards: tuple[int, ...]
    serving: bool
    restarts: int
    metrics_port: int | None


class SupervisorCollector(Collector):
    """What only the supervisor knows: shard process restarts and state."""

    def __init__(self, processes: Callable[[], Sequence[ShardEndpoint]]) -> None:
        self._processes = processes

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        restarts = CounterMetricFamily(
            "rmq_shard_restarts",
            "Times the supervisor restarted the shard process",
            labels=["process"],
        )
        up = GaugeMetricFamily(
            "rmq_shard_up", "1 while the shard process serves", labels=["process"]
        )
        placement = GaugeMetricFamily(
            "rmq_shard_process",
            "1 for each shard directory and the process serving it",
            labels=["shard", "process"],
        )
        for info in self._processes():
            process = str(info.process)
            restarts.add_metric([process], info.restarts)
            up.add_metric([process], 1.0 if info.serving else 0.0)
            for shard in info.shards:
                placement.add_metric([str(shard), process], 1.0)
        yield from (restarts, up, placement)


class ShardsCollector(Collector):
    """The shard processes' metrics, fetched on each scrape and merged by family."""

    def __init__(
        self,
        processes: Callable[[], Sequence[ShardEndpoint]],
        timeout: float = SHARD_SCRAPE_TIMEOUT,
    ) -> None:
        self._processes = processes
        self._timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="shard-scrape")

    def describe(self) -> Iterable[Metric]:
        return []

    def _fetch(self, port: int) -> list[Metric]:
        url = f"http://127.0.0.1:{port}/families"
        with urllib.request.urlopen(url, timeout=self._timeout) as response:
            return families_from_json(response.read())

    def collect(self) -> Iterator[Metric]:
        processes = [p for p in self._processes() if p.serving and p.metrics_port]
        futures = {
            p.process: self._pool.submit(self._fetch, p.metrics_port or 0) for p in processes
        }
        scraped = GaugeMetricFamily(
            "rmq_shard_metrics_up",
            "1 when the supervisor read the shard process's metrics in this scrape",
            labels=["process"],
        )
        merged: dict[str, Metric] = {}
        for process, future in sorted(futures.items()):
            try:
                families = future.result()
            except Exception as error:
                log.warning("cannot read the metrics of shard process %d: %s", process, error)
                scraped.add_metric([str(process)], 0.0)
                continue
            scraped.add_metric([str(process)], 1.0)
            for family in families:
                into = merged.get(family.name)
                if into is None:
                    merged[family.name] = family
                else:
                    into.samples.extend(family.samples)
        yield scraped
        yield from merged.values()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class BrokerMetrics:
    """The supervisor's metrics endpoint: its own metrics and the shards', on one port."""

    def __init__(self, processes: Callable[[], Sequence[ShardEndpoint]]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._shards = ShardsCollector(processes)
        self.registry.register(SupervisorCollector(processes))
        self.registry.register(self._shards)
        self._server: Any = None
        self.url = ""

    def start(self, host: str, port: int) -> str:
        """Listen on ``host:port`` (0: any free port); returns the scrape URL."""
        self._server, _ = start_http_server(port, addr=host, registry=self.registry)
        bound = int(self._server.server_port)
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{bound}/metrics"
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self._shards.close()


def parse_state_metrics(text: str) -> str | None:
    """The metrics URL in the text of a broker's serve.json, if it has one."""
    try:
        state = json.loads(text)
    except ValueError:
        return None
    url = state.get("metrics") if isinstance(state, dict) else None
    return url if isinstance(url, str) and url else None
