"""``rmq verify PATH``: check that consume queues and index agree with the commit log."""

from __future__ import annotations

import argparse

from rmq.cli.inspect import store_directories, store_directory_path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="check a store's consume queues and index against its commit log, read-only",
        description="Open the store directory PATH (or every shard-N under a broker data "
        "directory) read-only and compare its consume queues and index with a rebuild from "
        "the valid commit log. Exits 0 when they agree, 1 when differences or corruption "
        "are found, 2 when the check cannot run.",
    )
    parser.add_argument("path", type=store_directory_path)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import rmq
    from rmq.errors import RmqError

    worst = 0
    for root in store_directories(args.path):
        try:
            with rmq.Store(root, read_only=True) as store:
                report = store.verify()
        except RmqError as error:
            print(f"{root}: {type(error).__name__}: {error}")
            worst = 1
            continue
        print(f"{root}: {'clean' if report.clean else 'DIFFERENCES'}")
        print(f"  {report}")
        if not report.clean:
            worst = 1
    return worst
