"""``rmq query``: look messages up by key, by msgId, or a queue offset by time."""

from __future__ import annotations

import argparse
import datetime
import json
import sys

from rmq.cli.output_format import as_json
from rmq.client.connect import add_connection_arguments, client_from_args
from rmq.errors import RmqError


def _timestamp(text: str) -> int:
    """Milliseconds since the epoch, from an integer or an ISO 8601 time."""
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither milliseconds since the epoch nor an ISO 8601 time"
        ) from error
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return int(moment.timestamp() * 1000)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "query",
        help="look up messages by key or msgId, or an offset by time",
        description="One of: --topic T --key K (messages with that key, newest first); "
        "--msg-id ID (the message with that msgId); --topic T --queue Q --time TIME (the "
        "first offset of the queue stored at or after TIME). Messages print as JSON lines.",
    )
    parser.add_argument("--topic", help="topic to search")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--key", help="message key (KEYS or UNIQ_KEY)")
    what.add_argument("--msg-id", help="RocketMQ offset message id (32 or 56 hex digits)")
    what.add_argument(
        "--time", type=_timestamp, help="milliseconds since the epoch or ISO 8601 time"
    )
    parser.add_argument("--queue", type=int, help="queue id, for --time")
    parser.add_argument("--begin", type=_timestamp, default=0, help="--key: earliest store time")
    parser.add_argument("--end", type=_timestamp, help="--key: latest store time")
    parser.add_argument("--max", type=int, default=64, help="--key: most messages (default: 64)")
    add_connection_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if (args.key is not None or args.time is not None) and not args.topic:
        print("rmq query: --key and --time need --topic", file=sys.stderr)
        return 2
    if args.time is not None and args.queue is None:
        print("rmq query: --time needs --queue", file=sys.stderr)
        return 2
    try:
        with client_from_args(args) as client:
            if args.key is not None:
                found = client.query_by_key(
                    args.topic, args.key, begin=args.begin, end=args.end, max_count=args.max
                )
                for message in found:
                    print(as_json(message))
                if not found:
                    print(f"no message of {args.topic} has key {args.key!r}", file=sys.stderr)
                    return 1
            elif args.msg_id is not None:
                print(as_json(client.get_by_msg_id(args.msg_id)))
            else:
                offset = client.offset_for_time(args.topic, args.queue, args.time)
                print(json.dumps({"topic": args.topic, "queue_id": args.queue, "offset": offset}))
    except RmqError as error:
        print(f"rmq query: {error}", file=sys.stderr)
        return 1
    return 0
