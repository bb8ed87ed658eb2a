"""Interoperability with real Apache RocketMQ stores, both ways (issue 9).

RocketMQ's own store library is the judge, not rmq's reading of the format:

* rmq reads the fixtures under tests/fixtures/rocketmq/, which RocketMQ 4.9.x and 5.x wrote
  (clean shutdown, and halted while running so the ``abort`` file is present), and must find
  exactly the messages RocketMQ itself reads back from them (the ``.jsonl`` beside each
  tarball), field by field.
* rmq writes a store; the Java harness (tests/interop/) opens it with RocketMQ's
  DefaultMessageStore, lets it recover, and must return exactly rmq's messages through its
  consume queues and through its key index.
* Both again with RocketMQ 5's RocksDB consume queue (``consume_queue_type="rocksdb"``,
  RocketMQ's ``storeType=defaultRocksDB``): RocketMQ 5.3.3's RocksDBMessageStore reads the
  database rmq wrote, and rmq reads the one RocketMQ wrote (LZ4 and ZSTD table files of
  RocketMQ's RocksDB 8.4, read by the system's RocksDB).

The harness is built once per session with Maven (``mvn -B -q``, offline first, online when
the local repository lacks something). Nothing here is ever skipped: without Java or
Maven the tests fail. See docs/interop.md.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import ipaddress
import json
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import rmq

ROOT = Path(__file__).resolve().parent.parent
HARNESS_DIR = ROOT / "tests" / "interop"
FIXTURES_DIR = ROOT / "tests" / "fixtures" / "rocketmq"

# Maven profile -> RocketMQ release; the defaults of scripts/regen-rocketmq-fixtures.
ROCKETMQ_RELEASES = {"rocketmq4": "4.9.8", "rocketmq5": "5.3.3"}
# RocketMQ 5 also wrote retry and DLQ topics over 127 bytes, as V2 records.
LONG_TOPICS_FIXTURE = f"rocketmq-{ROCKETMQ_RELEASES['rocketmq5']}-longtopics-clean"
# RocketMQ 5 with its RocksDB consume queue (storeType=defaultRocksDB).
ROCKSDB_FIXTURE = f"rocketmq-{ROCKETMQ_RELEASES['rocketmq5']}-rocksdb-clean"
FIXTURES = [
    f"rocketmq-{version}-{mode}"
    for version in ROCKETMQ_RELEASES.values()
    for mode in ("clean", "abort")
] + [LONG_TOPICS_FIXTURE, ROCKSDB_FIXTURE]
# RocketMQ's storeType -> rmq's consume_queue_type.
CONSUME_QUEUE_TYPES = {"default": "file", "defaultRocksDB": "rocksdb"}

# rmq's stores for RocketMQ use the fixtures' small sizes, so every kind of file rolls.
RMQ_SEGMENT_SIZE = 8192
RMQ_CQ_ENTRIES_PER_FILE = 4

MAVEN_TIMEOUT_S = 540
HARNESS_TIMEOUT_S = 180
JAVA_OPTIONS = ["-Duser.timezone=UTC", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


# --- the Java harness --------------------------------------------------------------------


@dataclass(frozen=True)
class Harness:
    java: str
    jars: dict[str, Path]  # RocketMQ release -> runnable jar

    def dump(self, release: str, store_dir: Path, *extra: str) -> Dump:
        """RocketMQ's view of ``store_dir`` (recovered in place: pass a copy)."""
        command = [self.java, *JAVA_OPTIONS, "-jar", str(self.jars[release])]
        command += ["dump", str(store_dir), *extra]
        done = subprocess.run(command, capture_output=True, timeout=HARNESS_TIMEOUT_S)
        if done.returncode != 0:
            pytest.fail(
                f"RocketMQ {release} could not open {store_dir} (exit {done.returncode}):\n"
                + done.stderr.decode(errors="replace")[-4000:]
            )
        return Dump.parse(done.stdout.decode())


def _maven(mvn: str, profile: str, release: str, offline: bool) -> subprocess.CompletedProcess[str]:
    command = [mvn, "-B", "-q", "-Dstyle.color=never", "-P", profile]
    command += [f"-Drocketmq.version={release}", "package"]
    if offline:
        command.insert(1, "-o")
    return subprocess.run(
        command, cwd=HARNESS_DIR, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S
    )


@pytest.fixture(scope="session")
def harness() -> Harness:
    """Builds the harness for each RocketMQ line once per session."""
    java, mvn = shutil.which("java"), shutil.which("mvn")
    if java is None or mvn is None:
        pytest.fail("the RocketMQ interop tests need java (17+) and mvn on PATH")
    jars = {}
    for profile, release in ROCKETMQ_RELEASES.items():
        # Offline first: once ~/.m2 holds the jars no network is needed. The first run
        # (or a new release) falls back to the Maven client's default repositories.
        built = _maven(mvn, profile, release, offline=True)
        if built.returncode != 0:
            built = _maven(mvn, profile, release, offline=False)
        if built.returncode != 0:
            pytest.fail(
                f"building the RocketMQ {release} harness failed:\n"
                + (built.stdout + built.stderr)[-4000:]
            )
        jars[release] = HARNESS_DIR / "target" / f"rocketmq-{release}" / "rmq-interop.jar"
    return Harness(java, jars)


# --- what RocketMQ read: the harness's dump ----------------------------------------------


QueueKey = tuple[str, int]


@dataclass
class Dump:
    """The JSON lines of the harness's ``dump`` command, grouped."""

    store: dict[str, Any] = field(default_factory=dict)
    queues: dict[QueueKey, dict[str, Any]] = field(default_factory=dict)
    entries: dict[QueueKey, list[dict[str, Any]]] = field(default_factory=dict)
    by_queue: dict[QueueKey, list[dict[str, Any]]] = field(default_factory=dict)
    index_only: list[dict[str, Any]] = field(default_factory=list)
    keys: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    problems: list[dict[str, Any]] = field(default_factory=list)
    table_files: list[dict[str, Any]] = field(default_factory=list)  # RocksDB form

    @classmethod
    def parse(cls, text: str) -> Dump:
        dump = cls()
        for line in text.splitlines():
            item = json.loads(line)
            kind = item["kind"]
            if kind == "store":
                dump.store = item
            elif kind == "queue":
                dump.queues[(item["topic"], item["queueId"])] = item
            elif kind == "entry":
                dump.entries.setdefault((item["topic"], item["queueId"]), []).append(item)
            elif kind == "sst":
                dump.table_files.append(item)
            elif kind == "message" and item["via"] == "queue":
                dump.by_queue.setdefault((item["topic"], item["queueId"]), []).append(item)
            elif kind == "message":
                dump.index_only.append(item)
            elif kind == "key":
                dump.keys[(item["topic"], item["key"])] = set(item["commitLogOffsets"])
            elif kind == "problem":
                dump.problems.append(item)
            else:
                raise AssertionError(f"unknown dump line {line}")
        return dump

    def topics(self) -> set[str]:
        return {topic for topic, _ in self.queues}

    def consume_queue_type(self) -> str:
        """rmq's name for the form RocketMQ opened (dumps from before the field: files)."""
        return CONSUME_QUEUE_TYPES[self.store.get("storeType", "default")]


# --- one comparable shape for both sides -------------------------------------------------


def canonical_host(text: str) -> str:
    """``ip:port`` with IPv6 bracketed and compressed (Java prints it uncompressed)."""
    host, _, port = text.rpartition(":")
    ip = ipaddress.ip_address(host.strip("[]"))
    return f"[{ip.compressed}]:{port}" if ip.version == 6 else f"{ip}:{port}"


def has_field(name: str) -> bool:
    """Whether rmq.Message exposes ``name`` (fields the API may add later)."""
    return hasattr(rmq.Message, name)


def rocketmq_fields(message: dict[str, Any]) -> dict[str, Any]:
    """A message of the dump in the shape of ``rmq_fields``."""
    # rmq exposes TAGS and KEYS as fields and hides the record-CRC property (__CRC32#),
    # which RocketMQ shows as an ordinary property.
    hidden = ("TAGS", "KEYS", "__CRC32#")
    properties = {k: v for k, v in message["properties"].items() if k not in hidden}
    fields = {
        "topic": message["topic"],
        "queue_id": message["queueId"],
        "queue_offset": message["queueOffset"],
        "commitlog_offset": message["commitLogOffset"],
        "store_size": message["storeSize"],
        "body": base64.b64decode(message["body"]),
        "body_crc": message["bodyCRC"],
        "tags": message["tags"],
        "keys": message["keys"],
        "properties": properties,
        "born_timestamp": message["bornTimestamp"],
        "store_timestamp": message["storeTimestamp"],
        "born_host": canonical_host(message["bornHost"]),
        "store_host": canonical_host(message["storeHost"]),
        "msg_id": message["msgId"],
        "flag": message["flag"],
        "sys_flag": message["sysFlag"],
        "reconsume_times": message["reconsumeTimes"],
    }
    if has_field("prepared_transaction_offset"):
        fields["prepared_transaction_offset"] = message["preparedTransactionOffset"]
    return fields


def rmq_fields(message: rmq.Message) -> dict[str, Any]:
    """Every field rmq returns; hosts as rmq spells them (must already be canonical)."""
    fields = {
        "topic": message.topic,
        "queue_id": message.queue_id,
        "queue_offset": message.queue_offset,
        "commitlog_offset": message.commitlog_offset,
        "store_size": message.store_size,
        "body": message.body,
        # rmq does not expose the stored CRC: RocketMQ's stored value must match the body.
        "body_crc": rmq.body_crc(message.body),
        "tags": message.tags,
        "keys": message.keys,
        "properties": message.properties,
        "born_timestamp": message.born_timestamp,
        "store_timestamp": message.store_timestamp,
        "born_host": message.born_host,
        "store_host": message.store_host,
        "msg_id": message.msg_id,
        "flag": message.flag,
        "sys_flag": message.sys_flag,
        "reconsume_times": message.reconsume_times,
    }
    if has_field("prepared_transaction_offset"):
        fields["prepared_transaction_offset"] = message.prepared_transaction_offset  # type: ignore[attr-defined]
    return fields


def rocketmq_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A consume-queue entry of the dump in the shape of ``rmq_entry``."""
    return {
        "queue_offset": entry["queueOffset"],
        "commitlog_offset": entry["commitLogOffset"],
        "size": entry["size"],
        "tags_code": entry["tagsCode"],
        "store_timestamp": entry["storeTime"],
    }


def rmq_entry(message: rmq.Message) -> dict[str, Any]:
    """The consume-queue entry RocketMQ must hold for a message rmq returns: where the
    record is, its size, its tags' Java hash (0 without tags) and its store time."""
    return {
        "queue_offset": message.queue_offset,
        "commitlog_offset": message.commitlog_offset,
        "size": message.store_size,
        "tags_code": rmq.java_string_hash(message.tags) if message.tags else 0,
        "store_timestamp": message.store_timestamp,
    }


def read_queue(store: rmq.Store, topic: str, queue_id: int) -> list[rmq.Message]:
    """Every message of one queue, from its min offset to its max."""
    messages: list[rmq.Message] = []
    offset, end = store.min_offset(topic, queue_id), store.max_offset(topic, queue_id)
    while offset < end:
        batch = store.get(topic, queue_id, offset, 32)
        if not batch:
            break
        messages += batch
        offset = batch[-1].queue_offset + 1
    return messages


def indexed_keys(message: rmq.Message) -> list[str]:
    """The keys RocketMQ's index holds for a message: its KEYS and its UNIQ_KEY."""
    unique = message.properties.get("UNIQ_KEY")
    return message.keys + ([unique] if unique else [])


def file_digests(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


# --- RocketMQ wrote it, rmq reads it -----------------------------------------------------


def extract_fixture(name: str, into: Path) -> Path:
    with tarfile.open(FIXTURES_DIR / f"{name}.tar.gz") as archive:
        archive.extractall(into, filter="data")
    return into / "store"


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


def load_fixture_messages() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "fixture_messages", HARNESS_DIR / "fixture_messages.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


# (case, store host): a store closed by rmq, and a copy taken while rmq still had it open.
WRITE_CASES = [("closed", "192.168.0.10:10911"), ("copied-while-open", "[fd00::10]:10911")]


@pytest.mark.parametrize("release", list(ROCKETMQ_RELEASES.values()))
@pytest.mark.parametrize(("case", "store_host"), WRITE_CASES, ids=[c for c, _ in WRITE_CASES])
def test_rocketmq_reads_exactly_what_rmq_wrote(
    harness: Harness, release: str, case: str, store_host: str, tmp_path: Path
) -> None:
    written, for_rocketmq = tmp_path / "rmq", tmp_path / "copy"
    with rmq.Store(
        written,
        commitlog_segment_size=RMQ_SEGMENT_SIZE,
        consume_queue_entries_per_file=RMQ_CQ_ENTRIES_PER_FILE,
        store_host=store_host,
    ) as store:
        put_fixture_messages(store)
        view = RmqView.of(store)
        if case == "copied-while-open":
            store.flush()
            shutil.copytree(written, for_rocketmq)
    if case == "closed":
        shutil.copytree(written, for_rocketmq)
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
    with rmq.Store(
        written,
        commitlog_segment_size=RMQ_SEGMENT_SIZE,
        store_host=store_host,
        consume_queue_type="rocksdb",
    ) as store:
        put_fixture_messages(store)
        view = RmqView.of(store)
        if case == "copied-while-open":
            store.flush()
            shutil.copytree(written, for_rocketmq)
    if case == "closed":
        shutil.copytree(written, for_rocketmq)
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
    with rmq.Store(
        written,
        commitlog_segment_size=RMQ_SEGMENT_SIZE,
        consume_queue_entries_per_file=RMQ_CQ_ENTRIES_PER_FILE,
    ) as store:
        put_fixture_messages(store, long_topics=True)
        view = RmqView.of(store)
    shutil.copytree(written, for_rocketmq)
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
    import rmq.spark
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("rmq-interop-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    rmq.spark.register(session)
    yield session
    session.stop()


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
