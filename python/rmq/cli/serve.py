"""``rmq serve``: run the sharded broker (a supervisor and its shard processes)."""

from __future__ import annotations

import argparse
import logging
import os
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rmq.broker.validation import Limits
from rmq.cluster.metrics import DEFAULT_METRICS_PORT
from rmq.cluster.rocketmq_access_point import DEFAULT_ROCKETMQ_PORT
from rmq.cluster.tier import TIER_OPTIONS

DEFAULT_DATA_DIR = "rmq-data"
DEFAULT_PORT = 8081
_DEFAULTS = Limits()


def _store_option(text: str) -> tuple[str, Any]:
    name, separator, value = text.partition("=")
    if not separator or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    parsed: Any = value
    if value.lower() in ("true", "false"):
        parsed = value.lower() == "true"
    else:
        for kind in (int, float):
            try:
                parsed = kind(value)
                break
            except ValueError:
                continue
    return name.replace("-", "_"), parsed


def _ports(text: str) -> list[int]:
    try:
        return [int(p) for p in text.split(",")]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated port list") from error


def _tier_url(text: str) -> str:
    bucket = text.removeprefix("s3://").split("/", 1)[0]
    if not text.startswith("s3://") or not bucket:
        raise argparse.ArgumentTypeError(f"{text!r} is not s3://BUCKET/PREFIX")
    return text


def _non_negative(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            value = -1
        if value < 0:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number >= 0")
        return value

    return parse


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return value


def tier_options(args: argparse.Namespace) -> dict[str, Any]:
    """The rmq.Store tier keywords of the tier flags given; tier flags without
    ``--tier-url`` raise ValueError."""
    given = {name: getattr(args, name) for name in TIER_OPTIONS if getattr(args, name) is not None}
    if given and "tier_url" not in given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        verb = "applies" if len(given) == 1 else "apply"
        raise ValueError(f"{flags} only {verb} with --tier-url s3://BUCKET/PREFIX")
    return given


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the sharded broker",
        description=(
            "Run the broker: a supervisor that serves routes, topic admin and health on "
            "--port, and --shards shard processes, each serving the Shard service for its "
            "own store directory DATA/shard-N. Queues of a topic are spread over the "
            "shards; the assignment is kept in DATA/routes.json, so a restart with another "
            "shard count keeps every message reachable. A shard process that dies is "
            "restarted. Stop with Ctrl-C or SIGTERM."
        ),
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get("RMQ_DATA", DEFAULT_DATA_DIR)),
        help=f"data directory (default: $RMQ_DATA or ./{DEFAULT_DATA_DIR})",
    )
    parser.add_argument(
        "--shards",
        type=int,
        default=os.cpu_count() or 1,
        help="number of shard processes (default: the number of cores)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: loopback only; use 0.0.0.0 with --token and TLS)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port of the route/admin/health service (default: {DEFAULT_PORT}; 0: any free "
        "port, for the shard processes too); shard processes listen on the ports after it",
    )
    parser.add_argument(
        "--shard-ports",
        type=_ports,
        help="comma-separated ports of the shard processes (default: PORT+1, PORT+2, ...)",
    )
    parser.add_argument(
        "--metrics-port",
        type=_non_negative(int),
        metavar="N",
        help=f"serve Prometheus metrics on http://METRICS_HOST:N/metrics (default: "
        f"{DEFAULT_METRICS_PORT}; with --port 0, any free port, written to DATA/serve.json; "
        "0: no metrics endpoint). One endpoint for the whole broker: the supervisor "
        "gathers every shard process's metrics on each scrape; see `rmq status`",
    )
    parser.add_argument(
        "--rocketmq-port",
        type=_non_negative(int),
        metavar="N",
        help=f"serve Apache RocketMQ 5 clients (the apache.rocketmq.v2 gRPC protocol) with "
        f"N as their access point (default: {DEFAULT_ROCKETMQ_PORT}; with --port 0, any free "
        "port, written to DATA/serve.json; 0: none). Clients send and receive at the shard "
        "processes' ports, which the routes name",
    )
    parser.add_argument(
        "--rocketmq-max-delivery-attempts",
        type=_positive_int,
        default=16,
        metavar="N",
        help="deliveries of a message to a RocketMQ consumer group before it moves to the "
        "group's %%DLQ%% topic (default: 16)",
    )
    parser.add_argument(
        "--rocketmq-fifo-group",
        action="append",
        default=[],
        metavar="GROUP",
        help="a RocketMQ consumer group that consumes in message-group order (FIFO); repeatable",
    )
    parser.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="address of the metrics endpoint (default: loopback only; it has no token)",
    )
    parser.add_argument(
        "--flush",
        choices=["async", "sync"],
        help="flush mode of the stores: sync acknowledges a send once it is on disk",
    )
    parser.add_argument(
        "--consume-queue",
        choices=["file", "rocksdb"],
        help="consume-queue form of new shard stores: files of 20-byte entries (the "
        "default) or RocketMQ 5's RocksDB consume queue, for very many queues; existing "
        "shards keep the form they were created with",
    )
    parser.add_argument(
        "--store-option",
        type=_store_option,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra rmq.Store option, e.g. commitlog_segment_size=67108864 (repeatable)",
    )
    tier = parser.add_argument_group(
        "object-storage tier",
        "Sealed commit-log segments are uploaded to an S3-compatible bucket; their local "
        "copies go once past the local retention (or when the disk passes "
        "disk_max_used_space_ratio) and reads of them are served from the bucket. Each "
        "shard directory shard-N has its own prefix, URL/shard-N. Credentials come from "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) in the "
        "environment, never from flags. A store that has a tier keeps it: a restart "
        "without --tier-url reopens it with the endpoint and region it recorded.",
    )
    tier.add_argument(
        "--tier-url",
        type=_tier_url,
        metavar="s3://BUCKET/PREFIX",
        help="the bucket and prefix of the tier (shard N uses PREFIX/shard-N)",
    )
    tier.add_argument(
        "--tier-endpoint",
        metavar="URL",
        help="the S3-compatible server, e.g. http://127.0.0.1:9000 (default: AWS S3)",
    )
    tier.add_argument(
        "--tier-region",
        metavar="REGION",
        help="the bucket's region (default: $AWS_REGION, else us-east-1)",
    )
    tier.add_argument(
        "--local-retention-bytes",
        type=_non_negative(int),
        metavar="N",
        help="keep local copies of uploaded segments up to N bytes per shard, newest first "
        "(default: no byte limit)",
    )
    tier.add_argument(
        "--local-retention-hours",
        type=_non_negative(float),
        metavar="H",
        help="and no longer than H hours after they were last written (default: no time limit)",
    )
    tier.add_argument(
        "--tier-retention-hours",
        type=_non_negative(float),
        metavar="H",
        help="delete a segment from the tier H hours after it was last written (default: "
        "the store's file_reserved_time_ms, 72 hours)",
    )
    parser.add_argument(
        "--max-batch-messages",
        type=int,
        default=_DEFAULTS.max_batch_messages,
        help="most messages in one send (default: %(default)s)",
    )
    parser.add_argument(
        "--max-batch-bytes",
        type=int,
        default=_DEFAULTS.max_batch_bytes,
        help="most body bytes in one send (default: %(default)s)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("RMQ_TOKEN"),
        help="require this bearer token on every request (default: $RMQ_TOKEN)",
    )
    parser.add_argument("--tls-cert", type=Path, help="PEM certificate chain: serve over TLS")
    parser.add_argument("--tls-key", type=Path, help="PEM private key of --tls-cert")
    parser.add_argument(
        "--tls-server-name",
        help="name in the certificate, for the supervisor's own calls to its shards",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default: INFO)")
    parser.set_defaults(func=run)


def tls_problem(cert: Path, key: Path) -> str | None:
    """Why ``cert`` and ``key`` cannot serve TLS, or None: checked before anything
    listens, since the servers' own errors do not name the files."""
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except FileNotFoundError as error:
        return f"cannot read {error.filename}: no such file"
    except (ssl.SSLError, OSError) as error:
        return (
            f"--tls-cert {cert} and --tls-key {key} are not a PEM certificate chain and its "
            f"key ({error})"
        )
    return None


def run(args: argparse.Namespace) -> int:
    from rmq.cluster.config import ServeConfig
    from rmq.cluster.supervisor import serve

    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s supervisor[%(process)d] %(message)s",
    )
    if (args.tls_cert is None) != (args.tls_key is None):
        logging.error("--tls-cert and --tls-key go together")
        return 2
    if args.tls_cert is not None:
        problem = tls_problem(args.tls_cert, args.tls_key)
        if problem:
            logging.error("%s", problem)
            return 2
    store_options = dict(args.store_option)
    try:
        store_options.update(tier_options(args))
    except ValueError as error:
        logging.error("%s", error)
        return 2
    if args.consume_queue is not None:
        store_options["consume_queue_type"] = args.consume_queue
    limits = Limits(
        max_batch_messages=args.max_batch_messages,
        max_batch_bytes=args.max_batch_bytes,
        max_body_bytes=int(store_options.get("max_message_size", _DEFAULTS.max_body_bytes)),
    )
    metrics_port: int | None = args.metrics_port
    if metrics_port is None:
        metrics_port = 0 if args.port == 0 else DEFAULT_METRICS_PORT
    elif metrics_port == 0:
        metrics_port = None
    rocketmq_port: int | None = args.rocketmq_port
    if rocketmq_port is None:
        rocketmq_port = 0 if args.port == 0 else DEFAULT_ROCKETMQ_PORT
    elif rocketmq_port == 0:
        rocketmq_port = None
    config = ServeConfig(
        data_dir=args.data,
        shards=args.shards,
        host=args.host,
        port=args.port,
        shard_ports=args.shard_ports,
        flush=args.flush,
        store_options=store_options,
        limits=limits,
        token=args.token,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_server_name=args.tls_server_name,
        log_level=args.log_level.upper(),
        metrics_port=metrics_port,
        metrics_host=args.metrics_host,
        rocketmq_port=rocketmq_port,
        rocketmq_policy={
            "max_delivery_attempts": args.rocketmq_max_delivery_attempts,
            "fifo_groups": sorted(set(args.rocketmq_fifo_group)),
        },
    )
    return serve(config)
