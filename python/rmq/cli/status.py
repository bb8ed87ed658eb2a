"""``rmq status``: a live terminal view of a running broker, from its metrics endpoint.

It scrapes the endpoint ``rmq serve --metrics-port`` serves (found in DATA/serve.json,
or given with ``--url``) every second and shows, per shard, messages and bytes per
second in and out, the p99 put latency of the interval, disk usage against the
retention threshold, commit-log size, dispatch lag, consumer lag and restarts; then the
consumer groups' lag and the topics (messages stored, messages and bytes per second in
and out). ``--once`` prints one view (two scrapes an
interval apart, for the rates) and exits.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rmq.cli.tier_report import human_bytes

DEFAULT_DATA_DIR = "rmq-data"
CLEAR = "\x1b[H\x1b[2J"

Labels = tuple[tuple[str, str], ...]


@dataclass
class Snapshot:
    """One scrape: each sample's value by name and labels, and when it was taken."""

    taken: float
    samples: dict[str, dict[Labels, float]] = field(default_factory=dict)

    def series(self, name: str) -> dict[Labels, float]:
        return self.samples.get(name, {})

    def by(self, name: str, label: str) -> dict[str, float]:
        """``name``'s values summed by one label."""
        out: dict[str, float] = {}
        for labels, value in self.series(name).items():
            key = dict(labels).get(label, "")
            out[key] = out.get(key, 0.0) + value
        return out


def parse(text: str, taken: float) -> Snapshot:
    from prometheus_client.parser import text_string_to_metric_families

    snapshot = Snapshot(taken)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = tuple(sorted(sample.labels.items()))
            snapshot.samples.setdefault(sample.name, {})[labels] = sample.value
    return snapshot


def scrape(url: str, timeout: float = 10.0) -> Snapshot:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        text: bytes = response.read()
    return parse(text.decode(), time.monotonic())


def quantile(buckets: Mapping[float, float], q: float) -> float | None:
    """The ``q`` quantile of cumulative buckets (upper bound -> count), interpolated
    within a bucket as Prometheus's histogram_quantile does; None without observations."""
    ordered = sorted(buckets.items())
    if not ordered or ordered[-1][1] <= 0:
        return None
    rank = q * ordered[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in ordered:
        if count >= rank:
            if math.isinf(bound):
                return lower  # above every bound: the highest finite one
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower


def histogram_buckets(snapshot: Snapshot, name: str, shard: str) -> dict[float, float]:
    out: dict[float, float] = {}
    for labels, value in snapshot.series(f"{name}_bucket").items():
        values = dict(labels)
        if values.get("shard") == shard:
            out[float(values["le"])] = value
    return out


def _increase(now: float, before: float | None) -> float:
    if before is None:
        return 0.0
    return now if now < before else now - before  # a counter that reset (a restart)


def _rate(
    now: Snapshot, before: Snapshot | None, name: str, key: str, label: str = "shard"
) -> float | None:
    """Per second since ``before``, of ``name`` summed by ``label`` (its value ``key``)."""
    if before is None or now.taken <= before.taken:
        return None
    value = now.by(name, label).get(key, 0.0)
    previous = before.by(name, label).get(key)
    return _increase(value, previous) / (now.taken - before.taken)


def _number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.1f}M{unit}"
    if value >= 1e4:
        return f"{value / 1e3:.1f}k{unit}"
    return f"{value:.0f}{unit}"


def _bytes_rate(value: float | None) -> str:
    return "-" if value is None else f"{human_bytes(int(value))}/s"


def _table(headers: list[str], rows: Iterable[list[str]]) -> list[str]:
    rows = list(rows)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return lines


def render(now: Snapshot, before: Snapshot | None, url: str) -> str:
    """The view of one scrape (and rates since ``before``)."""
    shards = sorted(now.by("rmq_messages_in_total", "shard"), key=lambda s: int(s or 0))
    process_of = {
        dict(k).get("shard", ""): dict(k).get("process", "")
        for k in now.series("rmq_shard_process")
    }
    restarts = now.by("rmq_shard_restarts_total", "process")
    up = now.by("rmq_shard_up", "process")
    lag = now.by("rmq_consumer_lag_messages", "shard")
    thresholds = {
        dict(k).get("shard", ""): v
        for k, v in now.series("rmq_disk_threshold_ratio").items()
        if dict(k).get("threshold") == "max_used"
    }
    rows = []
    for shard in shards:
        buckets = histogram_buckets(now, "rmq_put_latency_seconds", shard)
        if before is not None:
            old = histogram_buckets(before, "rmq_put_latency_seconds", shard)
            interval = {b: _increase(c, old.get(b)) for b, c in buckets.items()}
            if max(interval.values(), default=0) > 0:
                buckets = interval
        p99 = quantile(buckets, 0.99)
        process = process_of.get(shard, "")
        disk = now.by("rmq_disk_used_ratio", "shard").get(shard)
        rows.append(
            [
                shard,
                process or "-",
                "up" if up.get(process, 1.0) else "DOWN",
                _number(_rate(now, before, "rmq_messages_in_total", shard), "/s"),
                _number(_rate(now, before, "rmq_messages_out_total", shard), "/s"),
                _bytes_rate(_rate(now, before, "rmq_bytes_in_total", shard)),
                _bytes_rate(_rate(now, before, "rmq_bytes_out_total", shard)),
                "-" if p99 is None else f"{p99 * 1000:.2f} ms",
                "-"
                if disk is None
                else f"{disk * 100:.0f}%/{thresholds.get(shard, 0.75) * 100:.0f}%",
                human_bytes(int(now.by("rmq_commitlog_size_bytes", "shard").get(shard, 0))),
                human_bytes(int(now.by("rmq_dispatch_lag_bytes", "shard").get(shard, 0))),
                _number(lag.get(shard, 0.0)),
                _number(restarts.get(process, 0.0)),
            ]
        )
    lines = [f"rmq status  {url}  {time.strftime('%H:%M:%S')}", ""]
    headers = ["shard", "proc", "state", "in msg", "out msg", "in bytes", "out bytes"]
    headers += ["p99 put", "disk/max", "log", "disp lag", "group lag", "restarts"]
    lines += _table(headers, rows) if rows else ["(no shard answered)"]
    groups: dict[tuple[str, str], float] = {}
    for labels, value in now.series("rmq_consumer_lag_messages").items():
        values = dict(labels)
        key = (values.get("group", ""), values.get("topic", ""))
        groups[key] = groups.get(key, 0.0) + value
    if groups:
        lines += [
            "",
            *_table(
                ["group", "topic", "lag"],
                ([g, t, _number(v)] for (g, t), v in sorted(groups.items())),
            ),
        ]
    lines += _topics(now, before)
    return "\n".join(lines)


def _topics(now: Snapshot, before: Snapshot | None) -> list[str]:
    """The topics: messages stored (from the queues' offsets), and the rates of messages
    and body bytes in and out (from the engine's per-topic counters)."""
    topics = now.by("rmq_topic_messages_total", "topic")
    if not topics:
        return []

    def rate(name: str, topic: str) -> float | None:
        return _rate(now, before, name, topic, "topic")

    rows = [
        [
            topic,
            _number(count),
            _number(rate("rmq_topic_messages_in_total", topic), "/s"),
            _number(rate("rmq_topic_messages_out_total", topic), "/s"),
            _bytes_rate(rate("rmq_topic_bytes_in_total", topic)),
            _bytes_rate(rate("rmq_topic_bytes_out_total", topic)),
        ]
        for topic, count in sorted(topics.items())
    ]
    headers = ["topic", "messages", "in msg", "out msg", "in bytes", "out bytes"]
    return ["", *_table(headers, rows)]


def metrics_url(args: argparse.Namespace) -> str:
    """The endpoint: --url, else the one DATA/serve.json names."""
    if args.url:
        url: str = args.url
        if "://" not in url:
            url = f"http://{url}"
        if url.count("/") < 3:
            url += "/metrics"
        return url
    from rmq.cluster.metrics import parse_state_metrics
    from rmq.cluster.supervisor import STATE_FILE

    path = args.data / STATE_FILE
    try:
        text = path.read_text()
    except OSError as error:
        raise SystemExit(
            f"rmq status: no running broker in {args.data} ({path}: {error.strerror}); "
            "give its data directory with --data or its endpoint with --url"
        ) from error
    found = parse_state_metrics(text)
    if found is None:
        raise SystemExit(
            f"rmq status: the broker in {args.data} serves no metrics (started with "
            "--metrics-port 0)"
        )
    return found


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status",
        help="a live view of a running broker (from its metrics endpoint)",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get("RMQ_DATA", DEFAULT_DATA_DIR)),
        help=f"the broker's data directory (default: $RMQ_DATA or ./{DEFAULT_DATA_DIR})",
    )
    parser.add_argument("--url", help="the metrics endpoint, e.g. http://127.0.0.1:9081/metrics")
    parser.add_argument(
        "--interval", type=float, default=1.0, help="seconds between refreshes (default: 1)"
    )
    parser.add_argument("--once", action="store_true", help="print one view and exit")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        url = metrics_url(args)
    except SystemExit as error:
        print(error, file=sys.stderr)
        return 2
    interval = max(args.interval, 0.1)
    before: Snapshot | None = None
    try:
        while True:
            try:
                now = scrape(url)
            except (urllib.error.URLError, OSError) as error:
                if args.once:
                    print(f"rmq status: cannot read {url}: {error}", file=sys.stderr)
                    return 1
                sys.stdout.write(f"{CLEAR}rmq status: cannot read {url}: {error}\n")
                sys.stdout.flush()
                time.sleep(interval)
                continue
            if args.once and before is None:
                before = now
                time.sleep(interval)
                continue
            view = render(now, before, url)
            if args.once:
                print(view)
                return 0
            sys.stdout.write(CLEAR + view + "\n")
            sys.stdout.flush()
            before = now
            time.sleep(interval)
    except KeyboardInterrupt:
        return 0
