"""The ``rmq`` command line: one module per subcommand, each exporting ``register``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Each module named here defines ``register(subparsers)``, which adds its subcommand and
# sets ``func`` (taking the parsed namespace, returning an exit code) as the default.
SUBCOMMAND_MODULES = [
    "rmq.cli.serve",
    "rmq.cli.topic",
    "rmq.cli.produce",
    "rmq.cli.consume",
    "rmq.cli.query",
    "rmq.cli.inspect",
    "rmq.cli.verify",
    "rmq.cli.rebuild",
    "rmq.cli.tier",
    "rmq.cli.status",
    "rmq.cli.demo",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rmq",
        description="rmq: a message store with RocketMQ-compatible files.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in SUBCOMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
