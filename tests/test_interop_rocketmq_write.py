"""Interoperability with real Apache RocketMQ stores: RocketMQ reads what rmq wrote (issue 9).

RocketMQ's own store library is the judge: rmq writes a store; the Java harness
(tests/interop/, the ``harness`` fixture) opens it with RocketMQ's DefaultMessageStore, lets
it recover, and must return exactly rmq's messages through its consume queues and through
its key index. The same again with RocketMQ 5's RocksDB consume queue
(``consume_queue_type="rocksdb"``, RocketMQ's ``storeType=defaultRocksDB``), read by
RocketMQ 5.3.3's RocksDBMessageStore. The other direction is test_interop_rocketmq_read.py.

The harness is built once per session with Maven (``mvn -B -q``, offline first, online when
the local repository lacks something). Nothing here is ever skipped: without Java or
Maven the tests fail. See docs/interop.md.
"""

from __future__ import annotations

import base64
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rmq

from tests.support.rocketmq_interop import (
    RMQ_CQ_ENTRIES_PER_FILE,
    RMQ_SEGMENT_SIZE,
    ROCKETMQ_RELEASES,
    Dump,
    Harness,
    QueueKey,
    indexed_keys,
    load_fixture_messages,
    read_queue,
    rmq_entry,
    rmq_fields,
    rocketmq_entry,
    rocketmq_fields,
)


def writable(properties: dict[str, str] | None) -> dict[str, str]:
    """rmq refuses a property holding a separator byte (RocketMQ stores it, and reads the
    value back only because it splits on the first 0x01); leave those out."""
    return {k: v for k, v in (properties or {}).items() if not {"\x01", "\x02"} & set(k + v)}


def put_fixture_messages(store: rmq.Store, long_topics: bool = False) -> None:
    """The fixtures' messages, through rmq's API (store host, sys flag, reconsume times
    and transaction offsets are the store's to set, so those inputs are not passed);
    with ``long_topics``, then the long retry/DLQ topics' messages too."""
    module = load_fixture_messages()
    specs = list(module.fixture_messages())
    if long_topics:
        specs += module.long_topic_messages(first_n=len(specs) + 1)
    for spec in specs:
        if "batch" in spec:
            shared = writable(spec.get("properties"))
            members = [
                rmq.Message(
                    base64.b64decode(member["body"]),
                    tags=member.get("tags"),
                    keys=member.get("keys"),
                    properties={**writable(member.get("properties")), **shared},
                    flag=member.get("flag", 0),
                )
                for member in spec["batch"]
            ]
            store.put_batch(spec["topic"], spec["queueId"], members, born_host=spec["bornHost"])
        else:
            store.put(
                spec["topic"],
                base64.b64decode(spec["body"]),
                queue_id=spec["queueId"],
                tags=spec.get("tags"),
                keys=spec.get("keys"),
                properties=writable(spec.get("properties")),
                flag=spec.get("flag", 0),
                born_timestamp=spec["bornTimestamp"],
                born_host=spec["bornHost"],
            )


def rmq_queues(store: rmq.Store) -> Iterator[QueueKey]:
    for topic in sorted(store.topics()):
        for queue_id in range(store.queue_count(topic)):
            yield topic, queue_id


@dataclass
class RmqView:
    """What rmq holds, read back through rmq's own API."""

    queues: dict[QueueKey, tuple[int, int]]  # (min offset, max offset)
    messages: dict[QueueKey, list[rmq.Message]]
    commitlog_max_offset: int

    @classmethod
    def of(cls, store: rmq.Store) -> RmqView:
        queues, messages = {}, {}
        for topic, queue_id in rmq_queues(store):
            queues[(topic, queue_id)] = (
                store.min_offset(topic, queue_id),
                store.max_offset(topic, queue_id),
            )
            messages[(topic, queue_id)] = read_queue(store, topic, queue_id)
        return cls(queues, messages, store.commitlog_max_offset())

    def keys(self, from_offset: int = 0) -> dict[tuple[str, str], set[int]]:
        """Every indexed key and the commit-log offsets of its messages (those at or past
        ``from_offset``)."""
        found: dict[tuple[str, str], set[int]] = {}
        for (topic, _), messages in self.messages.items():
            for message in messages:
                if message.commitlog_offset < from_offset:
                    continue
                for key in indexed_keys(message):
                    found.setdefault((topic, key), set()).add(message.commitlog_offset)
        return found

    def records_from(self, offset: int) -> int:
        return sum(m.commitlog_offset >= offset for ms in self.messages.values() for m in ms)


def write_fixture(
    written: Path, for_rocketmq: Path, case: str, long_topics: bool = False, **options: Any
) -> RmqView:
    """The fixture messages written by rmq into ``written`` and copied to ``for_rocketmq``
    after rmq closed the store (``case`` "closed") or while it still had it open
    ("copied-while-open", flushed first, as a backup tool would copy a live store)."""
    with rmq.Store(written, commitlog_segment_size=RMQ_SEGMENT_SIZE, **options) as store:
        put_fixture_messages(store, long_topics=long_topics)
        view = RmqView.of(store)
        if case == "copied-while-open":
            store.flush()
            shutil.copytree(written, for_rocketmq)
    if case == "closed":
        shutil.copytree(written, for_rocketmq)
    return view


# (case, store host): a store closed by rmq, and a copy taken while rmq still had it open.
WRITE_CASES = [("closed", "192.168.0.10:10911"), ("copied-while-open", "[fd00::10]:10911")]


@pytest.mark.parametrize("release", list(ROCKETMQ_RELEASES.values()))
@pytest.mark.parametrize(("case", "store_host"), WRITE_CASES, ids=[c for c, _ in WRITE_CASES])
def test_rocketmq_reads_exactly_what_rmq_wrote(
    harness: Harness, release: str, case: str, store_host: str, tmp_path: Path
) -> None:
    written, for_rocketmq = tmp_path / "rmq", tmp_path / "copy"
    view = write_fixture(
        written,
        for_rocketmq,
        case,
        consume_queue_entries_per_file=RMQ_CQ_ENTRIES_PER_FILE,
        store_host=store_host,
    )
    assert sum(len(m) for m in view.messages.values()) > 40

    dump = harness.dump(release, for_rocketmq)

    assert dump.consume_queue_type() == "file"
    if case == "closed":
        assert dump.store["dispatchedOnOpen"] == 0, f"RocketMQ {release} rebuilt rmq's queues"
    assert_rocketmq_reads_what_rmq_holds(dump, view, release)


def assert_rocketmq_reads_what_rmq_holds(
    dump: Dump, view: RmqView, release: str, indexed_from: int = 0
) -> None:
    """RocketMQ's dump of a store rmq wrote holds rmq's commit-log end, queues with their
    min and max offsets, consume-queue entries and messages field by field, and the same
    messages for every key through its index (for the records at or past
    ``indexed_from``: RocketMQ's index has none of those before)."""
    assert dump.problems == [], f"RocketMQ {release} could not read every queue"
    assert dump.store["maxPhyOffset"] == view.commitlog_max_offset
    assert set(dump.queues) == set(view.queues)
    for queue, (min_offset, max_offset) in sorted(view.queues.items()):
        where = f"RocketMQ {release}, {queue[0]}/{queue[1]}"
        assert dump.queues[queue]["minOffset"] == min_offset, where
        assert dump.queues[queue]["maxOffset"] == max_offset, where
        expected = [rmq_fields(m) for m in view.messages[queue]]
        actual = [rocketmq_fields(m) for m in dump.by_queue.get(queue, [])]
        assert actual == expected, where
        entries = [rocketmq_entry(e) for e in dump.entries.get(queue, [])]
        assert entries == [rmq_entry(m) for m in view.messages[queue]], where
    assert dump.index_only == []
    assert set(dump.keys) == set(view.keys()), "RocketMQ's dump queried other keys"
    indexed = view.keys(indexed_from)
    missing = {key for key in indexed if not dump.keys[key]}
    assert not missing, f"RocketMQ {release}'s key index finds nothing for {sorted(missing)[:5]}"
    found = {key: offsets for key, offsets in dump.keys.items() if offsets}
    assert found == indexed, f"RocketMQ {release}'s key index differs from rmq's messages"


@pytest.mark.parametrize(("case", "store_host"), WRITE_CASES, ids=[c for c, _ in WRITE_CASES])
def test_rocketmq_reads_exactly_what_rmq_wrote_in_rocksdb(
    harness: Harness, case: str, store_host: str, tmp_path: Path
) -> None:
    """rmq's RocksDB consume queue, judged by RocketMQ 5.3.3's RocksDBMessageStore
    (storeType=defaultRocksDB). Closed by rmq, RocketMQ must find every entry in rmq's
    database and dispatch nothing again.

    Copied while open (abort file present), RocketMQ's abnormal recovery of the RocksDB
    form starts at the last commit-log segment that begins at or below the offset
    CHECKPOINT_TOPIC records (CommitLog.isMappedFileMatchedRecover): it dispatches that
    segment's records again and uses rmq's entries for the rest. It also deletes every
    index file newer than the checkpoint's indexMsgTimestamp, which is 0 while no index
    file is full (IndexService.load), so its key index then holds the re-dispatched
    records only; the test holds RocketMQ to exactly that."""
    written, for_rocketmq = tmp_path / "rmq", tmp_path / "copy"
    release = ROCKETMQ_RELEASES["rocketmq5"]
    view = write_fixture(
        written, for_rocketmq, case, store_host=store_host, consume_queue_type="rocksdb"
    )
    records = sum(len(m) for m in view.messages.values())
    assert records > 40
    assert not any(p.is_dir() for p in (for_rocketmq / "consumequeue").iterdir())

    dump = harness.dump(release, for_rocketmq, "--store-type", "rocksdb")

    assert dump.store["messageStore"] == "RocksDBMessageStore"
    assert dump.store["consumeQueueStore"] == "RocksDBConsumeQueueStore"
    assert dump.table_files, "RocksDB listed no table file in rmq's consumequeue/"
    if case == "closed":
        assert dump.store["dispatchedOnOpen"] == 0, "RocketMQ rebuilt rmq's consume queues"
        assert_rocketmq_reads_what_rmq_holds(dump, view, release)
    else:
        # rmq's CHECKPOINT_TOPIC offset is the log's end; records never span segments.
        last_segment = (view.commitlog_max_offset - 1) // RMQ_SEGMENT_SIZE * RMQ_SEGMENT_SIZE
        redispatched = view.records_from(last_segment)
        assert 0 < redispatched < records
        assert dump.store["dispatchedOnOpen"] == redispatched
        assert_rocketmq_reads_what_rmq_holds(dump, view, release, indexed_from=last_segment)


def test_rocketmq_5_reads_the_v2_records_rmq_wrote_for_long_topics(
    harness: Harness, tmp_path: Path
) -> None:
    """Topics over 127 bytes: rmq writes V2 records, and RocketMQ 5 reads them."""
    written, for_rocketmq = tmp_path / "rmq", tmp_path / "copy"
    release = ROCKETMQ_RELEASES["rocketmq5"]
    view = write_fixture(
        written,
        for_rocketmq,
        "closed",
        long_topics=True,
        consume_queue_entries_per_file=RMQ_CQ_ENTRIES_PER_FILE,
    )
    long_topics = load_fixture_messages().LONG_TOPICS
    assert {topic for topic, _ in view.queues} >= set(long_topics)

    dump = harness.dump(release, for_rocketmq)

    assert dump.problems == [], f"RocketMQ {release} could not read every queue"
    assert set(dump.queues) == set(view.queues)
    for queue in sorted(view.queues):
        expected = [rmq_fields(m) for m in view.messages[queue]]
        actual = [rocketmq_fields(m) for m in dump.by_queue.get(queue, [])]
        assert actual == expected, f"RocketMQ {release}, {queue[0][:20]}…/{queue[1]}"
    assert dump.keys == view.keys()
