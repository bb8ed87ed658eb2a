"""Every field of a message survives put/get, close and reopen, and segment rolls."""

from __future__ import annotations

from pathlib import Path

import pytest
import rmq
from rmq.errors import OffsetOutOfRangeError

SMALL = {"commitlog_segment_size": 4096, "consume_queue_entries_per_file": 16}


def test_every_field_round_trips_through_put_get_and_reopen(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, store_host="192.168.0.10:10911", **SMALL) as store:
        result = store.put(
            "TopicTest",
            b"Hello RocketMQ",
            queue_id=3,
            tags="TagA",
            keys=["k1", "k2"],
            properties={"WAIT": "true", "ünï": "çødé"},
            flag=7,
            born_timestamp=1_700_000_000_000,
            born_host="[2001:db8::1]:50000",
        )
        assert result.queue_offset == 0
        assert result.msg_id == f"C0A8000A00002A9F{result.commitlog_offset:016X}"
        (live,) = store.get("TopicTest", 3, 0)
    with rmq.Store(tmp_path, **SMALL) as store:
        (reread,) = store.get("TopicTest", 3, 0)
    for message in (live, reread):
        assert message.topic == "TopicTest"
        assert message.queue_id == 3
        assert message.queue_offset == 0
        assert message.commitlog_offset == result.commitlog_offset
        assert message.store_size == result.store_size
        assert message.body == b"Hello RocketMQ"
        assert message.tags == "TagA"
        assert message.keys == ["k1", "k2"]
        assert message.properties == {"WAIT": "true", "ünï": "çødé"}
        assert message.flag == 7
        assert message.born_timestamp == 1_700_000_000_000
        assert message.store_timestamp == result.store_timestamp
        assert message.born_host == "[2001:db8::1]:50000"
        assert message.store_host == "192.168.0.10:10911"
        assert message.msg_id == result.msg_id
        assert message.sys_flag == 0x10  # born host is IPv6
        assert message.reconsume_times == 0


def test_read_your_writes_and_queue_offsets_are_dense(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, **SMALL) as store:
        for index in range(50):
            result = store.put("T", f"m{index}".encode(), queue_id=index % 2)
            assert result.queue_offset == index // 2
            (message,) = store.get("T", index % 2, result.queue_offset, 1)
            assert message.body == f"m{index}".encode()
        assert store.min_offset("T", 0) == 0
        assert store.max_offset("T", 0) == 25
        assert store.topics() == ["T"]


def test_messages_cross_many_segment_rolls_and_reopen(tmp_path: Path) -> None:
    bodies = [bytes([index % 256]) * (index * 13 % 700) for index in range(300)]
    with rmq.Store(tmp_path, **SMALL) as store:
        for start in range(0, 300, 4):
            store.put_batch("Roll", 0, bodies[start : start + 4])
    segments = sorted((tmp_path / "commitlog").iterdir())
    assert len(segments) > 10
    assert all(path.stat().st_size == 4096 for path in segments)
    with rmq.Store(tmp_path) as store:
        read = []
        offset = 0
        while offset < store.max_offset("Roll", 0):
            batch = store.get("Roll", 0, offset, 64)
            read.extend(message.body for message in batch)
            offset = batch[-1].queue_offset + 1
    assert read == bodies


def test_put_batch_accepts_bodies_and_messages(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        results = store.put_batch(
            "Batch",
            2,
            [b"plain", rmq.Message(b"rich", tags="T1", keys="a b", properties={"p": "v"}, flag=3)],
        )
        assert [r.queue_offset for r in results] == [0, 1]
        plain, rich = store.get("Batch", 2, 0)
        assert (plain.body, plain.tags, plain.keys) == (b"plain", None, [])
        assert (rich.body, rich.tags, rich.keys, rich.properties, rich.flag) == (
            b"rich",
            "T1",
            ["a", "b"],
            {"p": "v"},
            3,
        )


def test_put_batch_takes_tags_and_keys_as_columns(tmp_path: Path) -> None:
    bodies = [b"m0", b"m1", b"m2"]
    with rmq.Store(tmp_path) as store:
        store.put_batch("Cols", 0, bodies, tags=["TagA", None, "TagB"], keys=["k0", None, "x y"])
        store.put_batch("Cols", 1, bodies, tags="Same", keys=[["a"], ("b", "c"), []])
        by_columns = store.get("Cols", 0, 0) + store.get("Cols", 1, 0)
        by_key = store.query_by_key("Cols", "y")
    fields = [(m.queue_id, m.body, m.tags, m.keys) for m in by_columns]
    assert fields == [
        (0, b"m0", "TagA", ["k0"]),
        (0, b"m1", None, []),
        (0, b"m2", "TagB", ["x", "y"]),
        (1, b"m0", "Same", ["a"]),
        (1, b"m1", "Same", ["b", "c"]),
        (1, b"m2", "Same", []),
    ]
    assert [m.body for m in by_key] == [b"m2"]
    # The same messages built one by one are stored byte for byte alike.
    with rmq.Store(tmp_path / "one-by-one") as store:
        store.put_batch(
            "Cols",
            0,
            [
                rmq.Message(b"m0", tags="TagA", keys="k0"),
                b"m1",
                rmq.Message(b"m2", tags="TagB", keys=["x", "y"]),
            ],
        )
        one_by_one = store.get("Cols", 0, 0)
    assert [(m.tags, m.keys, m.store_size) for m in one_by_one] == [
        (m.tags, m.keys, m.store_size) for m in by_columns[:3]
    ]


def test_tag_filtering_skips_other_tags(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        for index in range(30):
            store.put("Tags", str(index).encode(), tags=["TagA", "TagB", "TagC"][index % 3])
        only_a = store.get("Tags", 0, 0, 100, tags="TagA")
        assert [m.body for m in only_a] == [str(i).encode() for i in range(0, 30, 3)]
        a_or_c = store.pull("Tags", 0, 0, 100, tags="TagA || TagC")
        assert len(a_or_c.messages) == 20
        assert a_or_c.next_offset == 30
        assert len(store.get("Tags", 0, 0, 100, tags="*")) == 30


def test_offsets_outside_the_queue_raise_with_bounds(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        for _ in range(5):
            store.put("T", b"x")
        assert store.get("T", 0, 5) == []
        with pytest.raises(OffsetOutOfRangeError) as raised:
            store.get("T", 0, 6)
        assert (raised.value.min_offset, raised.value.max_offset) == (0, 5)


def test_empty_and_maximum_bodies(tmp_path: Path) -> None:
    big = bytes(range(256)) * (4 * 1024 * 1024 // 256)
    with rmq.Store(tmp_path, commitlog_segment_size=8 << 20) as store:
        store.put("Sizes", b"")
        store.put("Sizes", big)
        empty, largest = store.get("Sizes", 0, 0)
        assert empty.body == b""
        assert largest.body == big


def test_config_files_record_topics_and_consumer_offsets(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        store.create_topic("Orders", 4)
        store.put("Auto", b"x", queue_id=11)
        store.commit_offset("g1", "Orders", 2, 17)
        assert store.queue_count("Orders") == 4
        assert store.queue_count("Auto") == 12
    with rmq.Store(tmp_path) as store:
        assert store.committed_offset("g1", "Orders", 2) == 17
        assert store.committed_offset("g1", "Orders", 3) is None
        assert store.topics() == ["Auto", "Orders"]
    topics = (tmp_path / "config" / "topics.json").read_text()
    assert '"readQueueNums": 4' in topics
    assert '"Orders@g1"' in (tmp_path / "config" / "consumerOffset.json").read_text()


def test_reads_rocketmq_style_unquoted_offset_keys(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "consumerOffset.json").write_text(
        '{\n\t"offsetTable":{\n\t\t"T@g":{0:5,1:9}\n\t}\n}'
    )
    with rmq.Store(tmp_path) as store:
        assert store.committed_offset("g", "T", 1) == 9


def test_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = rmq.Store(tmp_path)
    store.close()
    store.close()
    assert store.closed
    with pytest.raises(rmq.errors.StoreClosedError):
        store.put("T", b"x")


def test_java_hash_and_crc_vectors() -> None:
    assert rmq.java_string_hash("TagA") == 2598919
    assert rmq.java_string_hash("Aa") == rmq.java_string_hash("BB")
    assert rmq.body_crc(b"123456789") == 0x4BF43926
    assert rmq.body_crc(b"Hello RocketMQ") == 1774740973


@pytest.mark.parametrize("keys", [[["a", 5]], [("a", b"b")], [7], [["a\udc80"]]])
def test_put_batch_refuses_a_keys_column_entry_that_is_not_strings(
    tmp_path: Path, keys: list[object]
) -> None:
    with rmq.Store(tmp_path) as store:
        with pytest.raises(rmq.errors.InvalidArgumentError, match="sequence of strings"):
            store.put_batch("Cols", 0, [b"m"], keys=keys)
        assert store.put_batch("Cols", 0, [b"m"], keys=[["a", "b"]])[0].queue_offset == 0
