"""One shard process: opens its shard directories, serves the Shard service, stops cleanly.

Started by the supervisor as ``python -m rmq.cluster.shard ...``; not meant to be run by
hand. It prints ``RMQ-SHARD-READY <port>`` on stdout once its stores are open and its
server listens, logs to stderr, reads the token from ``RMQ_TOKEN``, stops on SIGTERM or
SIGINT, and stops by itself when its supervisor goes away.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grpc_health.v1 import health_pb2

import rmq
from rmq._rmqcore import LeaseBook, ShardServer
from rmq.broker.server import LOOPBACK, Security, build_server
from rmq.broker.servicer import SHARD_SERVICE, shard_service
from rmq.broker.shard_handler import ShardHandler, store_host_for
from rmq.broker.validation import Limits
from rmq.cluster.metrics import serve_shard_metrics
from rmq.cluster.ports import address, bind_problem
from rmq.cluster.protocol import (
    EXIT_CANNOT_LISTEN,
    FAILED_PREFIX,
    METRICS_PREFIX,
    READY_PREFIX,
    TOKEN_ENVIRONMENT,
)
from rmq.cluster.routes import RouteTable
from rmq.cluster.tier import (
    LIVE_STATUS_INTERVAL,
    brief,
    remove_live_status,
    shard_options,
    write_live_status,
)
from rmq.errors import TierError
from rmq.rocketmq.settings import ConsumerPolicy

log = logging.getLogger("rmq.shard")

FLUSH_TYPES = {"async": "ASYNC_FLUSH", "sync": "SYNC_FLUSH"}
EXIT_STORE_FAILED = 3


def shard_directory(data_dir: Path, shard: int) -> Path:
    return data_dir / f"shard-{shard}"


def open_store(path: Path, shard: int, flush: str | None, options: dict[str, Any]) -> rmq.Store:
    """Open one shard directory, asking for the flush mode when the engine offers it.
    A ``tier_url`` in ``options`` is the broker's: the shard's tier is under it."""
    path.mkdir(parents=True, exist_ok=True)
    arguments: dict[str, Any] = {"store_host": store_host_for(shard)}
    arguments.update(shard_options(options, shard))
    if flush:
        arguments["flush_disk_type"] = FLUSH_TYPES[flush]
    try:
        return rmq.Store(path, **arguments)
    except TypeError as error:
        if flush and "flush_disk_type" in str(error):
            log.warning("this engine has no flush modes yet; %s uses its default flush", path)
            del arguments["flush_disk_type"]
            return rmq.Store(path, **arguments)
        raise


def _publish_tier_status(
    stores: dict[int, rmq.Store], data_dir: Path, stop: threading.Event
) -> None:
    """Write each tiered store's ``tier_status()`` for ``rmq tier status`` until stopped."""
    while True:
        for shard, store in stores.items():
            path = shard_directory(data_dir, shard)
            try:
                status = store.tier_status()
                if status is not None:
                    write_live_status(path, status)
            except Exception as error:  # never stops serving; said once per round
                log.warning("cannot publish the tier status of %s: %s", path, error)
        if stop.wait(LIVE_STATUS_INTERVAL):
            break
    for shard in stores:
        remove_live_status(shard_directory(data_dir, shard))


def _watch_parent(parent: int, stop: threading.Event) -> None:
    while not stop.wait(0.5):
        if os.getppid() != parent:
            log.warning("the supervisor (pid %d) is gone; stopping", parent)
            stop.set()


def _native_data_plane(
    args: argparse.Namespace,
    internal_port: int,
    stores: dict[int, rmq.Store],
    limits: Limits,
    security: Security,
    leases: dict[int, LeaseBook] | None,
) -> ShardServer:
    """The engine's own gRPC server on the shard's port: it answers sends and pulls (and
    RocketMQ v2 sends, receives and acks, on ``leases``) and passes every other call to
    the Python server on ``internal_port``."""
    bounds = {name: getattr(limits, name) for name in limits.__dataclass_fields__}
    bounds["max_request_bytes"] = limits.max_request_bytes
    return ShardServer(
        args.host,
        args.port,
        internal_port,
        list(stores.items()),
        bounds,
        token=security.token,
        # Only where the Python server serves apache.rocketmq.v2 too (_serve_rocketmq).
        rocketmq=leases is not None,
        leases=list(leases.items()) if leases is not None else None,
        max_delivery_attempts=_policy(args).max_delivery_attempts,
        tls_cert=security.tls_cert,
        tls_key=security.tls_key,
    )


def _policy(args: argparse.Namespace) -> ConsumerPolicy:
    policy = json.loads(args.rocketmq_policy or "{}")
    policy["fifo_groups"] = frozenset(policy.get("fifo_groups", ()))
    return ConsumerPolicy(**policy)


def _lease_books(
    args: argparse.Namespace, stores: dict[int, rmq.Store]
) -> dict[int, LeaseBook] | None:
    """Each store's RocketMQ v2 lease book, when the process serves RocketMQ v2 clients
    (only where it knows its supervisor, see _serve_rocketmq): one object per store,
    shared by the native data plane and the Python path."""
    if args.rocketmq_policy is None or args.supervisor is None:
        return None
    return {shard: LeaseBook(store) for shard, store in stores.items()}


def _serve_rocketmq(
    args: argparse.Namespace,
    server: Any,
    handler: ShardHandler,
    stores: dict[int, rmq.Store],
    limits: Limits,
    security: Security,
    leases: dict[int, LeaseBook] | None,
) -> list[Any]:
    """Serve ``apache.rocketmq.v2`` beside rmq's API on the same server, when asked; the
    parts to close when stopping."""
    if leases is None:
        return []
    # Imported here: the protocol's generated code loads the official client package.
    from rmq.client import Client
    from rmq.rocketmq.serving import shard_servicer

    supervisor = Client(
        args.supervisor,
        token=security.token,
        tls_root_cert=security.tls_cert,
        server_name=args.tls_server_name,
    )
    servicer, backend, dead_letters = shard_servicer(
        handler, stores, supervisor, limits, _policy(args), leases
    )
    servicer.add_to(server)
    return [backend, dead_letters, supervisor]


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m rmq.cluster.shard", description=__doc__)
    parser.add_argument("--data", type=Path, required=True, help="the broker's data directory")
    parser.add_argument("--process", type=int, default=0, help="this process's index")
    parser.add_argument("--shards", required=True, help="comma-separated shard directories")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--routes", type=Path, required=True)
    parser.add_argument("--flush", choices=sorted(FLUSH_TYPES), default=None)
    parser.add_argument("--store-options", default="{}", help="JSON object of Store options")
    parser.add_argument("--limits", default="{}", help="JSON object of Limits fields")
    parser.add_argument("--tls-cert", type=Path)
    parser.add_argument("--tls-key", type=Path)
    parser.add_argument("--max-workers", type=int, default=64)
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--no-metrics", action="store_true", help="serve no metrics")
    parser.add_argument(
        "--supervisor", help="the supervisor's Route service (for the RocketMQ v2 service)"
    )
    parser.add_argument("--tls-server-name", help="name in the supervisor's certificate")
    parser.add_argument(
        "--rocketmq-policy",
        help="JSON object of ConsumerPolicy fields; serve RocketMQ v2 clients with it",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    logging.basicConfig(
        level=args.log_level,
        format=f"%(asctime)s %(levelname)s shard-{args.process}[%(process)d] %(message)s",
    )
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    shards = [int(s) for s in args.shards.split(",") if s]
    limits = Limits(**json.loads(args.limits))
    security = Security(
        token=os.environ.get(TOKEN_ENVIRONMENT) or None,
        tls_cert=args.tls_cert.read_bytes() if args.tls_cert else None,
        tls_key=args.tls_key.read_bytes() if args.tls_key else None,
    )
    options = json.loads(args.store_options)
    stores: dict[int, rmq.Store] = {}
    path = args.data
    try:
        layouts = RouteTable.load(args.routes).layouts()
        for shard in shards:
            path = shard_directory(args.data, shard)
            started = time.monotonic()
            stores[shard] = open_store(path, shard, args.flush, options)
            report = getattr(stores[shard], "recovery_report", None)
            log.info(
                "opened %s in %.3f s%s",
                path,
                time.monotonic() - started,
                f"; recovery: {report}" if report is not None else "",
            )
        handler = ShardHandler(stores, layouts, limits=limits)
    except TierError as error:
        # A clear reason (wrong credentials, a missing bucket) for the supervisor to show.
        reason = f"cannot open {path} with its tier: {brief(str(error))}"
        log.error("%s", reason)
        print(f"{FAILED_PREFIX} {reason}", flush=True)
        for store in stores.values():
            store.close()
        return EXIT_STORE_FAILED
    except Exception:
        log.exception("cannot open shard directories %s", shards)
        for store in stores.values():
            store.close()
        return EXIT_STORE_FAILED

    leases = _lease_books(args, stores)
    try:
        server, port, health = build_server(
            [shard_service(handler)],
            # Behind the native data plane, the Python server listens on loopback only, in
            # plain text: TLS ends at the data plane.
            host=LOOPBACK,
            port=0,
            security=security.behind_data_plane(),
            limits=limits,
            max_workers=args.max_workers,
        )
        native = _native_data_plane(args, port, stores, limits, security, leases)
    except (OSError, RuntimeError):
        # gRPC's own message names no reason; the supervisor explains the port choice.
        reason = bind_problem(args.host, args.port) or "gRPC could not bind it"
        log.error("cannot listen on %s: %s", address(args.host, args.port), reason)
        handler.close()
        for store in stores.values():
            store.close()
        return EXIT_CANNOT_LISTEN
    handler.attach_native(native)
    port = native.port
    rocketmq = _serve_rocketmq(args, server, handler, stores, limits, security, leases)
    server.start()
    metrics_server: Any = None
    if not args.no_metrics:
        try:
            metrics_server, metrics_port = serve_shard_metrics(
                stores, handler.layouts, options, native=native
            )
            print(f"{METRICS_PREFIX} {metrics_port}", flush=True)
        except OSError as error:  # the shard serves without metrics
            log.warning("cannot serve metrics: %s", error)
    health.set("", health_pb2.HealthCheckResponse.SERVING)
    health.set(SHARD_SERVICE, health_pb2.HealthCheckResponse.SERVING)
    log.info("serving shards %s on %s:%d", shards, args.host, port)
    print(f"{READY_PREFIX} {port}", flush=True)
    threading.Thread(
        target=_watch_parent, args=(os.getppid(), stop), name="parent-watch", daemon=True
    ).start()
    publisher: threading.Thread | None = None
    if any(store.tier_status() is not None for store in stores.values()):
        publisher = threading.Thread(
            target=_publish_tier_status, args=(stores, args.data, stop), name="tier-status"
        )
        publisher.start()

    # Woken now and then: a signal that the kernel gave another thread (as it may to a
    # process stopped and continued) only sets a flag the main thread reads when it runs.
    while not stop.wait(0.5):
        pass
    log.info("stopping")
    if publisher is not None:
        publisher.join()
    health.enter_graceful_shutdown()
    handler.close()
    native.close()
    server.stop(grace=5).wait()
    for part in rocketmq:
        part.close()
    if metrics_server is not None:
        metrics_server.shutdown()
        metrics_server.server_close()
    for shard, store in stores.items():
        try:
            store.close()
        except Exception:
            log.exception("closing shard %d failed", shard)
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
