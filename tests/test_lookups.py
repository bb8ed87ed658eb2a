"""Reliability promises 8 and 9: key lookups equal a brute-force scan of the log (hash
collisions, other topics, shared, multi-key and unicode keys, time edges, max_count,
rolled and compacted index files, after a crash), msgIds round-trip, and time lookups
equal a linear scan."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import rmq
from rmq.errors import InvalidArgumentError, NotFoundError

SMALL_INDEX = {"index_slot_count": 13, "index_entry_count": 50}
# Java's String.hashCode gives "Aa" and "BB" the same hash, and so every string made of
# them in the same number of pairs: these four keys share one slot under any slot count.
COLLIDING = ["AaAa", "AaBB", "BBAa", "BBBB"]
UNICODE = ["ключ", "鍵", "😀", "é", "e\u0301"]


def all_messages(store: rmq.Store, topic: str) -> list[rmq.Message]:
    messages: list[rmq.Message] = []
    for queue_id in range(store.queue_count(topic)):
        offset, end = store.min_offset(topic, queue_id), store.max_offset(topic, queue_id)
        while offset < end:
            batch = store.get(topic, queue_id, offset, 256)
            messages.extend(batch)
            offset += len(batch)
    return messages


def brute_force(
    messages: list[rmq.Message],
    key: str,
    begin: int = 0,
    end: int | None = None,
    max_count: int = 64,
) -> list[int]:
    """Commit-log offsets a key query must return: exact matches, newest first."""
    upper = end if end is not None else 2**63 - 1
    matching = [
        message.commitlog_offset
        for message in messages
        if (key in message.keys or message.properties.get("UNIQ_KEY") == key)
        and begin <= message.store_timestamp <= upper
    ]
    return sorted(matching, reverse=True)[:max_count]


def queried(store: rmq.Store, topic: str, key: str, **bounds: int | None) -> list[int]:
    found = store.query_by_key(topic, key, **bounds)  # type: ignore[arg-type]
    assert all(message.topic == topic for message in found)
    return [message.commitlog_offset for message in found]


def fill(store: rmq.Store, generator: random.Random, count: int) -> None:
    for number in range(count):
        keys = [f"order-{generator.randrange(40)}"]
        if generator.random() < 0.3:
            keys.append(generator.choice(COLLIDING))
        if generator.random() < 0.2:
            keys.append(generator.choice(UNICODE))
        if number % 10 == 0:
            keys.append("everyone")
        properties = {"UNIQ_KEY": f"uniq-{number}"} if number % 4 == 0 else None
        topic = "Orders" if number % 5 else "Returns"
        store.put(topic, b"%d" % number, queue_id=number % 3, keys=keys, properties=properties)
        if number % 50 == 0:
            time.sleep(0.002)  # spread store times so time bounds split the data


def probe_keys() -> list[str]:
    return (
        [f"order-{n}" for n in range(41)]
        + COLLIDING
        + UNICODE
        + ["everyone", "uniq-0", "uniq-8", "Aa", "BB"]
    )


def check_against_scan(store: rmq.Store) -> None:
    for topic in ["Orders", "Returns"]:
        messages = all_messages(store, topic)
        for key in probe_keys():
            for max_count in [1, 5, 64, 10_000]:
                expected = brute_force(messages, key, max_count=max_count)
                assert queried(store, topic, key, max_count=max_count) == expected, (topic, key)


def test_key_queries_equal_a_scan_over_rolled_and_compacted_files(tmp_path: Path) -> None:
    generator = random.Random(3)
    with rmq.Store(tmp_path, **SMALL_INDEX) as store:
        store._pause_index_compaction(True)
        fill(store, generator, 600)
        files = store._index_files()
        assert len(files) > 20, "small index files roll"
        assert not any(compacted for *_, compacted in files)
        check_against_scan(store)

        store._pause_index_compaction(False)
        assert store._wait_index_compaction(60)
        files = store._index_files()
        assert all(compacted for _, _, full, compacted in files if full)
        assert files[-1][3] is False, "the file being written is never compacted"
        check_against_scan(store)
        assert store._verify_index()[1] == []


def test_colliding_keys_never_return_each_other(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, **SMALL_INDEX) as store:
        assert rmq.java_string_hash("Aa") == rmq.java_string_hash("BB")
        for number in range(30):
            store.put("T", b"a%d" % number, keys=["Aa"])
            store.put("T", b"b%d" % number, keys=["BB"])
            store.put("U", b"u%d" % number, keys=["Aa"])  # same key, other topic
        aa = store.query_by_key("T", "Aa", max_count=1000)
        bb = store.query_by_key("T", "BB", max_count=1000)
        assert [m.body for m in aa] == [b"a%d" % n for n in reversed(range(30))]
        assert [m.body for m in bb] == [b"b%d" % n for n in reversed(range(30))]
        assert {m.topic for m in store.query_by_key("U", "Aa", max_count=1000)} == {"U"}


def test_multi_key_and_unicode_keys(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        first = store.put("T", b"one", keys=["a", "ключ", "😀"])
        second = store.put("T", b"two", keys="a b", properties={"UNIQ_KEY": "ключ"})
        for key, expected in [
            ("a", [second, first]),
            ("b", [second]),
            ("ключ", [second, first]),
            ("😀", [first]),
            ("😀 ", []),
            ("A", []),
        ]:
            offsets = [r.commitlog_offset for r in expected]
            assert queried(store, "T", key) == offsets, key


def test_time_bounds_are_inclusive_and_exact(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, **SMALL_INDEX) as store:
        for number in range(80):
            store.put("T", b"%d" % number, keys=["k", f"n{number % 4}"])
            if number % 8 == 0:
                time.sleep(0.003)
        store._pause_index_compaction(False)
        assert store._wait_index_compaction(30)
        messages = all_messages(store, "T")
        times = sorted({m.store_timestamp for m in messages})
        edges = [times[0], times[len(times) // 3], times[-1]]
        for edge in edges:
            for begin, end in [(edge, edge), (edge + 1, None), (0, edge - 1), (edge - 1, edge + 1)]:
                for key in ["k", "n1"]:
                    for max_count in [1, 3, 100]:
                        expected = brute_force(messages, key, begin, end, max_count)
                        got = queried(store, "T", key, begin=begin, end=end, max_count=max_count)
                        assert got == expected, (key, begin, end, max_count)


def test_bad_queries_raise(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        store.put("T", b"x", keys=["k"])
        with pytest.raises(NotFoundError):
            store.query_by_key("Missing", "k")
        with pytest.raises(InvalidArgumentError):
            store.query_by_key("T", "")
        with pytest.raises(InvalidArgumentError):
            store.query_by_key("T", "k", max_count=0)
        with pytest.raises(InvalidArgumentError):
            store.query_by_key("T", "k", begin=10, end=5)
        assert store.query_by_key("T", "other") == []


def test_msg_id_round_trip(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        results = [store.put("T", b"%d" % n, queue_id=n % 2) for n in range(50)]
        for number, result in enumerate(results):
            message = store.get_by_msg_id(result.msg_id)
            assert (message.body, message.msg_id) == (b"%d" % number, result.msg_id)
            assert store.get_at(result.commitlog_offset).msg_id == result.msg_id
        wrong_offset = results[5].msg_id[:-4] + "FFFF"
        with pytest.raises(NotFoundError):
            store.get_by_msg_id(wrong_offset)
        with pytest.raises(InvalidArgumentError):
            store.get_by_msg_id("not-an-id")


def test_offset_for_time_equals_a_linear_scan(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        store.create_topic("T", 2)
        assert store.offset_for_time("T", 1, 0) == 0 == store.max_offset("T", 1)
        times = []
        for number in range(120):
            times.append(store.put("T", b"x").store_timestamp)
            if number % 15 == 0:
                time.sleep(0.002)

        def linear(timestamp: int) -> int:
            return next((i for i, t in enumerate(times) if t >= timestamp), len(times))

        probes = [0, -(2**63), 2**63 - 1] + [t + d for t in times for d in (-1, 0, 1)]
        for probe in probes:
            assert store.offset_for_time("T", 0, probe) == linear(probe), probe
        assert store.offset_for_time("T", 0, 0) == store.min_offset("T", 0)
        assert store.offset_for_time("T", 0, times[-1] + 1) == store.max_offset("T", 0)
        with pytest.raises(NotFoundError):
            store.offset_for_time("Missing", 0, 0)


WRITER = textwrap.dedent(
    """
    import sys
    import rmq

    store = rmq.Store(sys.argv[1], index_slot_count=13, index_entry_count=50,
                      commitlog_segment_size=64 * 1024)
    number = int(sys.argv[2])
    while True:
        keys = [f"order-{number % 40}", "AaAa" if number % 2 else "BBBB", f"n{number}"]
        store.put("Orders", b"x" * (number % 70), queue_id=number % 3, keys=keys,
                  properties={"UNIQ_KEY": f"uniq-{number}"})
        print(number, flush=True)
        number += 1
    """
)


def test_lookups_after_a_writer_is_killed(tmp_path: Path) -> None:
    generator = random.Random(11)
    acknowledged_total = 0
    for round_number in range(3):
        first = round_number * 100_000  # rounds never reuse a key
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), str(first)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        target = generator.randrange(150, 400)
        acknowledged: list[int] = []
        for line in writer.stdout:
            acknowledged.append(int(line))
            if len(acknowledged) >= target:
                break
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        acknowledged_total += len(acknowledged)

        with rmq.Store(tmp_path, **SMALL_INDEX, commitlog_segment_size=64 * 1024) as store:
            assert store.recovery_report.mode == "abnormal"
            messages = all_messages(store, "Orders")
            assert len(messages) >= acknowledged_total
            keys = [f"order-{n}" for n in range(40)] + ["AaAa", "BBBB"]
            keys += [f"uniq-{n}" for n in generator.sample(acknowledged, 20)]
            keys += [f"n{n}" for n in generator.sample(acknowledged, 20)]
            for key in keys:
                expected = brute_force(messages, key, max_count=10_000)
                assert queried(store, "Orders", key, max_count=10_000) == expected, key
            for number in acknowledged[-5:]:
                assert len(store.query_by_key("Orders", f"uniq-{number}")) == 1
            entries, differences = store._verify_index()
            assert differences == []
            assert entries >= 4 * acknowledged_total
