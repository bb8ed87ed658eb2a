"""The supervisor's Route service: routes, topic admin and the cluster view, served over
gRPC with health.

:class:`RouteService` is the :class:`rmq.broker.route_handler.Cluster` that the Route
handler talks to. It keeps the queue assignment (``routes.json``, see
:mod:`rmq.cluster.routes`), has the shard processes host or drop topics through
:class:`rmq.cluster.shard_admin.ShardAdmin`, and learns from the supervisor which shard
processes there are, where they listen and whether they serve.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from rmq import errors
from rmq.broker.route_handler import ProcessInfo, RouteHandler
from rmq.broker.server import Security, build_server
from rmq.broker.servicer import ROUTE_SERVICE, SHARD_SERVICE, route_service
from rmq.broker.validation import Limits
from rmq.cluster.routes import RouteTable
from rmq.cluster.shard_admin import ShardAdmin

log = logging.getLogger("rmq.supervisor")


class RouteService:
    """Topic admin calls are serialized by a lock."""

    def __init__(
        self,
        data_dir: Path,
        routes: RouteTable,
        admin: ShardAdmin,
        processes: Callable[[], list[ProcessInfo]],
    ) -> None:
        self._data_dir = data_dir
        self._routes = routes
        self._admin = admin
        self._processes = processes
        self._admin_lock = threading.Lock()
        self._server: grpc.Server | None = None
        self._health: Any = None

    # ---- Cluster protocol (for RouteHandler) ----

    @property
    def data_dir(self) -> str:
        return str(self._data_dir)

    def topics(self) -> list[str]:
        return self._routes.topics()

    def layout(self, topic: str) -> Sequence[int]:
        return self._routes.layout(topic)

    def endpoint_of(self, shard: int) -> str:
        return self._process_of(shard).endpoint

    def create_topic(self, topic: str, queues: int) -> Sequence[int]:
        with self._admin_lock:
            try:
                before = self._routes.layout(topic)
            except errors.NotFoundError:
                before = []
            if len(before) >= queues:
                return before
            candidates = [info.process for info in self._processes()]
            layout = self._routes.grow(topic, queues, candidates)
            self._routes.save()
            log.info("topic %s: %d queues on shards %s", topic, len(layout), layout)
            self._admin.host_topic(self._serving(), topic, layout)
            return layout

    def delete_topic(self, topic: str) -> None:
        with self._admin_lock:
            self._routes.remove(topic)
            self._routes.save()
            log.info("deleted topic %s", topic)
            self._admin.drop_topic(self._serving(), topic)

    def queue_offsets(self, topic: str, queue_id: int) -> tuple[int, int]:
        """The queue's offsets from its shard process; (-1, -1) when it cannot say."""
        layout = self._routes.layout(topic)
        process = self._process_of(layout[queue_id])
        try:
            return self._admin.queue_offsets(process.process, topic, queue_id)
        except errors.RmqError:
            return -1, -1

    def processes(self) -> list[ProcessInfo]:
        return self._processes()

    def _process_of(self, shard: int) -> ProcessInfo:
        for info in self._processes():
            if shard in info.shards:
                return info
        raise errors.NotFoundError(f"no shard process serves shard directory {shard}")

    def _serving(self) -> list[int]:
        return [info.process for info in self._processes() if info.serving]

    # ---- the gRPC server ----

    def listen(self, host: str, port: int, security: Security, limits: Limits) -> str:
        """Bind the Route service's server (not serving yet); its endpoint. Raises
        ``OSError`` or ``RuntimeError`` when it cannot bind."""
        server, bound, health = build_server(
            [route_service(RouteHandler(self, limits))],
            host=host,
            port=port,
            security=security,
            limits=limits,
            max_workers=16,
        )
        self._server, self._health = server, health
        return f"[{host}]:{bound}" if ":" in host else f"{host}:{bound}"

    def serve(self, shards_serving: bool) -> None:
        """Start answering; health says SERVING for routes, and for shards if
        ``shards_serving``."""
        assert self._server is not None and self._health is not None, "listen first"
        self._server.start()
        self._health.set("", health_pb2.HealthCheckResponse.SERVING)
        self._health.set(ROUTE_SERVICE, health_pb2.HealthCheckResponse.SERVING)
        self.set_shards_serving(shards_serving)

    def set_shards_serving(self, serving: bool) -> None:
        """Health of the Shard service: SERVING while every shard process serves."""
        if self._health is not None:
            self._health.set(
                SHARD_SERVICE,
                health_pb2.HealthCheckResponse.SERVING
                if serving
                else health_pb2.HealthCheckResponse.NOT_SERVING,
            )

    def stop(self) -> None:
        if self._health is not None:
            self._health.enter_graceful_shutdown()
        if self._server is not None:
            self._server.stop(grace=2).wait()
