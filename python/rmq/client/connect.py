"""Connection options shared by the client subcommands of the ``rmq`` command line."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rmq.client.client import DEFAULT_ENDPOINT, Client


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--endpoint",
        default=os.environ.get("RMQ_ENDPOINT", DEFAULT_ENDPOINT),
        help=f"the broker's route service (default: $RMQ_ENDPOINT or {DEFAULT_ENDPOINT})",
    )
    group.add_argument(
        "--token",
        default=os.environ.get("RMQ_TOKEN"),
        help="bearer token of the broker (default: $RMQ_TOKEN)",
    )
    group.add_argument("--tls-ca", type=Path, help="PEM certificate to trust: connect over TLS")
    group.add_argument("--tls", action="store_true", help="connect over TLS with system roots")
    group.add_argument("--tls-server-name", help="name to check in the broker's certificate")
    group.add_argument(
        "--timeout", type=float, default=30.0, help="seconds per call (default: %(default)s)"
    )


def client_from_args(args: argparse.Namespace) -> Client:
    return Client(
        args.endpoint,
        token=args.token,
        tls=args.tls,
        tls_root_cert=args.tls_ca,
        server_name=args.tls_server_name,
        timeout=args.timeout,
        retry_timeout=args.timeout,
    )
