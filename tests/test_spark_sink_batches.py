"""The rmq sink's task path (``send_batches``) against a real broker, without Spark:
rows leave as ``send_batch`` calls grouped by topic and sharding key, within the batch
limits, and every row is stored with its own fields; a row too big for a batch still
goes (alone); a key's rows keep their order."""

from __future__ import annotations

import pyarrow as pa
from rmq.client import Client, ReceivedMessage
from rmq.cluster.local import LocalBroker
from rmq.spark.sink import WriteOptions, send_batches


def _options(broker: LocalBroker, batch_max_messages: int = 7) -> WriteOptions:
    return WriteOptions(
        endpoint=broker.endpoint, topic=None, token=None,
        batch_max_messages=batch_max_messages, linger_ms=1, timeout=60,
    )  # fmt: skip


def _everything(client: Client, topic: str, expected: int) -> list[ReceivedMessage]:
    with client.consumer("sink-check", topic) as consumer:
        got: list[ReceivedMessage] = []
        for _ in range(60):
            got += consumer.poll(timeout=0.5)
            if len(got) >= expected:
                break
        return got


def test_rows_of_many_topics_and_keys_are_stored_in_batches_with_their_fields(
    broker: LocalBroker, client: Client
) -> None:
    client.create_topic("sink-a", queues=4)
    client.create_topic("sink-b", queues=4)
    count = 100
    big = 1024 * 1024 + 10  # over one batch's bytes: sent alone
    batch = pa.RecordBatch.from_pydict(
        {
            "topic": ["sink-a" if i % 2 else "sink-b" for i in range(count)],
            "body": [(b"B" * big if i == 42 else f"r{i}".encode()) for i in range(count)],
            "tags": [None if i % 3 == 0 else f"t{i % 3}" for i in range(count)],
            "keys": [f"key-{i}" for i in range(count)],  # a string column: one key per row
            "sharding_key": [f"s{i % 4}" for i in range(count)],
        }
    )
    written = send_batches(_options(broker), iter([batch, batch.slice(0, 10)]))
    assert written.rows == count + 10

    stored = _everything(client, "sink-a", 55) + _everything(client, "sink-b", 55)
    assert len(stored) == count + 10

    def row_of(message: ReceivedMessage) -> int:
        return 42 if len(message.body) == big else int(message.body[1:])

    for message in stored:
        row = row_of(message)
        assert message.topic == ("sink-a" if row % 2 else "sink-b")
        assert message.tags == (None if row % 3 == 0 else f"t{row % 3}")
        assert list(message.keys) == [f"key-{row}"]
    # A sharding key's rows go to one queue, in the order given: the first Arrow batch's
    # rows, then the second's.
    for topic, parity in (("sink-a", 1), ("sink-b", 0)):
        for key in range(4):
            mine = sorted(
                (m for m in stored if m.topic == topic and row_of(m) % 4 == key),
                key=lambda m: m.queue_offset,
            )
            sent = [r for r in range(count) if r % 2 == parity and r % 4 == key]
            sent += [r for r in range(10) if r % 2 == parity and r % 4 == key]
            assert len({m.queue_id for m in mine}) == (1 if sent else 0)
            assert [row_of(m) for m in mine] == sent


def test_rows_with_properties_keep_them(broker: LocalBroker, client: Client) -> None:
    client.create_topic("sink-props", queues=2)
    batch = pa.RecordBatch.from_pydict(
        {
            "topic": ["sink-props"] * 20,
            "body": [f"p{i}" for i in range(20)],
            "keys": [[f"k{i}", "all"] for i in range(20)],
            "properties": pa.array(
                [[("n", str(i))] for i in range(20)], pa.map_(pa.string(), pa.string())
            ),
        }
    )
    assert send_batches(_options(broker), iter([batch])).rows == 20
    stored = {bytes(m.body).decode(): m for m in _everything(client, "sink-props", 20)}
    assert sorted(stored) == sorted(f"p{i}" for i in range(20))
    for i in range(20):
        assert list(stored[f"p{i}"].keys) == [f"k{i}", "all"]
        assert stored[f"p{i}"].properties["n"] == str(i)
