"""Topics longer than the V1 layout's 127 bytes (issue 16, part 1).

RocketMQ 5 accepts consumer groups of up to 255 characters, so its ``%RETRY%`` and
``%DLQ%`` topics run past 127 bytes and are written as V2 records (2-byte topic length).
rmq accepts every such name up to 255 bytes (a consume-queue directory's limit), writes V2
records for them as RocketMQ 5 does, and refuses them in a store opened with
``v1_records_only=True`` (kept readable by RocketMQ 4.9). RocketMQ's own reading of these
files is checked in test_interop_rocketmq_read.py and test_interop_rocketmq_write.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import rmq
from rmq.errors import InvalidArgumentError

from tests.support.brokers import Brokers

MAGIC_V1 = bytes.fromhex("DAA320A7")
MAGIC_V2 = bytes.fromhex("DAA320AB")
RETRY_TOPIC = "%RETRY%" + "LongConsumerGroup_" + "x" * 120  # 145 bytes
LONGEST_TOPIC = "%DLQ%" + "G" * 250  # 255 bytes
SEGMENT = 64 * 1024


def open_store(path: Path, **options: object) -> rmq.Store:
    return rmq.Store(path, commitlog_segment_size=SEGMENT, **options)  # type: ignore[arg-type]


def record_magics(store_dir: Path) -> list[bytes]:
    """The magic of every record in the commit log, walking TOTALSIZE."""
    magics = []
    for segment in sorted((store_dir / "commitlog").iterdir()):
        data = segment.read_bytes()
        at = 0
        while at + 8 <= len(data):
            size = int.from_bytes(data[at : at + 4], "big", signed=True)
            magic = data[at + 4 : at + 8]
            if size <= 0 or magic not in (MAGIC_V1, MAGIC_V2):
                break
            magics.append(magic)
            at += size
    return magics


def test_long_topics_are_written_as_v2_and_read_back(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        store.put("Short", b"v1", keys=["k"])
        for i in range(5):
            store.put(RETRY_TOPIC, f"retry {i}".encode(), tags="TagA", keys=[f"k{i}", "all"])
        store.put(LONGEST_TOPIC, b"dead letter", keys=["dlq"])
    assert record_magics(tmp_path) == [MAGIC_V1] + [MAGIC_V2] * 6

    with open_store(tmp_path) as store:  # after a reopen: recovery reads V2 too
        assert set(store.topics()) == {"Short", RETRY_TOPIC, LONGEST_TOPIC}
        assert (store.min_offset(RETRY_TOPIC, 0), store.max_offset(RETRY_TOPIC, 0)) == (0, 5)
        got = store.get(RETRY_TOPIC, 0, offset=0, max_count=10)
        assert [m.body for m in got] == [f"retry {i}".encode() for i in range(5)]
        assert {m.topic for m in got} == {RETRY_TOPIC}
        assert {m.commitlog_offset for m in store.query_by_key(RETRY_TOPIC, "all")} == {
            m.commitlog_offset for m in got
        }
        dead = store.get(LONGEST_TOPIC, 0, offset=0, max_count=1)[0]
        assert dead.body == b"dead letter"
        assert store.get_by_msg_id(dead.msg_id).topic == LONGEST_TOPIC
        store.commit_offset(RETRY_TOPIC[len("%RETRY%") :], RETRY_TOPIC, 0, 5)
        assert store.committed_offset(RETRY_TOPIC[len("%RETRY%") :], RETRY_TOPIC, 0) == 5
        assert store.verify().clean


def test_names_over_255_bytes_are_refused(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        with pytest.raises(InvalidArgumentError, match="256 bytes, more than 255"):
            store.put("t" * 256, b"x")
        with pytest.raises(InvalidArgumentError, match="group name is 256 bytes"):
            store.commit_offset("g" * 256, "Short", 0, 0)


def test_a_v1_only_store_refuses_long_topics_naming_the_option(tmp_path: Path) -> None:
    with open_store(tmp_path, v1_records_only=True) as store:
        store.put("t" * 127, b"fits V1")
        with pytest.raises(InvalidArgumentError, match="v1_records_only") as refused:
            store.put(RETRY_TOPIC, b"needs V2")
        assert "145 bytes, more than 127" in str(refused.value)
        with pytest.raises(InvalidArgumentError, match="v1_records_only"):
            store.create_topic(RETRY_TOPIC, 1)
    assert record_magics(tmp_path) == [MAGIC_V1]
    # Reading is never limited: a V1-only store opened on V2 records reads them.
    with open_store(tmp_path) as store:
        store.put(RETRY_TOPIC, b"needs V2")
    with open_store(tmp_path, v1_records_only=True) as store:
        assert store.get(RETRY_TOPIC, 0, offset=0, max_count=1)[0].body == b"needs V2"


def test_the_broker_serves_long_topics(brokers: Brokers) -> None:
    client = brokers.client(brokers.start(shards=1))
    client.create_topic(RETRY_TOPIC, queues=2)
    with client.producer() as producer:
        sent = [producer.send(RETRY_TOPIC, f"m{i}".encode(), keys=[f"k{i}"]) for i in range(6)]
        results = [future.result(timeout=30) for future in sent]
    got = []
    with client.consumer("LongConsumerGroup_" + "x" * 120, RETRY_TOPIC) as consumer:
        while len(got) < 6:
            got.extend(consumer.poll(timeout=5.0))
        consumer.commit()
    assert sorted(m.body for m in got) == [f"m{i}".encode() for i in range(6)]
    assert {m.topic for m in got} == {RETRY_TOPIC}
    found = client.query_by_key(RETRY_TOPIC, "k3")
    assert [m.body for m in found] == [b"m3"]
    assert {r.queue_id for r in results} == {0, 1}
