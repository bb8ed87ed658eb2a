"""Per-topic traffic of a shard (``rmq_topic_messages_in_total`` and its siblings): the
engine counts messages and body bytes in and out on each queue object that a put or a
pull already holds (``Store.queue_traffic()``); a scrape sums them by topic.

The families are labelled ``shard`` and ``topic``, not ``queue``: a broker with many
topics would otherwise serve four series per queue, and per-queue figures are what the
consumer-lag families are for. Like the shard-wide counters these count since the shard
process opened its store, which Prometheus's ``rate()`` takes as a counter reset.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prometheus_client.core import CounterMetricFamily

# (family name, help) for each counter of a queue_traffic() row, in its order after
# (topic, queue_id).
FAMILIES = (
    ("rmq_topic_messages_in", "Messages stored in the topic on the shard since it opened"),
    ("rmq_topic_bytes_in", "Body bytes stored in the topic on the shard since it opened"),
    ("rmq_topic_messages_out", "Messages of the topic pulls handed out since the shard opened"),
    ("rmq_topic_bytes_out", "Body bytes of the topic pulls handed out since the shard opened"),
)


class TopicTraffic:
    """The four per-topic counter families of one scrape, filled shard by shard."""

    def __init__(self) -> None:
        self.families = [
            CounterMetricFamily(name, documentation, labels=["shard", "topic"])
            for name, documentation in FAMILIES
        ]

    def add(self, shard: str, queues: Iterable[Sequence[str | int]]) -> None:
        """Add one shard's ``queue_traffic()`` rows, summed by topic."""
        by_topic: dict[str, list[int]] = {}
        for topic, _queue, *counts in queues:
            sums = by_topic.setdefault(str(topic), [0] * len(FAMILIES))
            for index, count in enumerate(counts):
                sums[index] += int(count)
        for topic, sums in sorted(by_topic.items()):
            for family, value in zip(self.families, sums, strict=True):
                family.add_metric([shard, topic], value)
