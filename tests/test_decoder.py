"""The native segment decoder on its own (``rmq._rmqcore.SegmentDecoder`` and the Arrow
batches of ``rmq.spark.arrow``), on segments whose bytes this file writes itself from the
format reference (§1.2-§1.5): V1 and V2 records, IPv6 hosts, RocketMQ 5's CRC property,
the blank and zero ends, and damage."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import logging
import struct
import tarfile
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

import rmq  # noqa: E402
from rmq._rmqcore import SegmentDecoder  # noqa: E402
from rmq.errors import CorruptRecordError  # noqa: E402
from rmq.spark.arrow import (  # noqa: E402
    ARROW_SCHEMA,
    SegmentPart,
    read_part,
    read_segment,
    to_record_batch,
)

from tests.support.segment_bytes import (  # noqa: E402
    BORN_TIME,
    MAGIC_V2,
    SEGMENT_SIZE,
    START,
    STORE_TIME,
    SegmentBuilder,
    encode_properties,
    host_bytes,
)


def rows(path: Path, **options: Any) -> list[dict[str, Any]]:
    batches = list(read_segment(str(path), shard="s", **options))
    for batch in batches:
        assert batch.schema.equals(ARROW_SCHEMA)
    return [row for batch in batches for row in batch.to_pylist()]


def test_every_record_layout_decodes_to_its_fields(tmp_path: Path) -> None:
    builder = SegmentBuilder()
    layouts: list[dict[str, Any]] = [
        {"topic": "v1-topic"},
        {"topic": "R" * 200},
        {"topic": "born-v6", "born_host": "[2001:db8::1]:7"},
        {"topic": "store-v6", "store_host": "[2001:db8::2]:10911"},
        {"topic": "both-v6", "born_host": "[::1]:1", "store_host": "[fe80::1]:2"},
        {"topic": "crc-property", "crc_property": True},
        {"topic": "plain", "properties": b"", "body": b""},
        {"topic": "ünïcode", "properties": encode_properties({"TAGS": "标签", "x": "y"})},
    ]
    for index, layout in enumerate(layouts):
        builder.add(queue_offset=index, store_timestamp=STORE_TIME + index, **layout)
    builder.blank()
    path = builder.write(tmp_path)

    decoded = rows(path)
    assert [row["topic"] for row in decoded] == [layout["topic"] for layout in layouts]
    for index, (row, layout) in enumerate(zip(decoded, layouts, strict=True)):
        born = layout.get("born_host", "10.0.0.1:50000")
        store = layout.get("store_host", "192.168.0.10:10911")
        offset = START + builder.positions[index]
        ip, ip_is_v6 = host_bytes(store)
        assert row["born_host"] == born
        assert row["store_host"] == store
        assert row["commitlog_offset"] == offset
        assert row["msg_id"] == (ip + struct.pack(">q", offset)).hex().upper()
        assert len(row["msg_id"]) == (56 if ip_is_v6 else 32)
        assert row["queue_offset"] == index
        assert row["queue_id"] == 1
        assert row["reconsume_times"] == 3
        assert row["body"] == layout.get("body", b"hello")
        assert row["body_size"] == len(row["body"])
        assert row["body_crc_ok"] is True
        assert row["sys_flag"] == (0x10 if "[" in born else 0) | (0x20 if "[" in store else 0)
        assert row["born_timestamp"].timestamp() * 1000 == BORN_TIME
        assert row["store_timestamp"].timestamp() * 1000 == STORE_TIME + index
        assert row["shard"] == "s"
    assert decoded[0]["tags"] == "TagA" and decoded[0]["keys"] == ["k1", "k2"]
    assert decoded[0]["properties"] == []
    # Record 5 carries the CRC property: checked (body_crc_ok above), then hidden.
    assert decoded[5]["properties"] == []
    assert decoded[6]["tags"] is None and decoded[6]["keys"] == []
    assert decoded[7]["tags"] == "标签" and decoded[7]["properties"] == [("x", "y")]


def test_the_v2_record_carries_the_v2_magic(tmp_path: Path) -> None:
    builder = SegmentBuilder()
    builder.add(topic="L" * 128)
    assert struct.unpack_from(">I", builder.data, 4)[0] == MAGIC_V2
    assert [row["topic"] for row in rows(builder.write(tmp_path))] == ["L" * 128]


@pytest.mark.parametrize("end", ["blank", "end_of_data"])
def test_the_blank_and_zeros_end_a_segment_cleanly(tmp_path: Path, end: str) -> None:
    builder = SegmentBuilder()
    for index in range(30):
        builder.add(topic="t", queue_offset=index)
    if end == "blank":
        builder.blank()
    path = builder.write(tmp_path)
    decoder = SegmentDecoder(path)
    assert (decoder.start_offset, decoder.size) == (START, SEGMENT_SIZE)
    batch = decoder.decode()
    assert (batch.num_rows, batch.end, batch.error) == (30, end, None)
    assert batch.next_position == builder.position


def test_a_corrupt_record_mid_segment_is_raised_after_the_rows_before_it(tmp_path: Path) -> None:
    builder = SegmentBuilder()
    for index in range(20):
        builder.add(topic="t", queue_offset=index)
    bad = builder.positions[12]
    builder.data[bad + 4] ^= 0xFF  # its magic code
    path = builder.write(tmp_path)

    received: list[int] = []
    with pytest.raises(CorruptRecordError) as raised:
        for batch in read_segment(str(path), shard="s"):
            received.extend(batch.column("queue_offset").to_pylist())
    assert received == list(range(12))
    assert raised.value.file == str(path)
    assert raised.value.offset == bad
    assert "magic" in raised.value.reason
    assert str(bad) in str(raised.value) and path.name in str(raised.value)

    batch = SegmentDecoder(path).decode()
    assert batch.end == "invalid" and not batch.nothing_after
    assert isinstance(batch.error, CorruptRecordError) and batch.error.offset == bad

    assert [row["queue_offset"] for row in rows(path, on_corrupt="stop")] == list(range(12))


def test_a_torn_last_record_ends_the_log_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    builder = SegmentBuilder()
    for index in range(5):
        builder.add(topic="t", queue_offset=index)
    torn = builder.positions[4]
    builder.data[torn + 40 : builder.position] = bytes(builder.position - torn - 40)
    path = builder.write(tmp_path)
    with caplog.at_level(logging.WARNING, logger="rmq.spark"):
        assert len(rows(path)) == 4
    assert "torn" in caplog.text and str(torn) in caplog.text

    # The same bytes in a segment that is not the shard's last are damage.
    part = SegmentPart("s", str(path), START, 0, SEGMENT_SIZE, tail=False)
    with pytest.raises(CorruptRecordError):
        list(read_part(part))


def test_crc_mismatches_are_flagged_per_row(tmp_path: Path) -> None:
    builder = SegmentBuilder()
    body_damaged = builder.add(topic="t", body=b"payload")
    header_damaged = builder.add(topic="t", crc_property=True)
    builder.add(topic="t")
    builder.data[body_damaged + 88 + 2] ^= 1  # a body byte
    builder.data[header_damaged + 19] ^= 1  # the flag, covered by the CRC property only
    path = builder.write(tmp_path)
    assert [row["body_crc_ok"] for row in rows(path)] == [False, False, True]
    assert [row["body_crc_ok"] for row in rows(path, verify_crc=False)] == [None] * 3


def test_filters_and_limits(tmp_path: Path) -> None:
    builder = SegmentBuilder()
    for index in range(100):
        builder.add(topic=f"t{index % 3}", queue_offset=index, store_timestamp=1000 + index)
    path = builder.write(tmp_path)
    decoder = SegmentDecoder(path)

    batch = decoder.decode(topics=["t1", "missing"], store_time_min=1010, store_time_max=1030)
    offsets = pa.Array.from_buffers(
        pa.int64(), batch.num_rows, [None, pa.py_buffer(batch.columns["queue_offset"][1][1])]
    )
    assert offsets.to_pylist() == [i for i in range(10, 31) if i % 3 == 1]
    assert batch.records_scanned == 100

    position, seen = 0, 0
    while True:
        batch = decoder.decode(position, max_rows=7)
        assert batch.num_rows <= 7
        seen += batch.num_rows
        position = batch.next_position
        if batch.end is not None:
            break
    assert seen == 100

    points = decoder.split_points(1000)
    assert points[0] == 0 and len(points) > 5
    assert set(points) <= set(builder.positions)
    limits = [*points[1:], decoder.size]
    total = sum(
        decoder.decode(begin, end).num_rows for begin, end in zip(points, limits, strict=True)
    )
    assert total == 100
    assert decoder.decode(points[1], points[2]).end == "limit"

    with pytest.raises(rmq.errors.InvalidArgumentError):
        decoder.decode(max_rows=0)
    with pytest.raises(rmq.errors.InvalidArgumentError):
        decoder.split_points(-1)


def test_column_buffers_are_read_only_memory(tmp_path: Path) -> None:
    builder = SegmentBuilder()
    builder.add(topic="t", body=b"abc")
    batch = SegmentDecoder(builder.write(tmp_path)).decode()
    length, (validity, offsets, data) = batch.columns["body"]
    assert length == 1 and validity is None and offsets is not None and data is not None
    assert bytes(memoryview(data)) == b"abc"
    assert len(offsets) == 8 and memoryview(offsets).readonly
    assert memoryview(offsets).cast("i").tolist() == [0, 3]


def test_unnamed_and_missing_files(tmp_path: Path) -> None:
    copy = tmp_path / "segment.copy"
    builder = SegmentBuilder()
    builder.add(topic="t")
    copy.write_bytes(bytes(builder.data))
    with pytest.raises(rmq.errors.InvalidArgumentError):
        SegmentDecoder(copy)
    assert SegmentDecoder(copy, start_offset=START).decode().num_rows == 1
    with pytest.raises(FileNotFoundError):
        SegmentDecoder(tmp_path / f"{0:020d}")
    empty = tmp_path / f"{0:020d}"
    empty.write_bytes(b"")
    assert SegmentDecoder(empty).decode().end == "end_of_file"


def test_reads_beside_an_open_store_without_changing_its_files(tmp_path: Path) -> None:
    store = rmq.Store(tmp_path / "store", commitlog_segment_size=SEGMENT_SIZE)
    for index in range(50):
        store.put("t", f"m{index}".encode(), queue_id=index % 2, tags="x")
    segment = tmp_path / "store" / "commitlog" / f"{0:020d}"
    assert SegmentDecoder(segment).decode().num_rows == 50  # the store holds its lock
    store.put("t", b"one more")
    assert SegmentDecoder(segment).decode().num_rows == 51
    store.close()

    before = hashlib.sha256(segment.read_bytes()).hexdigest()
    mtime = segment.stat().st_mtime_ns
    assert len(rows(segment)) == 51
    assert hashlib.sha256(segment.read_bytes()).hexdigest() == before
    assert segment.stat().st_mtime_ns == mtime


def test_columns_left_out_are_not_filled(tmp_path: Path) -> None:
    builder = SegmentBuilder()
    builder.add(topic="t", body=b"abc", born_host="[::1]:5")
    decoder = SegmentDecoder(builder.write(tmp_path))
    batch = decoder.decode(columns=["topic", "body_size"])
    for skipped in ("body", "msg_id", "born_host"):
        data = batch.columns[skipped][1][2]
        assert data is not None and len(data) == 0
    schema = pa.schema([ARROW_SCHEMA.field("body_size"), pa.field("topic", pa.string())])
    assert to_record_batch(batch, "s", schema).to_pylist() == [{"body_size": 3, "topic": "t"}]

    full = decoder.decode(columns=["body", "born_host"])
    nested = pa.schema([pa.field("keys", pa.list_(pa.string())), ARROW_SCHEMA.field("body")])
    assert to_record_batch(full, "s", nested).to_pylist() == [{"keys": [], "body": b"abc"}]
    with pytest.raises(rmq.errors.InvalidArgumentError):
        decoder.decode(columns=["nope"])


FIXTURES = Path(__file__).parent / "fixtures" / "rocketmq"


def same_host(left: str, right: str) -> bool:
    """Java and Rust print IPv6 addresses differently; compare the addresses."""
    (left_ip, left_port), (right_ip, right_port) = (h.rsplit(":", 1) for h in (left, right))
    same_ip = ipaddress.ip_address(left_ip.strip("[]")) == ipaddress.ip_address(
        right_ip.strip("[]")
    )
    return same_ip and left_port == right_port


@pytest.mark.parametrize(
    "fixture", sorted(path.name[: -len(".tar.gz")] for path in FIXTURES.glob("*.tar.gz"))
)
def test_segments_written_by_rocketmq_decode_to_what_it_reports(
    tmp_path: Path, fixture: str
) -> None:
    with tarfile.open(FIXTURES / f"{fixture}.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    lines = (FIXTURES / f"{fixture}.jsonl").read_text().splitlines()
    wanted = [m for m in map(json.loads, lines) if m["kind"] == "message"]
    (commitlog,) = tmp_path.rglob("commitlog")
    decoded = {
        row["commitlog_offset"]: row
        for segment in sorted(commitlog.iterdir())
        for row in rows(segment)
    }
    assert len(decoded) == len(wanted)
    for message in wanted:
        row = decoded[message["commitLogOffset"]]
        assert row["msg_id"] == message["msgId"]
        assert (row["topic"], row["queue_id"], row["queue_offset"]) == (
            message["topic"],
            message["queueId"],
            message["queueOffset"],
        )
        assert row["body"] == base64.b64decode(message["body"])
        assert row["body_crc_ok"] is True
        assert row["tags"] == message["tags"] and row["keys"] == message["keys"]
        properties = {k: v for k, v in message["properties"].items() if k not in ("TAGS", "KEYS")}
        assert dict(row["properties"]) == properties
        assert row["store_timestamp"].timestamp() * 1000 == message["storeTimestamp"]
        assert row["born_timestamp"].timestamp() * 1000 == message["bornTimestamp"]
        assert same_host(row["born_host"], message["bornHost"])
        assert same_host(row["store_host"], message["storeHost"])
        assert (row["sys_flag"], row["flag"], row["reconsume_times"]) == (
            message["sysFlag"],
            message["flag"],
            message["reconsumeTimes"],
        )
