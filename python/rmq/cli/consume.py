"""``rmq consume``: read a topic with a consumer group and write messages to stdout."""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time

from rmq.client.connect import add_connection_arguments, client_from_args
from rmq.client.consumer import Consumer
from rmq.client.messages import ReceivedMessage
from rmq.errors import RmqError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "consume",
        help="read messages of a topic to stdout",
        description="Consume TOPIC as consumer group --group from every queue, writing each "
        "message to stdout, and commit the group's offsets after each write (at least "
        "once: a restarted consumer resumes after the last committed message). Runs until "
        "--count messages, --idle-timeout seconds without messages, or Ctrl-C.",
    )
    parser.add_argument("topic")
    parser.add_argument("--group", required=True, help="consumer group name")
    parser.add_argument("--count", type=int, help="stop after this many messages")
    parser.add_argument(
        "--idle-timeout", type=float, help="stop after this many seconds without a message"
    )
    parser.add_argument(
        "--format",
        choices=["body", "json"],
        default="body",
        help="body: raw body and a newline; json: one JSON object per message",
    )
    parser.add_argument(
        "--from",
        dest="start",
        choices=["earliest", "latest"],
        default="earliest",
        help="where a group without committed offsets starts (default: earliest)",
    )
    parser.add_argument("--tags", nargs="+", help="only messages with one of these tags")
    parser.add_argument("--no-commit", action="store_true", help="do not commit offsets")
    add_connection_arguments(parser)
    parser.set_defaults(func=run)


def as_json(message: ReceivedMessage) -> str:
    record: dict[str, object] = {
        "topic": message.topic,
        "queue_id": message.queue_id,
        "queue_offset": message.queue_offset,
        "msg_id": message.msg_id,
        "tags": message.tags,
        "keys": list(message.keys),
        "properties": message.properties,
        "store_timestamp": message.store_timestamp,
        "born_timestamp": message.born_timestamp,
    }
    try:
        record["body"] = message.body.decode()
    except UnicodeDecodeError:
        record["body_base64"] = base64.b64encode(message.body).decode()
    return json.dumps(record)


def run(args: argparse.Namespace) -> int:
    out = sys.stdout.buffer
    seen = 0
    last_message = time.monotonic()
    try:
        with client_from_args(args) as client:
            consumer = client.consumer(args.group, args.topic, start=args.start, tags=args.tags)
            try:
                while args.count is None or seen < args.count:
                    messages = consumer.poll(timeout=1.0)
                    if not messages:
                        idle = time.monotonic() - last_message
                        if args.idle_timeout is not None and idle >= args.idle_timeout:
                            break
                        continue
                    last_message = time.monotonic()
                    if args.count is not None:
                        messages = messages[: args.count - seen]
                    for message in messages:
                        if args.format == "json":
                            out.write(as_json(message).encode() + b"\n")
                        else:
                            out.write(message.body + b"\n")
                    out.flush()
                    seen += len(messages)
                    if not args.no_commit:
                        _commit_through(consumer, messages)
            finally:
                consumer.close()
    except RmqError as error:
        print(f"rmq consume: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    print(f"consumed {seen} messages", file=sys.stderr)
    return 0


def _commit_through(consumer: Consumer, messages: list[ReceivedMessage]) -> None:
    """Commit exactly the messages written (a --count cut may leave some unwritten)."""
    last: dict[int, int] = {}
    for message in messages:
        last[message.queue_id] = message.queue_offset + 1
    positions = consumer.positions()
    for queue_id, offset in last.items():
        if positions.get(queue_id) != offset:
            consumer.seek(queue_id, offset)
    consumer.commit()
