"""A topic created (or grown) through the broker has each new queue's first consume-queue
file in the shard directory that serves the queue, and nowhere else, before anything is
sent to it (so that its first send does not create it on the data plane); the queues
read empty, take their first message at offset 0, and stay so across a restart."""

from __future__ import annotations

from pathlib import Path

from rmq.client import Client
from rmq.cluster.local import LocalBroker

FIRST_FILE = "00000000000000000000"


def queue_files(data: Path, topic: str) -> dict[int, list[str]]:
    """Queue id -> the shard directories holding its first file."""
    found: dict[int, list[str]] = {}
    for path in sorted(data.glob(f"shard-*/consumequeue/{topic}/*/{FIRST_FILE}")):
        found.setdefault(int(path.parent.name), []).append(path.parents[3].name)
    return found


def test_new_queues_have_their_first_file_where_they_are_served(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with LocalBroker(data, shards=2) as broker, Client(broker.endpoint) as client:
        route = client.create_topic("files", queues=2)
        served = {queue.queue_id: f"shard-{queue.shard}" for queue in route.queues}
        assert queue_files(data, "files") == {q: [shard] for q, shard in served.items()}
        grown = client.create_topic("files", queues=4)
        served = {queue.queue_id: f"shard-{queue.shard}" for queue in grown.queues}
        assert queue_files(data, "files") == {q: [shard] for q, shard in served.items()}
        assert [q.max_offset for q in client.describe_topic("files")] == [0, 0, 0, 0]
        with client.producer() as producer:
            results = [producer.send_sync("files", b"m", queue_id=q) for q in range(4)]
        assert [r.queue_offset for r in results] == [0, 0, 0, 0]
    with LocalBroker(data, shards=2) as broker, Client(broker.endpoint) as client:
        assert [q.max_offset for q in client.describe_topic("files")] == [1, 1, 1, 1]
