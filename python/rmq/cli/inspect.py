"""``rmq inspect PATH``: dump a store directory without changing it.

Works on an rmq shard directory, a broker data directory (each ``shard-N`` in turn) or a
RocketMQ broker's store root. Files are only read: segment lists and sizes, index-file
headers and the checkpoint are decoded here from their fixed layouts (format §3.2, §4.1);
records and consume queues are read through ``rmq.Store(path, read_only=True)``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import struct
from pathlib import Path
from typing import Any

from rmq.cli.tier_report import describe_tier, human_bytes, state_line

INDEX_HEADER = struct.Struct(">qqqqii")
CHECKPOINT_FIELDS = (
    "physic_msg_timestamp",
    "logics_msg_timestamp",
    "index_msg_timestamp",
    "master_flushed_offset",
    "confirm_phy_offset",
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="dump records, consume queues and index headers of a store, read-only",
        description="Describe the store directory PATH (or every shard-N under a broker "
        "data directory) without writing to it: commit-log segments, consume queues with "
        "their offsets, index-file headers, the checkpoint, the object-storage tier's "
        "segments by state (when the store has a tier), and the first records of each "
        "queue.",
    )
    parser.add_argument("path", type=store_directory_path)
    parser.add_argument(
        "--records", type=int, default=3, help="records to show per queue (default: 3)"
    )
    parser.add_argument("--topic", help="only this topic")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def store_directory_path(text: str) -> Path:
    """The PATH argument of inspect, verify, rebuild and tier: an existing directory, a
    store's or a broker data directory's (argparse reports anything else, exit 2)."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is not a directory")
    return path


def store_directories(path: Path) -> list[Path]:
    shards = sorted(
        (p for p in path.glob("shard-*") if p.is_dir() and p.name[6:].isdigit()),
        key=lambda p: int(p.name[6:]),
    )
    return shards or [path]


def _millis(value: int) -> str:
    if value <= 0:
        return "0"
    moment = datetime.datetime.fromtimestamp(value / 1000, datetime.UTC)
    return f"{value} ({moment.isoformat(timespec='milliseconds')})"


def _segments(directory: Path) -> list[dict[str, Any]]:
    if not directory.is_dir():
        return []
    return [
        {"name": p.name, "bytes": p.stat().st_size}
        for p in sorted(directory.iterdir())
        if p.is_file() and p.name.isdigit()
    ]


def index_headers(root: Path) -> list[dict[str, Any]]:
    headers: list[dict[str, Any]] = []
    for path in sorted((root / "index").glob("*")) if (root / "index").is_dir() else []:
        if not path.is_file():
            continue
        with open(path, "rb") as file:
            raw = file.read(INDEX_HEADER.size)
        if len(raw) < INDEX_HEADER.size:
            headers.append({"name": path.name, "error": f"only {len(raw)} bytes"})
            continue
        begin, end, begin_offset, end_offset, slots, count = INDEX_HEADER.unpack(raw)
        headers.append(
            {
                "name": path.name,
                "bytes": path.stat().st_size,
                "begin_timestamp": begin,
                "end_timestamp": end,
                "begin_phy_offset": begin_offset,
                "end_phy_offset": end_offset,
                "hash_slots_used": slots,
                "entries": max(count - 1, 0),
            }
        )
    return headers


def checkpoint(root: Path) -> dict[str, int] | None:
    path = root / "checkpoint"
    if not path.is_file():
        return None
    with open(path, "rb") as file:
        raw = file.read(8 * len(CHECKPOINT_FIELDS))
    raw = raw.ljust(8 * len(CHECKPOINT_FIELDS), b"\0")
    return dict(zip(CHECKPOINT_FIELDS, struct.unpack(">5q", raw), strict=True))


def consume_queue_files(root: Path, topic: str, queue_id: int) -> list[dict[str, Any]]:
    return _segments(root / "consumequeue" / topic / str(queue_id))


def describe(root: Path, records: int, only_topic: str | None) -> dict[str, Any]:
    import rmq

    report: dict[str, Any] = {
        "path": str(root),
        "commitlog": _segments(root / "commitlog"),
        "abort": (root / "abort").exists(),
        "checkpoint": checkpoint(root),
        "index": index_headers(root),
        "config": sorted(p.name for p in (root / "config").glob("*.json"))
        if (root / "config").is_dir()
        else [],
        "topics": {},
    }
    try:
        store = rmq.Store(root, read_only=True)
    except Exception as error:  # still show what the files say
        report["store_error"] = f"{type(error).__name__}: {error}"
        return report
    with store:
        report["consume_queue_type"] = store.consume_queue_type
        tier = describe_tier(root, store.tier_status())
        if tier is not None:
            report["tier"] = {name: tier[name] for name in ("url", "states", "local", "in_tier")}
            report["tier"]["failing"] = tier["uploader"]["failing_brief"]
        report["commitlog_min_offset"] = store.commitlog_min_offset()
        report["commitlog_max_offset"] = store.commitlog_max_offset()
        for topic in store.topics():
            if only_topic is not None and topic != only_topic:
                continue
            queues = []
            for queue_id in range(store.queue_count(topic)):
                entry: dict[str, Any] = {
                    "queue_id": queue_id,
                    "files": consume_queue_files(root, topic, queue_id),
                }
                try:
                    low = store.min_offset(topic, queue_id)
                    high = store.max_offset(topic, queue_id)
                    entry.update(min_offset=low, max_offset=high)
                    entry["records"] = [
                        _record(m) for m in store.get(topic, queue_id, low, records)
                    ] if records > 0 and high > low else []  # fmt: skip
                except Exception as error:
                    entry["error"] = f"{type(error).__name__}: {error}"
                queues.append(entry)
            report["topics"][topic] = queues
    return report


def _record(message: Any) -> dict[str, Any]:
    body: bytes = message.body
    return {
        "queue_offset": message.queue_offset,
        "commitlog_offset": message.commitlog_offset,
        "store_size": message.store_size,
        "msg_id": message.msg_id,
        "tags": message.tags,
        "keys": list(message.keys),
        "properties": dict(message.properties),
        "store_timestamp": message.store_timestamp,
        "body_bytes": len(body),
        "body_preview": body[:64].decode("utf-8", "replace"),
    }


def print_text(report: dict[str, Any]) -> None:
    print(f"== {report['path']}")
    segments = report["commitlog"]
    print(f"commitlog: {len(segments)} segment(s)")
    for segment in segments:
        print(f"  {segment['name']}  {segment['bytes']} bytes")
    if "commitlog_max_offset" in report:
        print(
            f"  valid offsets {report['commitlog_min_offset']} to {report['commitlog_max_offset']}"
        )
    print(f"abort file: {'present (last shutdown was unclean)' if report['abort'] else 'absent'}")
    if report["checkpoint"] is not None:
        print("checkpoint:")
        for name, value in report["checkpoint"].items():
            print(f"  {name}: {_millis(value) if 'timestamp' in name else value}")
    print(f"index: {len(report['index'])} file(s)")
    for header in report["index"]:
        if "error" in header:
            print(f"  {header['name']}: {header['error']}")
            continue
        print(
            f"  {header['name']}: {header['entries']} entries, {header['hash_slots_used']} slots "
            f"used, times {_millis(header['begin_timestamp'])} to "
            f"{_millis(header['end_timestamp'])}, offsets {header['begin_phy_offset']} to "
            f"{header['end_phy_offset']}"
        )
    print(f"config: {', '.join(report['config']) or 'none'}")
    if "consume_queue_type" in report:
        form = report["consume_queue_type"]
        where = "RocksDB in consumequeue/" if form == "rocksdb" else "files in consumequeue/"
        print(f"consume queues: {form} ({where})")
    if "tier" in report:
        tier = report["tier"]
        print(f"tier: {tier['url']}")
        print(f"  {state_line(tier['states'])}")
        print(
            f"  local {human_bytes(tier['local']['bytes'])}, in the tier "
            f"{human_bytes(tier['in_tier']['bytes'])}"
            + (f"; uploads FAILING: {tier['failing']}" if tier["failing"] else "")
        )
    if "store_error" in report:
        print(f"cannot read records: {report['store_error']}")
        return
    for topic, queues in report["topics"].items():
        print(f"topic {topic}: {len(queues)} queue(s)")
        for queue in queues:
            if "error" in queue:
                print(f"  queue {queue['queue_id']}: {queue['error']}")
                continue
            print(
                f"  queue {queue['queue_id']}: offsets {queue['min_offset']} to "
                f"{queue['max_offset']}, {len(queue['files'])} consume-queue file(s)"
            )
            for record in queue["records"]:
                print(
                    f"    #{record['queue_offset']} @{record['commitlog_offset']} "
                    f"{record['msg_id']} tags={record['tags']} keys={record['keys']} "
                    f"{record['body_bytes']} B {record['body_preview']!r}"
                )


def run(args: argparse.Namespace) -> int:
    reports = [describe(root, args.records, args.topic) for root in store_directories(args.path)]
    if args.json:
        print(json.dumps(reports if len(reports) > 1 else reports[0], indent=2))
    else:
        for report in reports:
            print_text(report)
    return 1 if any("store_error" in r for r in reports) else 0
