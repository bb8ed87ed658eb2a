"""What a shard process reports on a scrape (``rmq serve --metrics-port``): its
:class:`ShardCollector` reads the engine (``Store.metrics()``, each queue's traffic,
disk usage, queue and consumer offsets, the recovery report, the tier's state) only
when asked; nothing is counted on the hot path beyond the engine's own lock-free
counters. ``metrics.py`` serves it and merges the shards' families in the supervisor.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

import rmq
from rmq.cluster.topic_traffic import TopicTraffic

log = logging.getLogger(__name__)

# How long the supervisor waits for one shard process's metrics.
# The engine's defaults for the retention thresholds (rmq.Store keywords).
THRESHOLDS = {
    "max_used": ("disk_max_used_space_ratio", 0.75),
    "clean_forcibly": ("disk_space_clean_forcibly_ratio", 0.85),
    "warning": ("disk_space_warning_level_ratio", 0.9),
}
DEFAULT_FILE_RESERVED_MS = 259_200_000
MICROSECONDS_PER_SECOND = 1e6
# "topic@group" keys of config/consumerOffset.json (its queue keys may be unquoted).
_GROUP_KEY = re.compile(r'"([^"@]+)@([^"]+)"\s*:\s*\{')


def cumulative_buckets(histogram: Mapping[str, Any], divisor: float) -> list[tuple[str, float]]:
    """Prometheus buckets (``le`` label, cumulative count) of an engine histogram, whose
    counts are per bucket with one more than the bounds (the last is above them all),
    its bounds divided by ``divisor`` (1e6: microseconds to seconds)."""
    bounds: Sequence[float] = histogram["bounds"]
    counts: Sequence[int] = histogram["counts"]
    buckets: list[tuple[str, float]] = []
    total = 0
    for bound, count in zip(bounds, counts, strict=False):
        total += count
        buckets.append((floatToGoString(bound / divisor), total))  # type: ignore[no-untyped-call]
    total += sum(counts[len(bounds) :])
    buckets.append(("+Inf", total))
    return buckets


class _GroupKeys:
    """The (topic, group) pairs of one store's consumerOffset.json, read again only when
    the file changed."""

    def __init__(self, store_path: str) -> None:
        self._path = Path(store_path) / "config" / "consumerOffset.json"
        self._stamp: tuple[int, int] | None = None
        self._keys: list[tuple[str, str]] = []

    def read(self) -> list[tuple[str, str]]:
        try:
            stat = self._path.stat()
        except OSError:
            return []
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            try:
                text = self._path.read_text()
            except OSError:
                return self._keys
            self._keys = sorted({(m[1], m[2]) for m in _GROUP_KEY.finditer(text)})
            self._stamp = stamp
        return self._keys


class ShardCollector(Collector):
    """The metrics of one shard process's stores, read from the engine on each scrape."""

    def __init__(
        self,
        stores: Mapping[int, rmq.Store],
        layouts: Callable[[], Mapping[str, Sequence[int]]],
        options: Mapping[str, Any] | None = None,
        native: Any = None,
    ) -> None:
        self._native = native  # the process's rmq._rmqcore.ShardServer, if it has one
        self._stores = dict(stores)
        self._layouts = layouts
        self._options = dict(options or {})
        self._groups = {shard: _GroupKeys(store.path) for shard, store in self._stores.items()}
        self._lock = threading.Lock()  # one scrape at a time (the group-key caches)

    def describe(self) -> Iterable[Metric]:
        return []  # no collect() at registration

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            yield from self._collect()
        if self._native is not None:
            yield self._native_requests()

    def _native_requests(self) -> Metric:
        """What the native data plane answered itself, and what it passed to the Python
        server (requests it declined: invalid, refused, or unusual)."""
        family = CounterMetricFamily(
            "rmq_native_requests",
            "Requests the shard process's native data plane answered itself (answered) "
            "or passed to its Python server (declined)",
            labels=["shards", "method", "outcome"],
        )
        shards = ",".join(str(shard) for shard in sorted(self._stores))
        for method, answered, declined in self._native.request_counts():
            family.add_metric([shards, method, "answered"], answered)
            family.add_metric([shards, method, "declined"], declined)
        return family

    def _collect(self) -> Iterator[Metric]:
        shard_label = ["shard"]
        counters = {
            "messages_put": CounterMetricFamily(
                "rmq_messages_in", "Messages stored since the shard opened", labels=shard_label
            ),
            "body_bytes_put": CounterMetricFamily(
                "rmq_bytes_in", "Body bytes stored since the shard opened", labels=shard_label
            ),
            "messages_read": CounterMetricFamily(
                "rmq_messages_out", "Messages read since the shard opened", labels=shard_label
            ),
            "body_bytes_read": CounterMetricFamily(
                "rmq_bytes_out", "Body bytes read since the shard opened", labels=shard_label
            ),
            "retention_runs": CounterMetricFamily(
                "rmq_retention_runs", "Retention runs since the shard opened", labels=shard_label
            ),
            "segments_deleted": CounterMetricFamily(
                "rmq_retention_deleted_segments",
                "Commit-log segments retention deleted from the store",
                labels=shard_label,
            ),
            "segments_evicted": CounterMetricFamily(
                "rmq_retention_evicted_segments",
                "Local copies of uploaded segments retention deleted (the tier keeps them)",
                labels=shard_label,
            ),
        }
        histograms = {
            "put_latency_us": (
                HistogramMetricFamily(
                    "rmq_put_latency_seconds",
                    "Time of one store put (a send's batch), in the engine",
                    labels=shard_label,
                ),
                MICROSECONDS_PER_SECOND,
            ),
            "pull_latency_us": (
                HistogramMetricFamily(
                    "rmq_pull_latency_seconds",
                    "Time of one store read (a pull), in the engine",
                    labels=shard_label,
                ),
                MICROSECONDS_PER_SECOND,
            ),
            "flush_latency_us": (
                HistogramMetricFamily(
                    "rmq_flush_latency_seconds",
                    "Time of one commit-log flush to disk",
                    labels=shard_label,
                ),
                MICROSECONDS_PER_SECOND,
            ),
            "flush_bytes": (
                HistogramMetricFamily(
                    "rmq_flush_size_bytes",
                    "Bytes made durable by one flush (the group-commit size)",
                    labels=shard_label,
                ),
                1.0,
            ),
        }

        def gauge(name: str, documentation: str, labels: Sequence[str] = ("shard",)) -> Any:
            return GaugeMetricFamily(name, documentation, labels=list(labels))

        log_min = gauge("rmq_commitlog_min_offset_bytes", "First commit-log offset still kept")
        log_max = gauge("rmq_commitlog_max_offset_bytes", "Commit-log offset of the next record")
        log_size = gauge(
            "rmq_commitlog_size_bytes", "Commit-log bytes kept (max offset - min offset)"
        )
        unflushed = gauge("rmq_unflushed_bytes", "Commit-log bytes written but not yet flushed")
        dispatch_lag = gauge(
            "rmq_dispatch_lag_bytes",
            "Commit-log bytes not yet dispatched to the consume queues and the index",
        )
        disk_ratio = gauge("rmq_disk_used_ratio", "Used fraction of the store's filesystem")
        disk_used = gauge("rmq_disk_used_bytes", "Used bytes of the store's filesystem")
        disk_total = gauge("rmq_disk_total_bytes", "Size of the store's filesystem")
        thresholds = gauge(
            "rmq_disk_threshold_ratio",
            "Retention thresholds of disk usage: max_used (delete expired segments early), "
            "clean_forcibly (delete the oldest), warning (refuse writes)",
            ("shard", "threshold"),
        )
        reserved = gauge(
            "rmq_retention_reserved_seconds", "How long segments are kept (file_reserved_time)"
        )
        recovery_duration = gauge(
            "rmq_recovery_duration_seconds", "Time the last open spent recovering"
        )
        recovery_scanned = gauge(
            "rmq_recovery_records_scanned", "Records the last open's recovery scanned"
        )
        recovery_redispatched = gauge(
            "rmq_recovery_records_redispatched",
            "Records the last open's recovery dispatched again to the consume queues",
        )
        recovery_truncated = gauge(
            "rmq_recovery_bytes_truncated", "Bytes of a torn tail the last open's recovery cut"
        )
        recovery_abnormal = gauge(
            "rmq_recovery_abnormal", "1 when the last open found no clean shutdown"
        )
        topic_messages = CounterMetricFamily(
            "rmq_topic_messages",
            "Messages ever stored in the topic's queues of this shard (sum of queue max offsets)",
            labels=["shard", "topic"],
        )
        topic_traffic = TopicTraffic()
        queue_labels = ("shard", "topic", "queue", "group")
        lag = gauge(
            "rmq_consumer_lag_messages",
            "Messages of a queue after the group's committed offset",
            queue_labels,
        )
        committed = gauge(
            "rmq_consumer_committed_offset", "The group's committed offset of a queue", queue_labels
        )
        tier_families: list[Metric] = []
        tier_pending = gauge(
            "rmq_tier_pending_bytes", "Sealed commit-log bytes waiting for upload to the tier"
        )
        tier_segments = gauge(
            "rmq_tier_segments",
            "Commit-log segments by tier state (active, pending, uploaded, evicted)",
            ("shard", "state"),
        )
        tier_uploaded = CounterMetricFamily(
            "rmq_tier_uploaded_bytes", "Bytes uploaded to the tier since open", labels=shard_label
        )
        tier_failing = gauge("rmq_tier_upload_failing", "1 while uploads to the tier fail")

        layouts = self._layouts()
        for shard, store in sorted(self._stores.items()):
            label = str(shard)
            try:
                engine = store.metrics()
            except Exception as error:  # a closed store: skip it, keep the scrape
                log.warning("no metrics for shard %d: %s", shard, error)
                continue
            for key, family in counters.items():
                family.add_metric([label], engine[key])
            for key, (histogram, divisor) in histograms.items():
                data = engine[key]
                histogram.add_metric(
                    [label], cumulative_buckets(data, divisor), sum_value=data["sum"] / divisor
                )
            low, high = engine["commitlog_min_offset"], engine["commitlog_max_offset"]
            log_min.add_metric([label], low)
            log_max.add_metric([label], high)
            log_size.add_metric([label], high - low)
            unflushed.add_metric([label], max(high - engine["flushed_offset"], 0))
            dispatch_lag.add_metric([label], engine["dispatch_lag_bytes"])
            try:
                usage = store.disk_usage()
                disk_ratio.add_metric([label], usage.ratio)
                disk_used.add_metric([label], usage.used_bytes)
                disk_total.add_metric([label], usage.total_bytes)
            except Exception as error:
                log.warning("no disk usage for shard %d: %s", shard, error)
            for threshold, (option, default) in THRESHOLDS.items():
                thresholds.add_metric([label, threshold], float(self._options.get(option, default)))
            reserved.add_metric(
                [label],
                float(self._options.get("file_reserved_time_ms", DEFAULT_FILE_RESERVED_MS)) / 1000,
            )
            report = store.recovery_report
            recovery_duration.add_metric([label], report.duration_ms / 1000)
            recovery_scanned.add_metric([label], report.records_scanned)
            recovery_redispatched.add_metric([label], report.records_redispatched)
            recovery_truncated.add_metric([label], report.bytes_truncated)
            recovery_abnormal.add_metric([label], 1.0 if report.mode == "abnormal" else 0.0)
            self._queues(shard, store, layouts, topic_messages, lag, committed)
            try:
                topic_traffic.add(label, store.queue_traffic())
            except Exception as error:  # closed meanwhile
                log.warning("no topic traffic for shard %d: %s", shard, error)
            tier = store.tier_status()
            if tier is not None:
                self._tier(label, tier, tier_pending, tier_segments, tier_uploaded, tier_failing)
                tier_families = [tier_pending, tier_segments, tier_uploaded, tier_failing]
        yield from counters.values()
        yield from (histogram for histogram, _ in histograms.values())
        yield from (log_min, log_max, log_size, unflushed, dispatch_lag)
        yield from (disk_ratio, disk_used, disk_total, thresholds, reserved)
        yield from (recovery_duration, recovery_scanned, recovery_redispatched)
        yield from (recovery_truncated, recovery_abnormal)
        yield from (topic_messages, *topic_traffic.families, lag, committed)
        yield from tier_families

    def _queues(
        self,
        shard: int,
        store: rmq.Store,
        layouts: Mapping[str, Sequence[int]],
        topic_messages: CounterMetricFamily,
        lag: GaugeMetricFamily,
        committed: GaugeMetricFamily,
    ) -> None:
        label = str(shard)
        ends: dict[str, dict[int, int]] = {}
        for topic, layout in sorted(layouts.items()):
            queues = [queue for queue, owner in enumerate(layout) if owner == shard]
            if not queues:
                continue
            try:
                ends[topic] = {queue: store.max_offset(topic, queue) for queue in queues}
            except Exception:  # dropped meanwhile
                continue
            topic_messages.add_metric([label, topic], sum(ends[topic].values()))
        for topic, group in self._groups[shard].read():
            for queue, end in ends.get(topic, {}).items():
                try:
                    offset = store.committed_offset(group, topic, queue)
                except Exception:
                    continue
                if offset is None:
                    continue
                values = [label, topic, str(queue), group]
                lag.add_metric(values, max(end - offset, 0))
                committed.add_metric(values, offset)

    @staticmethod
    def _tier(
        label: str,
        tier: Mapping[str, Any],
        pending: GaugeMetricFamily,
        segments: GaugeMetricFamily,
        uploaded: CounterMetricFamily,
        failing: GaugeMetricFamily,
    ) -> None:
        states = dict.fromkeys(("active", "pending", "uploaded", "evicted"), 0)
        pending_bytes = 0
        for segment in tier.get("segments", []):
            state = str(segment.get("state"))
            states[state] = states.get(state, 0) + 1
            if state == "pending":
                pending_bytes += int(segment.get("size", 0))
        pending.add_metric([label], pending_bytes)
        for state, count in states.items():
            segments.add_metric([label, state], count)
        upload = tier.get("upload", {}) or {}
        uploaded.add_metric([label], int(upload.get("uploaded_bytes", 0)))
        failing.add_metric([label], 1.0 if upload.get("failing") else 0.0)
