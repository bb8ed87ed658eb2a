"""Interoperability with real Apache RocketMQ stores: rmq reads what RocketMQ wrote (issue 9).

RocketMQ's own reading is the judge, not rmq's reading of the format: rmq reads the
fixtures under tests/fixtures/rocketmq/, which RocketMQ 4.9.x and 5.x wrote (clean
shutdown, and halted while running so the ``abort`` file is present), and must find exactly
the messages RocketMQ itself reads back from them (the ``.jsonl`` beside each tarball),
field by field; the same for RocketMQ 5's RocksDB consume queue (LZ4 and ZSTD table files
of RocketMQ's RocksDB 8.4, read by the system's RocksDB), for ``rmq inspect``, for the
broker and for the Spark source. The other direction is test_interop_rocketmq_write.py.

Nothing here is ever skipped: without Java or Maven the tests fail. See docs/interop.md.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rmq

from tests.support.rocketmq_interop import (
    FIXTURES,
    FIXTURES_DIR,
    LONG_TOPICS_FIXTURE,
    ROCKETMQ_RELEASES,
    ROCKSDB_FIXTURE,
    Dump,
    Harness,
    extract_fixture,
    file_digests,
    load_fixture_messages,
    read_queue,
    rmq_entry,
    rmq_fields,
    rocketmq_entry,
    rocketmq_fields,
)


def test_every_fixture_is_committed() -> None:
    for name in FIXTURES:
        assert (FIXTURES_DIR / f"{name}.tar.gz").is_file(), (
            f"run scripts/regen-rocketmq-fixtures ({name})"
        )
        assert (FIXTURES_DIR / f"{name}.jsonl").is_file(), (
            f"run scripts/regen-rocketmq-fixtures ({name})"
        )


@pytest.mark.parametrize("name", FIXTURES)
def test_rmq_reads_exactly_what_rocketmq_wrote(name: str, tmp_path: Path) -> None:
    dump = Dump.parse((FIXTURES_DIR / f"{name}.jsonl").read_text(encoding="utf-8"))
    assert dump.problems == [], "RocketMQ itself could not read its fixture"
    assert sum(len(messages) for messages in dump.by_queue.values()) > 40
    root = extract_fixture(name, tmp_path)
    assert (root / "abort").exists() == name.endswith("-abort")
    before = file_digests(root)

    with open_fixture(root, dump, read_only=True) as store:
        assert store.consume_queue_type == dump.consume_queue_type()
        assert_rmq_reads_what_rocketmq_read(store, dump)

    assert file_digests(root) == before, "read_only=True changed files"


def open_fixture(root: Path, dump: Dump, read_only: bool) -> rmq.Store:
    """A fixture opened with the sizes it was written with (from the dump's store line);
    its consume-queue form is left for rmq to tell from the files."""
    return rmq.Store(
        root,
        read_only=read_only,
        commitlog_segment_size=dump.store["commitlogSegmentSize"],
        consume_queue_entries_per_file=dump.store["cqEntriesPerFile"],
    )


def assert_rmq_reads_what_rocketmq_read(store: rmq.Store, dump: Dump) -> None:
    """rmq finds the topics, offsets, queues, messages and keys RocketMQ found, field by
    field, and (dumps that list them) the consume-queue entries behind the messages."""
    assert set(store.topics()) == dump.topics()
    assert store.commitlog_min_offset() == dump.store["minPhyOffset"]
    assert store.commitlog_max_offset() == dump.store["maxPhyOffset"]
    for (topic, queue_id), queue in sorted(dump.queues.items()):
        where = f"{topic}/{queue_id}"
        assert store.min_offset(topic, queue_id) == queue["minOffset"], where
        assert store.max_offset(topic, queue_id) == queue["maxOffset"], where
        messages = read_queue(store, topic, queue_id)
        expected = [rocketmq_fields(m) for m in dump.by_queue.get((topic, queue_id), [])]
        assert [rmq_fields(m) for m in messages] == expected, where
        if dump.entries:
            entries = [rocketmq_entry(e) for e in dump.entries.get((topic, queue_id), [])]
            assert [rmq_entry(m) for m in messages] == entries, where
    # Records no queue holds (a prepared transaction half) are still readable by offset.
    assert dump.index_only, "the fixtures hold a prepared half found only by key"
    for message in dump.index_only:
        actual_one = rmq_fields(store.get_at(message["commitLogOffset"]))
        assert actual_one == rocketmq_fields(message)
    # Key lookups through RocketMQ's own index files find what RocketMQ's queryMessage
    # found (rmq also drops hash collisions, which these small fixtures do not have).
    assert dump.keys, "the fixtures index keys"
    for (topic, key), offsets in sorted(dump.keys.items()):
        found = {m.commitlog_offset for m in store.query_by_key(topic, key, max_count=64)}
        assert found == offsets, f"{topic}#{key}"


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only", "writable"])
def test_rmq_reads_rocketmqs_rocksdb_consume_queue(
    harness: Harness, read_only: bool, tmp_path: Path
) -> None:
    """RocketMQ 5.3.3's RocksDB consume queue, written by the RocksDB 8.4 inside its
    rocketmq-rocksdb jar (LZ4 level-0 and ZSTD bottommost table files), read by rmq
    through the system's RocksDB, read-only and writable. Read-only, rmq must use
    RocketMQ's entries as they are; writable, rmq recovers (re-dispatching the last
    segment, as for any RocketMQ store) and RocketMQ must then read the database rmq wrote
    into exactly as before."""
    dump = Dump.parse((FIXTURES_DIR / f"{ROCKSDB_FIXTURE}.jsonl").read_text(encoding="utf-8"))
    assert dump.problems == [], "RocketMQ itself could not read its fixture"
    assert dump.store["messageStore"] == "RocksDBMessageStore"
    assert dump.store["consumeQueueStore"] == "RocksDBConsumeQueueStore"
    assert dump.store["dispatchedOnOpen"] == 0, "RocketMQ rebuilt its own queues"
    compressions = {f["compression"] for f in dump.table_files if f["columnFamily"] == "default"}
    assert {"LZ4", "ZSTD"} <= compressions, "the fixture holds both kinds of table file"
    entries = sum(len(e) for e in dump.entries.values())
    assert entries == sum(len(m) for m in dump.by_queue.values()) > 40
    root = extract_fixture(ROCKSDB_FIXTURE, tmp_path / "fixture")
    assert not any(p.is_dir() for p in (root / "consumequeue").iterdir())
    before = file_digests(root)

    with open_fixture(root, dump, read_only=read_only) as store:
        assert store.consume_queue_type == "rocksdb"
        if read_only:
            assert store.recovery_report.records_redispatched == 0
        assert_rmq_reads_what_rocketmq_read(store, dump)

    if read_only:
        assert file_digests(root) == before, "read_only=True changed files"
        return
    with open_fixture(root, dump, read_only=True) as store:  # what rmq left, reread
        assert_rmq_reads_what_rocketmq_read(store, dump)
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    again = harness.dump(ROCKETMQ_RELEASES["rocketmq5"], copy, "--store-type", "rocksdb")
    assert again.problems == []
    assert again.store["dispatchedOnOpen"] == 0, "RocketMQ rebuilt the queues rmq left"
    assert again.queues == dump.queues
    assert again.entries == dump.entries
    assert again.by_queue == dump.by_queue


INSPECT_FIELDS = (
    "queue_offset",
    "commitlog_offset",
    "store_size",
    "msg_id",
    "tags",
    "keys",
    "properties",
    "store_timestamp",
    "body_bytes",
)


@pytest.mark.parametrize("name", FIXTURES)
def test_rmq_inspect_shows_what_rocketmq_wrote(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``rmq inspect --json`` on a RocketMQ store, with no sizes given: it must take them
    from the files and list every queue and record RocketMQ reads."""
    from rmq.cli import main

    dump = Dump.parse((FIXTURES_DIR / f"{name}.jsonl").read_text(encoding="utf-8"))
    root = extract_fixture(name, tmp_path)
    assert main(["inspect", "--json", "--records", "1000", str(root)]) == 0
    report = json.loads(capsys.readouterr().out)

    assert report["abort"] == dump.store["abortFilePresent"]
    assert report["commitlog_max_offset"] == dump.store["maxPhyOffset"]
    listed = {
        (topic, queue["queue_id"]): queue
        for topic, queues in report["topics"].items()
        for queue in queues
    }
    assert set(listed) == set(dump.queues)
    for key, queue in sorted(dump.queues.items()):
        shown = listed[key]
        assert (shown["min_offset"], shown["max_offset"]) == (
            queue["minOffset"],
            queue["maxOffset"],
        ), key
        expected = [
            {
                "queue_offset": m["queueOffset"],
                "commitlog_offset": m["commitLogOffset"],
                "store_size": m["storeSize"],
                "msg_id": m["msgId"],
                "tags": m["tags"],
                "keys": m["keys"],
                "properties": rocketmq_fields(m)["properties"],
                "store_timestamp": m["storeTimestamp"],
                "body_bytes": len(base64.b64decode(m["body"])),
            }
            for m in dump.by_queue.get(key, [])
        ]
        actual = [{field: record[field] for field in INSPECT_FIELDS} for record in shown["records"]]
        assert actual == expected, key


# --- rmq wrote it, RocketMQ reads it -----------------------------------------------------


def test_the_broker_serves_the_long_topics_rocketmq_wrote(tmp_path: Path) -> None:
    """A RocketMQ 5 store as a broker's shard: its V2 records reach a consumer group."""
    from rmq.client import Client
    from rmq.cluster.local import LocalBroker

    dump = Dump.parse((FIXTURES_DIR / f"{LONG_TOPICS_FIXTURE}.jsonl").read_text("utf-8"))
    data = tmp_path / "data"
    data.mkdir()
    extract_fixture(LONG_TOPICS_FIXTURE, tmp_path).rename(data / "shard-0")
    queue_counts: dict[str, int] = {}
    for topic, queue_id in dump.queues:
        queue_counts[topic] = max(queue_counts.get(topic, 0), queue_id + 1)
    routes = {topic: [0] * count for topic, count in queue_counts.items()}
    (data / "routes.json").write_text(json.dumps({"format": 1, "topics": routes}))
    long_topics = load_fixture_messages().LONG_TOPICS

    with LocalBroker(data, shards=1) as broker, Client(broker.endpoint) as client:
        for topic in long_topics:
            want = [m for (t, _), ms in sorted(dump.by_queue.items()) if t == topic for m in ms]
            assert want, topic
            got = []
            with client.consumer("reader", topic) as consumer:
                while len(got) < len(want):
                    got.extend(consumer.poll(timeout=5.0))
            got.sort(key=lambda m: (m.queue_id, m.queue_offset))
            assert [(m.queue_id, m.queue_offset, m.body, m.topic) for m in got] == [
                (m["queueId"], m["queueOffset"], base64.b64decode(m["body"]), topic) for m in want
            ]
            for (t, key), offsets in dump.keys.items():
                if t == topic:
                    found = client.query_by_key(topic, key, max_count=64)
                    assert {m.commitlog_offset for m in found} == offsets, key


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from tests.support.spark_session import local_spark

    with local_spark("rmq-interop-tests") as session:
        yield session


@pytest.mark.parametrize("name", FIXTURES)
def test_the_spark_source_reads_what_rocketmq_wrote(name: str, tmp_path: Path, spark: Any) -> None:
    dump = Dump.parse((FIXTURES_DIR / f"{name}.jsonl").read_text(encoding="utf-8"))
    root = extract_fixture(name, tmp_path)
    before = file_digests(root)
    expected = {
        m["commitLogOffset"]: rocketmq_fields(m)
        for m in [*(m for ms in dump.by_queue.values() for m in ms), *dump.index_only]
    }
    rows = spark.read.format("rmq").load(str(root)).collect()
    assert {row["commitlog_offset"] for row in rows} == set(expected)
    for row in rows:
        want = expected[row["commitlog_offset"]]
        got = {
            "topic": row["topic"],
            "queue_id": row["queue_id"],
            "queue_offset": row["queue_offset"],
            "body": bytes(row["body"]),
            "tags": row["tags"],
            "keys": list(row["keys"]),
            "properties": dict(row["properties"]),
            "born_host": row["born_host"],
            "store_host": row["store_host"],
            "flag": row["flag"],
            "sys_flag": row["sys_flag"],
        }
        assert got == {k: want[k] for k in got}, row["commitlog_offset"]
        assert row["body_crc_ok"] is True
    assert file_digests(root) == before, "the Spark source changed files"
