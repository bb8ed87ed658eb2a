"""What a broker's native data plane answered itself and what it passed to Python: the
``rmq_native_requests`` metric, read from the broker's metrics endpoint. Tests use it to
prove which path served their calls."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families
from rmq.cluster.local import LocalBroker


def native_requests(broker: LocalBroker) -> dict[tuple[str, str], float]:
    """``rmq_native_requests_total`` by (gRPC method path, outcome), summed over shards."""
    with urllib.request.urlopen(broker.state()["metrics"], timeout=10) as response:
        text = response.read().decode()
    counts: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        if family.name == "rmq_native_requests":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    key = (sample.labels["method"], sample.labels["outcome"])
                    counts[key] = counts.get(key, 0.0) + sample.value
    return counts
