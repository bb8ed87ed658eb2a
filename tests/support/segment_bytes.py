"""Commit-log segments written byte by byte from the format reference (docs/format.md
§1.2-§1.5), for tests of the decoder that must not trust rmq's own writer: V1 and V2
records, IPv6 hosts, RocketMQ 5's CRC property and the blank end of a segment."""

from __future__ import annotations

import ipaddress
import struct
import zlib
from pathlib import Path
from typing import Any

MAGIC_V1 = 0xDAA320A7
MAGIC_V2 = 0xDAA320AB
BLANK_MAGIC = 0xCBD43194
SEGMENT_SIZE = 64 * 1024
START = 5 * SEGMENT_SIZE
BORN_TIME = 1_700_000_000_000
STORE_TIME = 1_700_000_100_000


def crc(data: bytes) -> int:
    return zlib.crc32(data) & 0x7FFFFFFF


def host_bytes(host: str) -> tuple[bytes, bool]:
    address, port = host.rsplit(":", 1)
    packed = ipaddress.ip_address(address.strip("[]")).packed
    return packed + struct.pack(">i", int(port)), len(packed) == 16


def encode_properties(entries: dict[str, str]) -> bytes:
    return b"".join(f"{name}\x01{value}\x02".encode() for name, value in entries.items())


def encode_record(
    *,
    topic: str,
    body: bytes,
    properties: bytes,
    physical_offset: int,
    queue_id: int = 1,
    queue_offset: int = 0,
    born_host: str = "10.0.0.1:50000",
    store_host: str = "192.168.0.10:10911",
    store_timestamp: int = STORE_TIME,
    flag: int = 0,
    crc_property: bool = False,
) -> bytes:
    """One record, laid out as format §1.2 describes (V2 when the topic needs it)."""
    born, born_v6 = host_bytes(born_host)
    store, store_v6 = host_bytes(store_host)
    sys_flag = (0x10 if born_v6 else 0) | (0x20 if store_v6 else 0)
    topic_bytes = topic.encode()
    v2 = len(topic_bytes) > 127
    if crc_property:
        properties += b"__CRC32#\x01" + b"0" * 10 + b"\x02"
    topic_length = struct.pack(">h" if v2 else ">b", len(topic_bytes))
    after_size = (
        struct.pack(">Ii", MAGIC_V2 if v2 else MAGIC_V1, crc(body))
        + struct.pack(">iiqqiq", queue_id, flag, queue_offset, physical_offset, sys_flag, BORN_TIME)
        + born
        + struct.pack(">q", store_timestamp)
        + store
        + struct.pack(">iqi", 3, 0, len(body))
        + body
        + topic_length
        + topic_bytes
        + struct.pack(">h", len(properties))
        + properties
    )
    record = struct.pack(">i", 4 + len(after_size)) + after_size
    if crc_property:
        digits = str(crc(record[:-20]))[::-1].ljust(10, "0").encode()
        record = record[:-11] + digits + record[-1:]
    return record


class SegmentBuilder:
    def __init__(self) -> None:
        self.data = bytearray(SEGMENT_SIZE)
        self.positions: list[int] = []
        self.position = 0

    def add(self, **fields: Any) -> int:
        fields.setdefault("properties", encode_properties({"TAGS": "TagA", "KEYS": "k1 k2"}))
        fields.setdefault("body", b"hello")
        record = encode_record(physical_offset=START + self.position, **fields)
        self.data[self.position : self.position + len(record)] = record
        self.positions.append(self.position)
        self.position += len(record)
        return self.positions[-1]

    def blank(self) -> None:
        remaining = SEGMENT_SIZE - self.position
        self.data[self.position : self.position + 8] = struct.pack(">iI", remaining, BLANK_MAGIC)

    def write(self, directory: Path) -> Path:
        path = directory / f"{START:020d}"
        path.write_bytes(bytes(self.data))
        return path
