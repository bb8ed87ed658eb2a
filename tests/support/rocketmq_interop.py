"""What the RocketMQ interop tests share: the Java harness (built with Maven), the dump it
prints, and the field-by-field views of a message on each side. See docs/interop.md."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import ipaddress
import json
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import rmq

from tests.support.maven import java_and_maven, maven_package

ROOT = Path(__file__).resolve().parent.parent.parent
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


def build_harness() -> Harness:
    """Builds the harness for each RocketMQ line (the conftest's ``harness`` fixture calls
    this once per session)."""
    java = java_and_maven("the RocketMQ interop tests")
    jars = {}
    for profile, release in ROCKETMQ_RELEASES.items():
        maven_package(
            HARNESS_DIR,
            "-P",
            profile,
            f"-Drocketmq.version={release}",
            what=f"the RocketMQ {release} harness",
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


def load_fixture_messages() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "fixture_messages", HARNESS_DIR / "fixture_messages.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
