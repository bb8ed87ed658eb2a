"""A shard process killed with SIGKILL under load: the supervisor restarts it, it recovers,
every acknowledged message is there, and consumers resume from committed offsets."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import Future

from rmq.client import Client, SendResult

from tests.support.brokers import Brokers

TOPIC = "crash"


def produce_until(
    client: Client,
    stop: threading.Event,
    acked: dict[int, SendResult],
    failed: list[BaseException],
) -> None:
    """Send numbered messages until ``stop``; record each acknowledged one, and what
    each failed send raised."""
    lock = threading.Lock()

    def record(index: int, future: Future[SendResult]) -> None:
        error = future.exception()
        with lock:
            if error is None:
                acked[index] = future.result()
            else:
                failed.append(error)

    with client.producer(linger_ms=1, retry_timeout=30) as producer:
        index = 0
        while not stop.is_set():
            future = producer.send(TOPIC, b"message-%d" % index, keys=[f"k{index}"])
            future.add_done_callback(lambda f, i=index: record(i, f))
            index += 1
            if index % 200 == 0:
                time.sleep(0.005)  # keep the load steady rather than flooding the buffer


def test_sigkill_of_a_shard_loses_nothing_acknowledged(brokers: Brokers) -> None:
    broker = brokers.start(shards=2, args=["--flush", "sync"])
    client = brokers.client(broker, retry_timeout=30)
    client.create_topic(TOPIC, queues=8)
    acked: dict[int, SendResult] = {}
    failed: list[BaseException] = []
    stop = threading.Event()
    producer = threading.Thread(target=produce_until, args=(client, stop, acked, failed))
    producer.start()
    try:
        deadline = time.monotonic() + 30
        while len(acked) < 3000 and time.monotonic() < deadline:
            time.sleep(0.05)
        victim = broker.state()["processes"][1]
        os.kill(victim["pid"], signal.SIGKILL)
        broker.wait_for(
            lambda s: s["processes"][1]["restarts"] == 1 and s["processes"][1]["serving"],
            timeout=60,
            what="the restart of shard process 1",
        )
        acked_at_restart = len(acked)
        deadline = time.monotonic() + 30
        while len(acked) < acked_at_restart + 3000 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        producer.join(60)
    assert not producer.is_alive()
    assert len(acked) >= acked_at_restart + 3000, "producing did not resume after the restart"
    # The batches in flight to the killed shard were retried until it was back.
    assert not failed, f"{len(failed)} sends failed, e.g. {failed[:3]}"
    assert "SIGKILL" in broker.log_text() and "restarting" in broker.log_text()

    # Every acknowledged message is where its acknowledgement said.
    stored: dict[tuple[int, int], bytes] = {}
    with client.consumer("checker", TOPIC) as consumer:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            batch = consumer.poll(timeout=2.0)
            if not batch and len(stored) >= len(acked):
                break
            stored.update({(m.queue_id, m.queue_offset): m.body for m in batch})
    lost = [
        index
        for index, result in acked.items()
        if stored.get((result.queue_id, result.queue_offset)) != b"message-%d" % index
    ]
    assert not lost, f"{len(lost)} acknowledged messages lost, e.g. {lost[:5]}"

    # A group that committed half way resumes exactly there after another crash.
    with client.consumer("resumer", TOPIC) as consumer:
        seen = 0
        while seen < len(stored) // 2:
            seen += len(consumer.poll(timeout=2.0))
        consumer.commit()
        committed = consumer.positions()
    os.kill(broker.state()["processes"][0]["pid"], signal.SIGKILL)
    broker.wait_for(
        lambda s: s["processes"][0]["restarts"] == 1 and s["processes"][0]["serving"],
        timeout=60,
        what="the restart of shard process 0",
    )
    ends: dict[int, int] = {}
    for queue_id, offset in stored:
        ends[queue_id] = max(ends.get(queue_id, 0), offset + 1)
    unfinished = {q for q, end in ends.items() if committed[q] < end}
    first_seen: dict[int, int] = {}
    with client.consumer("resumer", TOPIC) as consumer:
        deadline = time.monotonic() + 60
        while set(first_seen) != unfinished and time.monotonic() < deadline:
            for message in consumer.poll(timeout=1.0):
                first_seen.setdefault(message.queue_id, message.queue_offset)
    assert set(first_seen) == unfinished
    for queue_id, offset in first_seen.items():
        assert offset == committed[queue_id], f"queue {queue_id} did not resume at its commit"
