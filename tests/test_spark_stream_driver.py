"""The streaming source's driver side, which Spark runs in a fresh Python process for every
query (before the query's first micro-batch) and asks for offsets once or twice per
micro-batch: what that process loads, and how many times it asks the broker."""

from __future__ import annotations

import json
import subprocess
import sys

from rmq.client import Client
from rmq.cluster.local import LocalBroker

# What Spark's streaming-source worker does with a broker-reading source, in a new
# interpreter: unpickle the data source (rmq.spark.source), make the stream reader, ask for
# offsets; then which of the heavy modules a broker read does not need got loaded.
_DRIVER = """
import json, sys
import pyspark.sql.streaming.python_streaming_source_runner  # what Spark's worker loads
from rmq.spark.source import RmqDataSource
source = RmqDataSource({"endpoint": sys.argv[1], "topic": sys.argv[2]})
reader = source.streamReader(source.schema())
start = reader.initialOffset()
end = reader.latestOffset(start, reader.getDefaultReadLimit())
reader.reportLatestOffset()
parts = reader.partitions(start, end)
reader.stop()
heavy = ("grpc", "rmq.cluster", "rmq.spark.store_queues", "prometheus_client")
print(json.dumps({"loaded": [m for m in heavy if m in sys.modules], "parts": len(parts)}))
"""


def test_a_broker_readers_driver_loads_neither_grpc_nor_the_cluster(
    broker: LocalBroker, client: Client
) -> None:
    client.create_topic("driver_imports", queues=2)
    with client.producer() as producer:
        for i in range(10):
            producer.send("driver_imports", f"m{i}".encode(), queue_id=i % 2)
        assert producer.flush(60)
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, broker.endpoint, "driver_imports"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer == {"loaded": [], "parts": 1}


def test_report_latest_offset_reuses_what_latest_offset_just_saw(
    broker: LocalBroker, client: Client
) -> None:
    """Spark asks ``reportLatestOffset`` right after ``latestOffset``: that answer is the
    one ``latestOffset`` got from the broker (messages sent in between are not in it);
    asked again without a ``latestOffset`` before it, the reader asks the broker."""
    from rmq.spark.arrow import ARROW_SCHEMA
    from rmq.spark.stream import RmqStreamReader
    from rmq.spark.stream_options import parse_stream_options

    topic = "reported"
    client.create_topic(topic, queues=1)

    def send(count: int) -> None:
        with client.producer() as producer:
            for i in range(count):
                producer.send(topic, f"m{i}".encode())
            assert producer.flush(60)

    send(5)
    options = parse_stream_options({"endpoint": broker.endpoint, "topic": topic})
    reader = RmqStreamReader(options, ARROW_SCHEMA)
    try:
        start = reader.initialOffset()
        assert reader.latestOffset(start, reader.getDefaultReadLimit()) == {topic: {"0": 5}}
        send(3)
        assert reader.reportLatestOffset() == {topic: {"0": 5}}  # what latestOffset saw
        assert reader.reportLatestOffset() == {topic: {"0": 8}}  # asked anew
    finally:
        reader.stop()
