"""What the supervisor serves besides running processes: the Route service on
``--port`` (routes and topic admin, :mod:`rmq.cluster.route_service`), the RocketMQ v2
access point on ``--rocketmq-port`` and the Prometheus endpoint on ``--metrics-port``.

They are bound before the shard processes start (the shards are told where routes are)
and start answering once every shard process serves. A port that cannot be bound is a
:class:`StartError` that names it and says what to do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from rmq.broker.route_handler import ProcessInfo
from rmq.broker.server import Security
from rmq.cluster.config import ServeConfig
from rmq.cluster.metrics import BrokerMetrics, ShardEndpoint
from rmq.cluster.ports import bind_problem
from rmq.cluster.rocketmq_access_point import RocketMQAccessPoint
from rmq.cluster.route_service import RouteService
from rmq.cluster.routes import RouteTable
from rmq.cluster.shard_admin import ShardAdmin

log = logging.getLogger("rmq.supervisor")


class StartError(RuntimeError):
    """The broker could not start; the message says why."""


class FrontDoors:
    """The supervisor's own servers. Not thread-safe: the supervisor calls it from the
    thread that starts and stops the broker."""

    def __init__(self, config: ServeConfig) -> None:
        self._config = config
        self._route_service: RouteService | None = None
        self._rocketmq: RocketMQAccessPoint | None = None
        self._metrics: BrokerMetrics | None = None
        self.endpoint = ""
        self.rocketmq_endpoint: str | None = None
        self.metrics_url: str | None = None

    def security(self) -> Security:
        config = self._config
        return Security(
            token=config.token,
            tls_cert=config.tls_cert.read_bytes() if config.tls_cert else None,
            tls_key=config.tls_key.read_bytes() if config.tls_key else None,
        )

    def metrics_port_problem(self, broker_ports: list[int]) -> str | None:
        """Why ``--metrics-port`` cannot be served, checked before anything starts."""
        config = self._config
        port = config.metrics_port
        if not port:
            return None
        host = config.metrics_host
        if port in broker_ports and host == config.host:
            return f"--metrics-port {port} is also a port of the broker; choose another"
        reason = bind_problem(host, port)
        if reason is None:
            return None
        return (
            f"cannot serve metrics on {host}:{port}: {reason}; choose a free port with "
            "--metrics-port (0: no metrics endpoint)"
        )

    def listen(
        self,
        routes_problem: Callable[[str], str],
        routes: RouteTable,
        admin: ShardAdmin,
        processes: Callable[[], list[ProcessInfo]],
    ) -> None:
        """Bind the Route service and the RocketMQ access point (not answering yet).
        ``routes_problem(reason)`` says what to do about a taken ``--port``."""
        config = self._config
        security = self.security()
        service = RouteService(config.data_dir.resolve(), routes, admin, processes)
        try:
            self.endpoint = service.listen(config.host, config.port, security, config.limits)
        except (OSError, RuntimeError) as error:
            # Taken since the ports were checked (gRPC's own message names no reason).
            reason = bind_problem(config.host, config.port) or "gRPC could not bind it"
            raise StartError(routes_problem(reason)) from error
        self._route_service = service
        if config.rocketmq_port is None:
            return
        self._rocketmq = RocketMQAccessPoint(service, config, security)
        try:
            self.rocketmq_endpoint = self._rocketmq.listen()
        except (OSError, RuntimeError) as error:
            reason = bind_problem(config.host, config.rocketmq_port) or "gRPC could not bind it"
            raise StartError(
                f"cannot serve RocketMQ clients on {config.host}:{config.rocketmq_port}: "
                f"{reason}; choose a free port with --rocketmq-port (0: none)"
            ) from error

    def serve(self, shards_serving: bool) -> None:
        """Start answering routes, admin and RocketMQ v2 clients."""
        assert self._route_service is not None, "listen first"
        self._route_service.serve(shards_serving=shards_serving)
        if self._rocketmq is not None:
            self._rocketmq.start()

    def serve_metrics(self, shards: Callable[[], list[ShardEndpoint]]) -> None:
        """Serve the Prometheus endpoint (rmq.cluster.metrics) on ``--metrics-port``."""
        config = self._config
        if config.metrics_port is None:
            return
        metrics = BrokerMetrics(shards)
        try:
            self.metrics_url = metrics.start(config.metrics_host, config.metrics_port)
        except OSError as error:
            metrics.stop()
            raise StartError(
                f"cannot serve metrics on {config.metrics_host}:{config.metrics_port}: "
                f"{error.strerror or error}; choose a free port with --metrics-port "
                "(0: no metrics endpoint)"
            ) from error
        self._metrics = metrics
        log.info("metrics on %s", self.metrics_url)

    def set_shards_serving(self, serving: bool) -> None:
        if self._route_service is not None:
            self._route_service.set_shards_serving(serving)

    @property
    def bound(self) -> bool:
        return self._route_service is not None

    def stop(self) -> None:
        if self._metrics is not None:
            self._metrics.stop()
            self._metrics = None
        if self._rocketmq is not None:
            self._rocketmq.stop()
            self._rocketmq = None
        if self._route_service is not None:
            self._route_service.stop()
