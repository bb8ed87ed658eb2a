"""``rmq rebuild PATH``: recreate a store's consume queues and key index from its commit log."""

from __future__ import annotations

import argparse
import sys
import time

from rmq.cli.inspect import store_directories, store_directory_path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "rebuild",
        help="recreate a store's consume queues and index from its commit log",
        description="Open the store directory PATH (or every shard-N under a broker data "
        "directory) for writing, delete its consume queues (either form; a damaged or "
        "missing RocksDB consume queue included) and key index, and dispatch the whole "
        "commit log again. The store must not be open elsewhere (stop `rmq serve` first). "
        "Exits 0 on success, 1 when a store could not be rebuilt.",
    )
    parser.add_argument("path", type=store_directory_path)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import rmq
    from rmq.errors import RmqError

    worst = 0
    for root in store_directories(args.path):
        started = time.monotonic()
        try:
            with rmq.Store(root, rebuild_consume_queues=True) as store:
                kind = store.consume_queue_type
                topics = len(store.topics())
        except RmqError as error:
            print(f"{root}: {type(error).__name__}: {error}", file=sys.stderr)
            worst = 1
            continue
        elapsed = time.monotonic() - started
        print(f"{root}: rebuilt {kind} consume queues of {topics} topics in {elapsed:.1f} s")
    return worst
