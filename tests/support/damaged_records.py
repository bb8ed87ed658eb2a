"""A record damaged in a store's commit log, for the tests of reads that meet one."""

from __future__ import annotations

from pathlib import Path

# Where BODYCRC sits before the body in a V1 record with IPv4 hosts (format §1.2): the
# body starts 92 bytes into the record, BODYCRC 8 bytes into it.
BODY_START = 92
BODY_CRC_AT = 8


def body(index: int) -> bytes:
    """The body of message ``index``: unique in the log, so it can be found and damaged."""
    return f"body-{index:04d}-".encode() + bytes([index % 251]) * 40


def _flip(store_dir: Path, index: int, from_body: int, mask: int) -> None:
    """XOR ``mask`` into the byte ``from_body`` bytes after the start of message
    ``index``'s body (negative: before it), in the one segment that holds the body."""
    needle = body(index)
    hits = []
    for segment in (store_dir / "commitlog").iterdir():
        data = bytearray(segment.read_bytes())
        at = data.find(needle)
        if at >= 0:
            hits.append(segment)
            data[at + from_body] ^= mask
            segment.write_bytes(bytes(data))
    assert len(hits) == 1, hits


def damage_body(store_dir: Path, index: int) -> None:
    """Flip one byte in the middle of message ``index``'s body."""
    _flip(store_dir, index, len(body(index)) // 2, 0x40)


def damage_body_crc(store_dir: Path, index: int) -> None:
    """Flip one bit of message ``index``'s stored BODYCRC, leaving the body intact."""
    _flip(store_dir, index, BODY_CRC_AT - BODY_START, 0x01)
