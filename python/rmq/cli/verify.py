"""``rmq verify PATH``: check that consume queues and index agree with the commit log."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rmq.cli.inspect import store_directories


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="check a store's consume queues and index against its commit log, read-only",
        description="Open the store directory PATH (or every shard-N under a broker data "
        "directory) read-only and compare its consume queues and index with a rebuild from "
        "the valid commit log. Exits 0 when they agree, 1 when differences or corruption "
        "are found, 2 when the check cannot run.",
    )
    parser.add_argument("path", type=Path)
    parser.set_defaults(func=run)


def _clean(report: object) -> bool | None:
    """Whether a verify report says all is well, for the report shapes the engine may give."""
    for name in ("ok", "clean", "is_clean"):
        value = getattr(report, name, None)
        if isinstance(value, bool):
            return value
    for name in ("differences", "problems", "errors"):
        value = getattr(report, name, None)
        if value is not None:
            return len(value) == 0
    if isinstance(report, dict):
        for name in ("ok", "clean"):
            if isinstance(report.get(name), bool):
                return bool(report[name])
    return None


def run(args: argparse.Namespace) -> int:
    import rmq
    from rmq.errors import RmqError

    if not args.path.is_dir():
        print(f"rmq verify: {args.path} is not a directory", file=sys.stderr)
        return 2
    worst = 0
    for root in store_directories(args.path):
        try:
            with rmq.Store(root, read_only=True) as store:
                verify = getattr(store, "verify", None)
                if verify is None:
                    print(
                        "rmq verify: this build of the engine has no Store.verify yet",
                        file=sys.stderr,
                    )
                    return 2
                report = verify()
        except RmqError as error:
            print(f"{root}: {type(error).__name__}: {error}")
            worst = max(worst, 1)
            continue
        clean = _clean(report)
        print(f"{root}: {'clean' if clean else 'DIFFERENCES' if clean is False else 'checked'}")
        print(f"  {report}")
        if clean is False:
            worst = max(worst, 1)
    return worst
