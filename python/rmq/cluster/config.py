"""What ``rmq serve`` is asked for: :class:`ServeConfig`, read by the supervisor."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmq.broker.server import LOOPBACK
from rmq.broker.validation import Limits


@dataclass
class ServeConfig:
    data_dir: Path
    shards: int
    host: str = LOOPBACK
    port: int = 8081
    # Ports of the shard processes; None means port+1, port+2, ... (or any free port
    # when port is 0).
    shard_ports: Sequence[int] | None = None
    flush: str | None = None
    store_options: dict[str, Any] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    token: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # Name checked in the certificate when the supervisor calls its shards over TLS.
    tls_server_name: str | None = None
    max_workers: int = 64
    log_level: str = "INFO"
    # The Prometheus endpoint (rmq.cluster.metrics): None serves none, 0 any free port.
    metrics_port: int | None = None
    metrics_host: str = LOOPBACK
    # The RocketMQ v2 access point (rmq.rocketmq): None serves none, 0 any free port.
    rocketmq_port: int | None = None
    # ConsumerPolicy fields for RocketMQ v2 consumer groups.
    rocketmq_policy: dict[str, Any] = field(default_factory=dict)
