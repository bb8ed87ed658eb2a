"""gRPC channels with rmq's settings: message sizes, quick reconnects, TLS, the token."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import grpc

# Reconnect quickly: a restarted shard is back on the same port within a second or two.
CHANNEL_OPTIONS: list[tuple[str, int | str]] = [
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.enable_retries", 0),
]


@dataclass(frozen=True, slots=True)
class Credentials:
    """How a client proves itself and checks the server.

    ``tls_root_cert`` (PEM) turns TLS on; ``server_name`` overrides the name checked in
    the server's certificate (useful when connecting by IP address).
    """

    token: str | None = None
    tls: bool = False
    tls_root_cert: bytes | None = None
    server_name: str | None = None

    @property
    def metadata(self) -> Sequence[tuple[str, str]]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()


def open_channel(endpoint: str, credentials: Credentials) -> grpc.Channel:
    options = list(CHANNEL_OPTIONS)
    if credentials.tls or credentials.tls_root_cert is not None:
        if credentials.server_name:
            options.append(("grpc.ssl_target_name_override", credentials.server_name))
        secure = grpc.ssl_channel_credentials(root_certificates=credentials.tls_root_cert)
        return grpc.secure_channel(endpoint, secure, options=options)
    return grpc.insecure_channel(endpoint, options=options)
