"""The supervisor's RocketMQ v2 access point (``--rocketmq-port``): where the official
clients ask for routes, assignments and settings. Messages themselves go to the shard
processes that the routes name."""

from __future__ import annotations

from typing import Any

from grpc_health.v1 import health_pb2

from rmq.broker.server import Security, build_server
from rmq.cluster.config import ServeConfig
from rmq.cluster.route_service import RouteService

DEFAULT_ROCKETMQ_PORT = 8181


class RocketMQAccessPoint:
    def __init__(self, routes: RouteService, config: ServeConfig, security: Security) -> None:
        self._routes = routes
        self._config = config
        self._security = security
        self._server: Any = None
        self._health: Any = None

    def listen(self) -> str:
        """Bind (not serve yet); the endpoint. Raises ``OSError`` or ``RuntimeError``."""
        # Imported here: the protocol's generated code loads the official client package.
        from rmq.rocketmq.serving import supervisor_servicer
        from rmq.rocketmq.settings import ConsumerPolicy
        from rmq.rocketmq.wire import SERVICE_NAME

        config = self._config
        assert config.rocketmq_port is not None
        server, port, health = build_server(
            [],
            host=config.host,
            port=config.rocketmq_port,
            security=self._security,
            limits=config.limits,
            max_workers=config.max_workers,
        )
        policy = dict(config.rocketmq_policy)
        policy["fifo_groups"] = frozenset(policy.get("fifo_groups", ()))
        supervisor_servicer(self._routes, config.limits, ConsumerPolicy(**policy)).add_to(server)
        self._server, self._health, self._service = server, health, SERVICE_NAME
        host = config.host
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def start(self) -> None:
        self._server.start()
        self._health.set("", health_pb2.HealthCheckResponse.SERVING)
        self._health.set(self._service, health_pb2.HealthCheckResponse.SERVING)

    def stop(self) -> None:
        if self._server is not None:
            self._health.enter_graceful_shutdown()
            self._server.stop(grace=2).wait()
            self._server = None
