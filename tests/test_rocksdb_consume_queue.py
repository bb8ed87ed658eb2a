"""The RocksDB consume queue (issue 18): a store created with
``consume_queue_type="rocksdb"`` keeps its consume queues in RocketMQ 5's RocksDB layout
under ``consumequeue/`` and behaves like the file form through the whole API; the form is
recorded, so a reopen cannot switch it; a damaged or missing database gives a clear error
and ``rebuild_consume_queues`` (``rmq rebuild``) recreates it from the commit log.
RocketMQ's own reading of these files is in test_interop_rocketmq_read.py and
test_interop_rocketmq_write.py; SIGKILL crash loops in test_durability_crash_loop.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import rmq
from rmq.errors import CorruptRecordError, InvalidArgumentError

OPTIONS = {"commitlog_segment_size": 64 * 1024}


def fill(store: rmq.Store, count: int = 300, queues: int = 4) -> list[tuple[int, int, bytes]]:
    written = []
    for i in range(count):
        body = f"message {i} ".encode() * (1 + i % 7)
        result = store.put(
            "Orders", body, queue_id=i % queues, tags=f"t{i % 3}", keys=[f"k{i}", "all"]
        )
        written.append((i % queues, result.queue_offset, body))
    return written


def read_all(store: rmq.Store, topic: str = "Orders") -> dict[int, list[bytes]]:
    return {
        queue_id: [
            m.body
            for m in store.get(
                topic,
                queue_id,
                store.min_offset(topic, queue_id),
                max(1, store.max_offset(topic, queue_id) - store.min_offset(topic, queue_id)),
            )
        ]
        if store.max_offset(topic, queue_id) > store.min_offset(topic, queue_id)
        else []
        for queue_id in range(store.queue_count(topic))
    }


def test_the_rocksdb_form_serves_the_same_reads_as_the_file_form(tmp_path: Path) -> None:
    views = {}
    for form in ("file", "rocksdb"):
        path = tmp_path / form
        with rmq.Store(path, consume_queue_type=form, **OPTIONS) as store:
            fill(store)
            assert store.consume_queue_type == form
        with rmq.Store(path, **OPTIONS) as store:  # reopened as it was created
            assert store.consume_queue_type == form
            pulled = store.pull("Orders", 1, 0, max_count=10, tags=["t2"])
            views[form] = (
                read_all(store),
                [(m.queue_offset, m.body) for m in pulled.messages],
                pulled.next_offset,
                sorted(
                    m.commitlog_offset for m in store.query_by_key("Orders", "all", max_count=500)
                ),
                store.offset_for_time("Orders", 2, 0),
                store.verify().clean,
            )
    assert views["rocksdb"] == views["file"]
    assert views["rocksdb"][-1] is True
    assert sorted(p.name for p in (tmp_path / "rocksdb" / "consumequeue").iterdir())[0:1] != [
        "Orders"
    ], "the RocksDB form keeps no per-topic directories"
    assert (tmp_path / "rocksdb" / "consumequeue" / "CURRENT").is_file()


def test_the_form_is_recorded_and_a_reopen_cannot_switch_it(tmp_path: Path) -> None:
    rocks, files = tmp_path / "rocks", tmp_path / "files"
    with rmq.Store(rocks, consume_queue_type="rocksdb", **OPTIONS) as store:
        fill(store, 10)
    with rmq.Store(files, **OPTIONS) as store:
        fill(store, 10)
    with pytest.raises(InvalidArgumentError, match='created with consume_queue_type="rocksdb"'):
        rmq.Store(rocks, consume_queue_type="file", **OPTIONS)
    with pytest.raises(InvalidArgumentError, match='created with consume_queue_type="file"'):
        rmq.Store(files, consume_queue_type="rocksdb", **OPTIONS)
    with pytest.raises(InvalidArgumentError, match="neither"):
        rmq.Store(tmp_path / "new", consume_queue_type="lsm")
    assert '"rocksdb"' in (rocks / "config" / "storeConfig.json").read_text()


def test_deleting_a_topic_and_retention_reach_the_database(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, consume_queue_type="rocksdb", **OPTIONS) as store:
        fill(store, 400)
        before = store.commitlog_min_offset()
        report = store.run_retention(now_ms=2**62)
        assert report.deleted, "old segments expire"
        assert store.commitlog_min_offset() > before
        for queue_id in range(4):
            low = store.min_offset("Orders", queue_id)
            assert low > 0
            (first,) = store.get("Orders", queue_id, low, 1)
            assert first.commitlog_offset >= store.commitlog_min_offset()
            with pytest.raises(rmq.errors.OffsetOutOfRangeError):
                store.get("Orders", queue_id, low - 1, 1)
        assert store.verify().clean
        store.put("Other", b"x")
        store.delete_topic("Other")
        assert "Other" not in store.topics()
        assert store.get("Orders", 0, store.min_offset("Orders", 0), 1)
        minimums = [store.min_offset("Orders", queue_id) for queue_id in range(4)]
    with rmq.Store(tmp_path, **OPTIONS) as store:  # the new minimums survive a reopen
        assert [store.min_offset("Orders", queue_id) for queue_id in range(4)] == minimums


def test_a_read_only_store_reads_the_database_beside_a_writer(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, consume_queue_type="rocksdb", **OPTIONS) as writer:
        written = fill(writer, 50)
        writer.flush()
        with rmq.Store(tmp_path, read_only=True) as reader:
            assert reader.consume_queue_type == "rocksdb"
            got = read_all(reader)
    for queue_id, offset, body in written:
        assert got[queue_id][offset] == body


def test_a_damaged_or_missing_database_is_named_and_rebuild_recreates_it(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, consume_queue_type="rocksdb", **OPTIONS) as store:
        fill(store, 120)
        expected = read_all(store)
    database = tmp_path / "consumequeue"
    current = database / "CURRENT"
    current.write_text("MANIFEST-999999\n")
    with pytest.raises(CorruptRecordError, match="rebuild_consume_queues") as raised:
        rmq.Store(tmp_path, **OPTIONS)
    assert str(database) in str(raised.value)
    shutil.rmtree(database)
    with pytest.raises(CorruptRecordError, match="consume queue is missing"):
        rmq.Store(tmp_path, **OPTIONS)
    done = subprocess.run(
        [sys.executable, "-m", "rmq", "rebuild", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "rebuilt rocksdb consume queues of 1 topics" in done.stdout
    with rmq.Store(tmp_path, **OPTIONS) as store:
        assert read_all(store) == expected
        assert store.verify().clean


def test_rmq_inspect_names_the_form(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, consume_queue_type="rocksdb", **OPTIONS) as store:
        fill(store, 5)
    done = subprocess.run(
        [sys.executable, "-m", "rmq", "inspect", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "consume queues: rocksdb" in done.stdout
    assert "Orders" in done.stdout


def test_rmq_serve_with_rocksdb_consume_queues(tmp_path: Path) -> None:
    from rmq.client import Client
    from rmq.cluster.local import LocalBroker

    data = tmp_path / "data"
    broker = LocalBroker(data, shards=2, args=["--consume-queue", "rocksdb"])
    with broker, Client(broker.endpoint) as client:
        client.create_topic("Orders", queues=4)
        with client.producer() as producer:
            sent = [producer.send("Orders", f"m{i}".encode()) for i in range(200)]
            for future in sent:
                future.result(timeout=30)
        got = []
        with client.consumer("g", "Orders") as consumer:
            while len(got) < 200:
                got += [m.body for m in consumer.poll(timeout=5.0)]
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(200))
    for shard in ("shard-0", "shard-1"):
        with rmq.Store(data / shard, read_only=True) as store:
            assert store.consume_queue_type == "rocksdb"


def test_a_message_is_readable_as_soon_as_its_put_returns(tmp_path: Path) -> None:
    """The RocksDB form writes its batches on a thread of its own; a reader must still see
    every acknowledged message at once, and never an offset whose entry is missing."""
    import threading

    store = rmq.Store(str(tmp_path / "s"), consume_queue_type="rocksdb", **OPTIONS)
    stop = threading.Event()
    seen_gaps: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            for queue_id in range(2):
                end = store.max_offset("Orders", queue_id)
                if end > 0 and not store.get("Orders", queue_id, end - 1, 1):
                    seen_gaps.append(f"queue {queue_id} offset {end - 1}")

    store.create_topic("Orders", 2)
    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for batch in range(300):
            queue_id = batch % 2
            results = store.put_batch(
                "Orders", queue_id, [rmq.Message(f"{batch}/{i}".encode()) for i in range(16)]
            )
            last = results[-1].queue_offset
            got = store.get("Orders", queue_id, last, 1)
            assert [m.body for m in got] == [f"{batch}/15".encode()]
            assert store.max_offset("Orders", queue_id) == last + 1
    finally:
        stop.set()
        thread.join()
    assert seen_gaps == []
    store.close()
    reopened = rmq.Store(str(tmp_path / "s"), consume_queue_type="rocksdb", **OPTIONS)
    assert [reopened.max_offset("Orders", q) for q in range(2)] == [150 * 16, 150 * 16]
    reopened.close()
