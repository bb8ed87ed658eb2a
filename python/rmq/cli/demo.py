"""``rmq demo``: a short end-to-end run of an embedded store."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import rmq


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="write messages into an embedded store, read them back and print a summary",
        description=(
            "Open a store directory, write messages across topics and queues (rolling "
            "small segments), reopen it, read every message back and check it."
        ),
    )
    parser.add_argument("--data", type=Path, help="store directory (default: a temporary one)")
    parser.add_argument("--messages", type=int, default=10_000, help="how many (default 10000)")
    parser.add_argument("--body-size", type=int, default=256, help="body bytes (default 256)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.data is None:
        with tempfile.TemporaryDirectory(prefix="rmq-demo-") as directory:
            return demo(Path(directory), args.messages, args.body_size)
    return demo(args.data, args.messages, args.body_size)


def demo(path: Path, count: int, body_size: int) -> int:
    topics = ["Orders", "Payments"]
    queues = 4
    started = time.perf_counter()
    with rmq.Store(path, commitlog_segment_size=1 << 20) as store:
        for topic in topics:
            store.create_topic(topic, queues)
        batch: list[bytes | rmq.Message] = []
        for index in range(count):
            body = f"{index:08d}".encode().ljust(body_size, b".")
            batch.append(rmq.Message(body, tags=f"tag{index % 3}", keys=[f"key-{index}"]))
            if len(batch) == 128 or index == count - 1:
                topic = topics[(index // 128) % len(topics)]
                store.put_batch(topic, (index // 256) % queues, batch)
                batch = []
    written = time.perf_counter() - started

    started = time.perf_counter()
    read = 0
    with rmq.Store(path) as store:
        report = store.recovery_report
        for topic in store.topics():
            for queue_id in range(store.queue_count(topic)):
                offset = store.min_offset(topic, queue_id)
                while offset < store.max_offset(topic, queue_id):
                    messages = store.get(topic, queue_id, offset, 256)
                    read += len(messages)
                    offset = messages[-1].queue_offset + 1
        segments = sorted(p.name for p in (path / "commitlog").iterdir())
    elapsed = time.perf_counter() - started

    print(f"store:     {path}")
    print(f"written:   {count} messages of {body_size} B in {written:.2f} s")
    print(f"read back: {read} messages in {elapsed:.2f} s after reopening")
    print(f"segments:  {len(segments)} commit-log files ({segments[0]} .. {segments[-1]})")
    print(f"recovery:  {report.mode}, scanned {report.records_scanned} records")
    if read != count:
        print(f"MISMATCH: wrote {count} but read {read}")
        return 1
    print("ok")
    return 0
