"""A damaged record in the middle of a queue (issue 16, part 2).

A read returns the valid records up to the damaged one; a read starting at it raises
``CorruptRecordError`` naming the file, the commit-log offset and the queue offset; the
records after it stay readable. Through the broker, a consumer group is never stuck at
it: by default the consumer logs and counts it and goes on after it (a commit moves the
group past it), and with ``on_corrupt="raise"`` it raises until the application seeks.
No valid record is ever skipped.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
import rmq
from rmq.client import Client
from rmq.cluster.local import LocalBroker
from rmq.errors import BrokerDataLossError, CorruptRecordError

from tests.support.damaged_records import body, damage_body

TOPIC = "Damaged"
COUNT = 120
VICTIM = 60  # queue offset of the damaged record
SEGMENT = 64 * 1024


def tag(index: int) -> str:
    return "even" if index % 2 == 0 else "odd"


def test_a_read_stops_before_a_damaged_record_and_the_next_one_names_it(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, commitlog_segment_size=SEGMENT) as store:
        for i in range(COUNT):
            store.put(TOPIC, body(i), tags=tag(i))
    damage_body(tmp_path, VICTIM)

    with rmq.Store(tmp_path, commitlog_segment_size=SEGMENT) as store:
        first = store.get(TOPIC, 0, offset=7, max_count=64)
        assert [m.body for m in first] == [body(i) for i in range(7, VICTIM)]
        with pytest.raises(CorruptRecordError) as raised:
            store.get(TOPIC, 0, offset=VICTIM, max_count=64)
        error = raised.value
        assert error.queue_offset == VICTIM
        assert Path(error.file).parent.name == "commitlog"
        assert error.offset >= 0
        assert f"queue offset {VICTIM}" in str(error)
        rest = store.get(TOPIC, 0, offset=VICTIM + 1, max_count=COUNT)
        assert [m.body for m in rest] == [body(i) for i in range(VICTIM + 1, COUNT)]

        # With a tag filter that passes over entries before the damage, the read ends at
        # the damaged record and says so, so the next read starts there.
        pulled = store.pull(TOPIC, 0, VICTIM - 1, max_count=8, tags=["even"])
        assert pulled.messages == []
        assert pulled.next_offset == VICTIM
        filtered = store.pull(TOPIC, 0, VICTIM + 1, max_count=8, tags=["even"])
        assert [m.body for m in filtered.messages] == [body(i) for i in range(62, 78, 2)]


@pytest.fixture(scope="module")
def damaged_broker(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, LocalBroker]:
    data = tmp_path_factory.mktemp("corrupt") / "data"
    store_option = ["--store-option", f"commitlog_segment_size={SEGMENT}"]
    with LocalBroker(data, shards=1, args=store_option) as broker, Client(broker.endpoint) as c:
        c.create_topic(TOPIC, queues=1)
        with c.producer() as producer:
            sent = [producer.send(TOPIC, body(i), tags=tag(i)) for i in range(COUNT)]
            offsets = [future.result(timeout=30).queue_offset for future in sent]
        assert offsets == list(range(COUNT))
    damage_body(data / "shard-0", VICTIM)
    return data, LocalBroker(data, shards=1, args=store_option)


def consume(client: Client, group: str, want: int, **options: object) -> list[bytes]:
    got: list[bytes] = []
    with client.consumer(group, TOPIC, **options) as consumer:  # type: ignore[arg-type]
        for _ in range(40):
            got += [m.body for m in consumer.poll(timeout=0.5)]
            if len(got) >= want:
                break
        consumer.commit()
        assert consumer.corrupt_skipped == 1
    return got


def test_a_consumer_group_skips_the_damaged_record_logs_and_counts_it(
    damaged_broker: tuple[Path, LocalBroker], caplog: pytest.LogCaptureFixture
) -> None:
    _, broker = damaged_broker
    with broker, Client(broker.endpoint) as client:
        with caplog.at_level(logging.ERROR, logger="rmq.client.consumer"):
            got = consume(client, "skipper", COUNT - 1)
        assert got == [body(i) for i in range(COUNT) if i != VICTIM]
        assert any(f"offset {VICTIM} of queue 0" in r.getMessage() for r in caplog.records)
        # The commit moved the group past it: a restarted consumer is not stuck there.
        with client.consumer("skipper", TOPIC) as again:
            assert again.poll(timeout=0.5) == []
            assert again.positions() == {0: COUNT}
        # A tag filter that passes over entries just before the damage: the shard answers
        # up to the damaged record, and the consumer skips only that one.
        evens = consume(client, "evens", COUNT // 2 - 1, tags=["even"], max_messages=30)
        assert evens == [body(i) for i in range(0, COUNT, 2) if i != VICTIM]
    assert "Damaged/0" in broker.log_text() and f"queue offset {VICTIM}" in broker.log_text()


def test_on_corrupt_raise_stops_at_the_damaged_record_until_the_application_seeks(
    damaged_broker: tuple[Path, LocalBroker],
) -> None:
    _, broker = damaged_broker
    with broker, Client(broker.endpoint) as client:
        got: list[bytes] = []
        with client.consumer("strict", TOPIC, on_corrupt="raise") as consumer:
            with pytest.raises(BrokerDataLossError) as raised:
                for _ in range(40):
                    got += [m.body for m in consumer.poll(timeout=0.5)]
            assert got == [body(i) for i in range(VICTIM)]
            error = raised.value
            assert (error.queue_id, error.queue_offset) == (0, VICTIM)
            assert isinstance(error, CorruptRecordError)
            with pytest.raises(BrokerDataLossError):  # still there on the next poll
                consumer.poll(timeout=0.5)
            consumer.seek(0, VICTIM + 1)
            rest: list[bytes] = []
            while len(rest) < COUNT - VICTIM - 1:
                rest += [m.body for m in consumer.poll(timeout=2.0)]
            assert rest == [body(i) for i in range(VICTIM + 1, COUNT)]
            assert consumer.corrupt_skipped == 0


@pytest.mark.parametrize("on_corrupt", ["skip", "raise"])
def test_a_pull_that_read_ahead_into_the_damaged_record_waits_for_the_messages_before_it(
    damaged_broker: tuple[Path, LocalBroker], on_corrupt: str
) -> None:
    """Small pulls, small polls and a slow application: the queue reads a pull ahead while
    messages are still buffered, so the pull that meets the damaged record ends before the
    messages ahead of it are handed out. They come first, then the damage is acted on at
    its offset."""
    _, broker = damaged_broker
    with broker, Client(broker.endpoint) as client:
        got: list[bytes] = []
        options: dict[str, object] = {"max_messages": 25, "max_poll_messages": 10}
        with client.consumer(
            f"ahead-{on_corrupt}", TOPIC, on_corrupt=on_corrupt, **options
        ) as consumer:  # type: ignore[arg-type]
            if on_corrupt == "raise":
                with pytest.raises(BrokerDataLossError) as raised:
                    for _ in range(80):
                        got += [m.body for m in consumer.poll(timeout=0.5)]
                        time.sleep(0.05)  # the pull read ahead ends meanwhile
                assert got == [body(i) for i in range(VICTIM)]
                assert raised.value.queue_offset == VICTIM
                assert consumer.positions() == {0: VICTIM}
            else:
                for _ in range(80):
                    got += [m.body for m in consumer.poll(timeout=0.5)]
                    if len(got) >= COUNT - 1:
                        break
                    time.sleep(0.05)
                assert got == [body(i) for i in range(COUNT) if i != VICTIM]
                assert consumer.corrupt_skipped == 1
                assert consumer.positions() == {0: COUNT}
