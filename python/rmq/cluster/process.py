"""A shard process as the supervisor sees it: spawn, readiness, exit, stop."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rmq.cluster.protocol import (
    EXIT_CANNOT_LISTEN,
    FAILED_PREFIX,
    METRICS_PREFIX,
    READY_PREFIX,
    TOKEN_ENVIRONMENT,
)

log = logging.getLogger("rmq.supervisor")


@dataclass
class ShardSettings:
    """Everything a shard process is started with, besides its index and port."""

    data_dir: Path
    routes: Path
    host: str
    flush: str | None = None
    store_options: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    token: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    max_workers: int = 64
    log_level: str = "INFO"
    metrics: bool = True
    # The supervisor's Route service, for the RocketMQ v2 service of the shard process.
    supervisor: str | None = None
    tls_server_name: str | None = None
    # ConsumerPolicy fields (rmq.rocketmq.settings); None serves no RocketMQ v2 clients.
    rocketmq_policy: dict[str, Any] | None = None


class ShardProcess:
    """Not thread-safe: only the supervisor's monitor thread drives it."""

    def __init__(self, index: int, shards: tuple[int, ...], port: int, settings: ShardSettings):
        self.index = index
        self.shards = shards
        self.port = port  # the port asked for; after the first start, the port it got
        self.settings = settings
        self.restarts = -1
        self.started_at = 0.0
        self._popen: subprocess.Popen[bytes] | None = None
        self._ready = threading.Event()
        self._bound_port = 0
        # The loopback port of the process's metrics, once it said it.
        self.metrics_port: int | None = None
        # Why the process last failed to open its stores, as it said on stdout.
        self.failure: str | None = None
        self._reader: threading.Thread | None = None

    @property
    def pid(self) -> int:
        return self._popen.pid if self._popen is not None else 0

    @property
    def endpoint(self) -> str:
        host = self.settings.host
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    def command(self) -> list[str]:
        s = self.settings
        command = [
            sys.executable, "-m", "rmq.cluster.shard",
            "--data", str(s.data_dir),
            "--process", str(self.index),
            "--shards", ",".join(map(str, self.shards)),
            "--host", s.host,
            "--port", str(self.port),
            "--routes", str(s.routes),
            "--store-options", json.dumps(s.store_options),
            "--limits", json.dumps(s.limits),
            "--max-workers", str(s.max_workers),
            "--log-level", s.log_level,
        ]  # fmt: skip
        if s.flush:
            command += ["--flush", s.flush]
        if not s.metrics:
            command.append("--no-metrics")
        if s.tls_cert and s.tls_key:
            command += ["--tls-cert", str(s.tls_cert), "--tls-key", str(s.tls_key)]
        if s.tls_server_name:
            command += ["--tls-server-name", s.tls_server_name]
        if s.supervisor and s.rocketmq_policy is not None:
            command += ["--supervisor", s.supervisor]
            command += ["--rocketmq-policy", json.dumps(s.rocketmq_policy)]
        return command

    def spawn(self) -> None:
        environment = dict(os.environ)
        environment.pop(TOKEN_ENVIRONMENT, None)
        if self.settings.token:
            environment[TOKEN_ENVIRONMENT] = self.settings.token
        self._ready.clear()
        self._bound_port = 0
        self.metrics_port = None
        self.failure = None
        # Its own session: Ctrl-C reaches the supervisor only, which stops shards in order.
        self._popen = subprocess.Popen(
            self.command(), stdout=subprocess.PIPE, env=environment, start_new_session=True
        )
        self.restarts += 1
        self.started_at = time.monotonic()
        assert self._popen.stdout is not None
        self._reader = threading.Thread(
            target=self._read_stdout,
            args=(self._popen.stdout,),
            name=f"shard-{self.index}-stdout",
            daemon=True,
        )
        self._reader.start()
        log.info(
            "started shard process %d (pid %d) for shard directories %s",
            self.index,
            self._popen.pid,
            list(self.shards),
        )

    def _read_stdout(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode(errors="replace").strip()
            if line.startswith(READY_PREFIX):
                self._bound_port = int(line.split()[1])
                self._ready.set()
            elif line.startswith(METRICS_PREFIX):
                self.metrics_port = int(line.split()[1])
            elif line.startswith(FAILED_PREFIX):
                self.failure = line[len(FAILED_PREFIX) :].strip()
        stream.close()

    def exit_reason(self, timeout: float = 1.0) -> str | None:
        """Why an exited process could not open its stores, once its stdout is read."""
        if self._reader is not None:
            self._reader.join(timeout)
        return self.failure

    def ready(self) -> bool:
        """True once the process said it serves; adopts the port it bound."""
        if self._ready.is_set() and self._bound_port:
            self.port = self._bound_port
            return True
        return False

    def exit_code(self) -> int | None:
        return self._popen.poll() if self._popen is not None else None

    def describe_exit(self) -> str:
        code = self.exit_code()
        if code is None:
            return "running"
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        if code == EXIT_CANNOT_LISTEN:
            return f"exited with code {code} (it could not listen on {self.endpoint})"
        return f"exited with code {code}"

    def terminate(self) -> None:
        if self._popen is not None and self._popen.poll() is None:
            # A stopped process (SIGSTOP, a debugger) would hold SIGTERM pending for ever;
            # continued first, it gets SIGTERM as a running process does.
            self._popen.send_signal(signal.SIGCONT)
            self._popen.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self._popen is not None and self._popen.poll() is None:
            self._popen.kill()

    def wait(self, timeout: float) -> bool:
        if self._popen is None:
            return True
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
