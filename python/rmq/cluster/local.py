"""Run a broker as a child process (``rmq serve``) for tests, demos and benchmarks.

    with LocalBroker(tmp_path / "data", shards=2) as broker:
        client = rmq.client.Client(broker.endpoint)

Ports are chosen by the operating system (``--port 0``); the endpoints are read from
``DIR/serve.json``, which the supervisor writes once every shard process serves.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from rmq.cluster.supervisor import STATE_FILE


class LocalBroker:
    def __init__(
        self,
        data_dir: Path,
        *,
        shards: int = 2,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        log: Path | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.shards = shards
        self.args = list(args)
        self.env = env
        self.log_path = log or self.data_dir.parent / f"{self.data_dir.name}-serve.log"
        self.start_timeout = start_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None, "the broker is not running"
        return self._process.pid

    @property
    def endpoint(self) -> str:
        return str(self.state()["endpoint"])

    @property
    def rocketmq_endpoint(self) -> str:
        """The RocketMQ v2 access point (the broker serves one unless told not to)."""
        endpoint = self.state().get("rocketmq")
        assert endpoint, "this broker serves no RocketMQ v2 clients"
        return str(endpoint)

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "rmq", "serve",
            "--data", str(self.data_dir),
            "--shards", str(self.shards),
            "--port", "0",
            *self.args,
        ]  # fmt: skip

    def start(self) -> LocalBroker:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 (closed in stop)
        environment = dict(os.environ if self.env is None else self.env)
        self._process = subprocess.Popen(
            self.command(), stdout=self._log, stderr=subprocess.STDOUT, env=environment
        )
        deadline = time.monotonic() + self.start_timeout
        while True:
            state = self._read_state()
            if state is not None and state.get("pid") == self._process.pid:
                return self
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"rmq serve exited with code {self._process.returncode}:\n{self.log_text()}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"rmq serve did not start in time:\n{self.log_text()}")
            time.sleep(0.05)

    def _read_state(self) -> dict[str, Any] | None:
        try:
            value = json.loads((self.data_dir / STATE_FILE).read_text())
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def state(self) -> dict[str, Any]:
        """The supervisor's serve.json: endpoint, pid and each shard process."""
        state = self._read_state()
        if state is None:
            raise RuntimeError(f"no readable {STATE_FILE} in {self.data_dir}")
        return state

    def shard_pids(self) -> list[int]:
        return [int(p["pid"]) for p in self.state()["processes"]]

    def wait_for(self, predicate: Any, timeout: float = 30.0, what: str = "condition") -> Any:
        """Poll serve.json until ``predicate(state)`` is true; returns the state."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self._read_state()
            if state is not None and predicate(state):
                return state
            time.sleep(0.05)
        raise TimeoutError(f"{what} did not happen within {timeout} s:\n{self.log_text()}")

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-8000:]
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; returns the exit code (SIGKILL after ``timeout``)."""
        process, self._process = self._process, None
        code = 0
        if process is not None:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                code = process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        return code

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(self, *args: object) -> None:
        self.stop()
