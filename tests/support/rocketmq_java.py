"""The official Apache RocketMQ 5 Java client (rocketmq-client-java, gRPC protocol
``apache.rocketmq.v2``) as a command-line tool for tests: the harness in
tests/rocketmq_clients/java/.

``build_harness()`` builds it with Maven once per session (``mvn -B -q``, offline first,
online when the local repository lacks something: tests/support/maven.py);
``JavaClient`` runs its commands against an access point and returns their JSON lines.
Without Java or Maven the tests fail, they are not skipped.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.maven import java_and_maven, maven_package

ROOT = Path(__file__).resolve().parent.parent.parent
HARNESS_DIR = ROOT / "tests" / "rocketmq_clients" / "java"
JAR = HARNESS_DIR / "target" / "rmq-v2client.jar"

# The client starts in about a second; each command adds its own time limit to this.
STARTUP_ALLOWANCE_S = 30
JAVA_OPTIONS = ["-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]

Line = dict[str, Any]


@functools.cache
def build_harness() -> Path:
    """Builds the harness (once per process) and returns its runnable jar."""
    java_and_maven("the RocketMQ 5 Java client tests")
    maven_package(HARNESS_DIR, what="the RocketMQ 5 Java client harness")
    if not JAR.is_file():
        pytest.fail(f"Maven built the RocketMQ 5 Java client harness but {JAR} is missing")
    return JAR


@dataclass(frozen=True)
class Run:
    """One finished command: its JSON lines, exit status and stderr."""

    command: list[str]
    returncode: int
    lines: list[Line]
    stderr: str
    log_file: Path

    @property
    def items(self) -> list[Line]:
        """The per-message lines (receipts, deliveries), without the final summary."""
        return [line for line in self.lines if "done" not in line and "error" not in line]

    @property
    def done(self) -> Line:
        """The final summary line (``{"done": true, ...}``)."""
        for line in reversed(self.lines):
            if line.get("done"):
                return line
        raise JavaClientFailed(self, "no summary line")

    @property
    def error(self) -> Line | None:
        """The client's failure (``{"error": class, "message", "causes"}``), if any."""
        return next((line for line in self.lines if "error" in line), None)

    def log(self) -> str:
        """The client's own log of this run (empty if it wrote none)."""
        try:
            return self.log_file.read_text(errors="replace")
        except OSError:
            return ""

    def describe(self) -> str:
        """The command, its output and the end of the client's log, for failure messages."""
        shown = "\n".join(json.dumps(line) for line in self.lines[-20:])
        # Stack frames are in the log file; the messages around them are what helps here.
        log = [line for line in self.log().splitlines() if not line.startswith("\tat ")]
        return (
            f"$ {' '.join(self.command)}\nexit {self.returncode}\n"
            f"stdout (last 20 lines):\n{shown}\nstderr (tail):\n{self.stderr[-3000:]}\n"
            f"client log {self.log_file} (last 30 lines, no stack frames):\n" + "\n".join(log[-30:])
        )


class JavaClientFailed(AssertionError):
    """A command of the Java client failed; the message shows what it printed."""

    def __init__(self, run: Run, why: str) -> None:
        super().__init__(f"RocketMQ Java client: {why}\n{run.describe()}")
        self.run = run


class JavaClient:
    """Runs the harness's commands against the access point ``endpoint`` (``host:port``).

    Each run logs in a directory of its own under ``log_dir`` (``NNN-command/``, the
    client's rocketmq-client.log at ``log_level``); failure messages show its end. With
    ``tls`` every command connects over TLS (``--tls``).
    """

    def __init__(
        self, jar: Path, endpoint: str, log_dir: Path, log_level: str = "info", tls: bool = False
    ) -> None:
        java = shutil.which("java")
        if java is None:
            pytest.fail("the RocketMQ 5 Java client tests need java (17+) on PATH")
        self.java = java
        self.jar = jar
        self.endpoint = endpoint
        self.log_dir = log_dir
        self.log_level = log_level
        self.tls = tls
        self._runs = 0

    def run(
        self,
        command: str,
        topic: str,
        options: Mapping[str, str | int | bool | Sequence[str] | None],
        timeout: float,
        check: bool = True,
    ) -> Run:
        """``command --endpoint E --topic T`` with ``options`` (``name_with_underscores``:
        ``True`` is a bare flag, a sequence repeats the option, ``None``/``False`` leave it
        out). With ``check``, a non-zero exit or a missing summary line raises."""
        args = [command, "--endpoint", self.endpoint, "--topic", topic]
        if self.tls:
            args.append("--tls")
        for name, value in options.items():
            flag = "--" + name.replace("_", "-")
            if value is None or value is False:
                continue
            if value is True:
                args.append(flag)
            elif isinstance(value, str | int):
                args += [flag, str(value)]
            else:
                for item in value:
                    args += [flag, item]
        self._runs += 1
        logs = self.log_dir / f"{self._runs:03d}-{command}"
        logging = [
            f"-Drocketmq.log.root={logs}",
            f"-Drocketmq.log.level={self.log_level}",
            "-Dmq.consoleAppender.enabled=false",
        ]
        full = [self.java, *JAVA_OPTIONS, *logging, "-jar", str(self.jar), *args]
        log_file = logs / "rocketmq-client.log"
        try:
            done = subprocess.run(
                full, capture_output=True, timeout=timeout + STARTUP_ALLOWANCE_S, check=False
            )
        except subprocess.TimeoutExpired as expired:
            stdout, stderr = _parse(expired.stdout or b""), _text(expired.stderr or b"")
            run = Run(full, -1, stdout, stderr, log_file)
            raise JavaClientFailed(run, f"timed out after {expired.timeout:.0f} s") from None
        run = Run(full, done.returncode, _parse(done.stdout), _text(done.stderr), log_file)
        if check and run.returncode != 0:
            raise JavaClientFailed(run, f"{command} exited {run.returncode}")
        if check and not any(line.get("done") for line in run.lines):
            raise JavaClientFailed(run, f"{command} printed no summary line")
        return run

    def produce(
        self,
        topic: str,
        count: int,
        *,
        async_send: bool = False,
        tag: str | None = None,
        keys: Sequence[str] = (),
        message_group: str | None = None,
        properties: Mapping[str, str] | None = None,
        body_prefix: str | None = None,
        size: int | None = None,
        timeout: float = 60,
        check: bool = True,
    ) -> Run:
        """Sends ``count`` messages with bodies ``PREFIX-i``; one receipt line each
        (``i``, ``message_id``, ``offset``, ``broker``, ``client_queue_id``), then
        ``{"done", "sent", "seconds"}``."""
        options: dict[str, str | int | bool | Sequence[str] | None] = {
            "count": count,
            "async": async_send,
            "tag": tag,
            "keys": ",".join(keys) if keys else None,
            "message_group": message_group,
            "property": [f"{k}={v}" for k, v in (properties or {}).items()],
            "body_prefix": body_prefix,
            "size": size,
        }
        return self.run("produce", topic, options, timeout, check)

    def simple_consume(
        self,
        topic: str,
        group: str,
        count: int,
        *,
        invisible_seconds: int | None = None,
        max_seconds: int = 30,
        ack: bool = True,
        tag_filter: str | None = None,
        await_seconds: int | None = None,
        check: bool = True,
    ) -> Run:
        """A SimpleConsumer receives until ``count`` messages or ``max_seconds``; one line
        per message, acked unless ``ack`` is false, then ``{"done", "received"}``."""
        options: dict[str, str | int | bool | Sequence[str] | None] = {
            "group": group,
            "count": count,
            "invisible_seconds": invisible_seconds,
            "max_seconds": max_seconds,
            "no_ack": not ack,
            "tag_filter": tag_filter,
            "await_seconds": await_seconds,
        }
        return self.run("simple-consume", topic, options, max_seconds, check)

    def push_consume(
        self,
        topic: str,
        group: str,
        count: int,
        *,
        max_seconds: int = 30,
        fail_first: int = 0,
        tag_filter: str | None = None,
        check: bool = True,
    ) -> Run:
        """A PushConsumer until ``count`` successful consumptions or ``max_seconds``; one
        line per delivery with its ``result`` (FAILURE for the first ``fail_first``
        deliveries of each message), then ``{"done", "consumed", "deliveries", "complete",
        "closed"}`` (a second for the acks, then at most 3 s for closing: the client waits for
        its receives in flight, which the broker may hold for its long-polling time)."""
        options: dict[str, str | int | bool | Sequence[str] | None] = {
            "group": group,
            "count": count,
            "max_seconds": max_seconds,
            "fail_first": fail_first or None,
            "tag_filter": tag_filter,
        }
        return self.run("push-consume", topic, options, max_seconds, check)

    def redeliver(
        self,
        topic: str,
        group: str,
        invisible_seconds: int,
        *,
        max_seconds: int | None = None,
        check: bool = True,
    ) -> Run:
        """Receives one message without acking it, then until it comes back; lines with
        ``delivery`` 1 and 2 (others: ``"other"``), then ``{"done", "redelivered"}``."""
        limit = max_seconds if max_seconds is not None else 3 * invisible_seconds + 20
        options: dict[str, str | int | bool | Sequence[str] | None] = {
            "group": group,
            "invisible_seconds": invisible_seconds,
            "max_seconds": limit,
        }
        return self.run("redeliver", topic, options, limit, check)


def _text(data: bytes | str) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def _parse(stdout: bytes | str) -> list[Line]:
    lines = []
    for text in _text(stdout).splitlines():
        if text.strip():
            try:
                lines.append(json.loads(text))
            except json.JSONDecodeError:
                lines.append({"unparsed": text})
    return lines
