"""``rmq topic create|list|describe|delete``: topic admin through the broker."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from rmq.client.connect import add_connection_arguments, client_from_args
from rmq.errors import RmqError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "topic",
        help="create, list, describe or delete topics",
        description="Topic admin through a running broker (rmq serve).",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    create = actions.add_parser(
        "create",
        help="create a topic, or grow it to more queues",
        description="Create TOPIC with --queues queues spread over the shards. Creating an "
        "existing topic with more queues adds queues; with fewer or as many, changes nothing.",
    )
    create.add_argument("topic")
    create.add_argument("--queues", type=int, default=8, help="number of queues (default: 8)")

    actions.add_parser("list", help="list topics", description="Print one topic per line.")

    describe = actions.add_parser(
        "describe",
        help="show a topic's queues, shards and offsets",
        description="Print each queue of TOPIC with its shard, endpoint and min/max offsets "
        "(-1 when the shard is not reachable).",
    )
    describe.add_argument("topic")
    describe.add_argument("--json", action="store_true", help="print JSON")

    delete = actions.add_parser(
        "delete",
        help="delete a topic",
        description="Forget TOPIC: its route and consume queues go; commit-log bytes stay "
        "until retention removes them.",
    )
    delete.add_argument("topic")

    for action in (create, describe, delete, actions.choices["list"]):
        add_connection_arguments(action)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        with client_from_args(args) as client:
            if args.action == "create":
                route = client.create_topic(args.topic, args.queues)
                shards = [q.shard for q in route.queues]
                print(f"topic {route.topic}: {len(route.queues)} queues on shards {shards}")
            elif args.action == "list":
                for topic in client.topics():
                    print(topic)
            elif args.action == "describe":
                queues = client.describe_topic(args.topic)
                if args.json:
                    print(json.dumps([dataclasses.asdict(q) for q in queues], indent=2))
                else:
                    print(f"{'queue':>5} {'shard':>5} {'endpoint':<22} {'min':>12} {'max':>12}")
                    for q in queues:
                        print(
                            f"{q.queue_id:>5} {q.shard:>5} {q.endpoint:<22} "
                            f"{q.min_offset:>12} {q.max_offset:>12}"
                        )
            else:
                client.delete_topic(args.topic)
                print(f"deleted topic {args.topic}")
    except RmqError as error:
        print(f"rmq topic {args.action}: {error}", file=sys.stderr)
        return 1
    return 0
