"""Building a gRPC server: services, health, TLS, the token check and size limits."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from rmq.broker.auth import TokenInterceptor
from rmq.broker.validation import Limits

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class Security:
    """Token and TLS settings shared by the supervisor and its shards."""

    token: str | None = None
    tls_cert: bytes | None = None
    tls_key: bytes | None = None

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("TLS needs both a certificate and its key")

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    def behind_data_plane(self) -> Security:
        """The settings of a Python server behind the native data plane: the same token,
        no TLS (the data plane ends TLS; the Python server listens on loopback only)."""
        return Security(token=self.token)


def server_options(limits: Limits) -> list[tuple[str, int]]:
    return [
        ("grpc.max_receive_message_length", limits.max_request_bytes),
        ("grpc.max_send_message_length", limits.max_pull_bytes + 8 * 1024 * 1024),
        ("grpc.so_reuseport", 0),
    ]


def build_server(
    services: Sequence[grpc.GenericRpcHandler[Any, Any]],
    *,
    host: str,
    port: int,
    security: Security,
    limits: Limits,
    max_workers: int,
) -> tuple[grpc.Server, int, health.HealthServicer]:
    """Create and bind (not start) a server; returns it, the bound port, and its health
    servicer (every service starts NOT_SERVING until the caller says otherwise)."""
    interceptors: list[grpc.ServerInterceptor[Any, Any]] = (
        [TokenInterceptor(security.token)] if security.token else []
    )
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="rpc"),
        handlers=list(services),
        interceptors=interceptors,
        options=server_options(limits),
    )
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    health_servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if security.tls:
        assert security.tls_cert is not None and security.tls_key is not None
        credentials = grpc.ssl_server_credentials([(security.tls_key, security.tls_cert)])
        bound = server.add_secure_port(address, credentials)
    else:
        bound = server.add_insecure_port(address)
    if bound == 0:
        raise OSError(f"cannot listen on {address}")
    return server, bound, health_servicer
