"""A streaming query from a real broker (``rmq serve``) into Parquet with a checkpoint,
while a producer keeps sending: stopped and restarted here, then run in a child driver
process on a Spark standalone master and worker (on loopback) and killed there with
SIGKILL, then restarted once more; the Parquet output must equal what was sent, with no
gap and no duplicate."""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from pyspark.sql import SparkSession
from rmq.client import Client
from rmq.cluster.local import LocalBroker

from tests.support.brokers import Brokers
from tests.support.spark_cluster import ROOT, StandaloneCluster, job_command, job_env
from tests.support.spark_streams import Sender, committed_batches, run_available_now, wait_for


def test_a_query_stopped_restarted_and_killed_on_a_cluster_writes_every_message_once(
    spark: SparkSession, module_brokers: Brokers, tmp_path: Path
) -> None:
    broker: LocalBroker = module_brokers.start(shards=2)
    client: Client = module_brokers.client(broker)
    topic = "flow"
    client.create_topic(topic, queues=4)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    cluster = StandaloneCluster(tmp_path)
    cluster.start()
    sender = Sender(client, topic)
    sender.start()
    try:
        # 1. In this process, stopped after a few micro-batches while the producer sends.
        frame = (
            spark.readStream.format("rmq")
            .option("endpoint", broker.endpoint)
            .option("topic", topic)
            .option("maxOffsetsPerTrigger", "300")
            .load()
        )
        query = (
            frame.writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds")
            .start()
        )
        wait_for(lambda: committed_batches(checkpoint) >= 2, 90, "two micro-batches")
        query.stop()
        assert query.exception() is None

        # 2. In a child process, on the standalone cluster (its executor reads rmq), killed
        # with SIGKILL once it has committed a batch.
        before = committed_batches(checkpoint)
        command = job_command(cluster.ready(), broker.endpoint, topic, out, checkpoint)
        child = subprocess.Popen(
            command, cwd=ROOT, env=job_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        try:
            wait_for(
                lambda: committed_batches(checkpoint) > before or child.poll() is not None,
                120,
                "the child's first batch",
            )
            assert child.poll() is None, child.stdout.read().decode() if child.stdout else ""
            time.sleep(0.3)  # land the kill anywhere in the next batch
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(30)
        assert cluster.executor_logs(), "no executor ran on the worker"
    finally:
        sent = sender.stop()
        cluster.stop()

    # 3. Restarted here once more, reading up to the end.
    assert len(sent) > 1000
    run_available_now(
        spark.readStream.format("rmq")
        .option("endpoint", broker.endpoint)
        .option("topic", topic)
        .load(),
        out,
        checkpoint,
    )
    rows = spark.read.parquet(str(out)).select("body", "queue_id", "queue_offset").collect()
    bodies = Counter(bytes(row.body).decode() for row in rows)
    assert [body for body, count in bodies.items() if count > 1] == []
    assert sorted(bodies) == sorted(sent)
    for queue in range(4):
        offsets = sorted(row.queue_offset for row in rows if row.queue_id == queue)
        assert offsets == list(range(len(offsets)))
