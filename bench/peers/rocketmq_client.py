"""Load from the official RocketMQ 5 Java client (``rocketmq-client-java``, gRPC
``apache.rocketmq.v2``): ``bench/peers/rocketmq_client`` built with Maven, run against an
access point (``rmq serve --rocketmq-port`` or RocketMQ's proxy).

One :class:`V2Load` JVM runs every command of a system's round, warm-up included, so the
client's JIT-compiled code is as warm for the measured runs as the brokers' is."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from bench.basics import DEFAULT_WORK, NotMeasurable
from bench.peers.common import (
    CACHE,
    PEERS_DIR,
    SHARED_JAVA_SOURCES,
    java_available,
    stop_process,
)

CLIENT_VERSION = "5.0.8"  # keep in step with bench/peers/rocketmq_client/pom.xml
SOURCES = PEERS_DIR / "rocketmq_client"
BUILT = CACHE / "rocketmq_client"
JAR = BUILT / "rocketmq-v2-load.jar"
IN_FLIGHT = 128  # unanswered sends a producer keeps going
RECEIVERS = 4  # threads of the SimpleConsumer calling receive
RECEIVE_BATCH = 32  # messages a receive asks for (RocketMQ's proxy's default)
TIMEOUT = 1800.0


def build() -> str:
    """Build the load programs (once per change of their sources); their classpath."""
    java_available()
    inputs = [SOURCES / "pom.xml", *SOURCES.rglob("*.java"), *SHARED_JAVA_SOURCES.rglob("*.java")]
    if JAR.exists() and JAR.stat().st_mtime >= max(p.stat().st_mtime for p in inputs):
        return f"{JAR}:{BUILT / 'lib'}/*"
    print("   building bench/peers/rocketmq_client with Maven ...", flush=True)
    base = ["mvn", "-B", "-q", "-f", str(SOURCES / "pom.xml"), "package"]
    proc = subprocess.run([*base, "-o"], capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:  # offline first; then let Maven fetch what it lacks
        proc = subprocess.run(base, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0 or not JAR.exists():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        raise NotMeasurable(f"Maven could not build bench/peers/rocketmq_client:\n{tail}")
    JAR.touch()
    return f"{JAR}:{BUILT / 'lib'}/*"


class V2Load:
    """The load JVM: started on first use, a command at a time, stopped by ``close()``."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.home: Path | None = None
        self.lines: queue.Queue[str] = queue.Queue()

    def _start(self) -> subprocess.Popen[str]:
        classpath = build()
        DEFAULT_WORK.mkdir(parents=True, exist_ok=True)
        self.home = Path(tempfile.mkdtemp(prefix="v2client-", dir=DEFAULT_WORK))  # its logs
        log = open(self.home / "client.err", "w")  # noqa: SIM115 - lives with the process
        cmd = ["java", "-Xms1g", "-Xmx1g", "-XX:+UseG1GC", f"-Duser.home={self.home}"]
        cmd += ["-cp", classpath, "rmqbench.V2Load"]
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            start_new_session=True,
        )
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(proc, self.lines), daemon=True).start()
        return proc

    @staticmethod
    def _read(proc: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put("")  # the end of its output

    def command(self, words: list[str], what: str) -> dict[str, float]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        assert self.proc.stdin is not None
        self.proc.stdin.write(" ".join(words) + "\n")
        self.proc.stdin.flush()
        try:
            while line := self.lines.get(timeout=TIMEOUT):
                if line.startswith("BENCH_RESULT "):
                    data = json.loads(line[len("BENCH_RESULT ") :])
                    return {k: float(v) for k, v in data.items() if isinstance(v, int | float)}
                if line.startswith("BENCH_ERROR "):
                    raise RuntimeError(f"{what}: {line[len('BENCH_ERROR ') :].strip()}")
        except queue.Empty:
            pass
        code = self.proc.poll()
        assert self.home is not None
        tail = (self.home / "client.err").read_text(errors="replace").strip().splitlines()[-5:]
        self.close()
        raise RuntimeError(f"{what}: no answer from the load JVM (exit {code}): {tail}")

    def produce(self, endpoint: str, topic: str, count: int, body: int) -> dict[str, float]:
        """msgs/s, MB/s and p50/p99 µs of each send (sendAsync, IN_FLIGHT at a time)."""
        words = ["produce", endpoint, topic, str(count), str(body), str(IN_FLIGHT)]
        result = self.command(words, "RocketMQ 5 client producer")
        if result.get("failed"):
            raise RuntimeError(f"RocketMQ 5 client: {result['failed']:.0f} of {count} sends failed")
        return result

    def consume(
        self, endpoint: str, topic: str, count: int, body: int, group: str
    ) -> dict[str, float]:
        """Produce ``count`` (not timed), then receive and ack them all with a
        SimpleConsumer: msgs/s, MB/s and p50/p99 µs of a receive call."""
        words = ["consume", endpoint, topic, str(count), str(body), group]
        words += [str(RECEIVERS), str(RECEIVE_BATCH), str(IN_FLIGHT)]
        result = self.command(words, "RocketMQ 5 client SimpleConsumer")
        if result["messages"] < count:
            raise RuntimeError(
                f"RocketMQ 5 client consumer got {result['messages']:.0f} of {count}"
            )
        if result.get("ack_failed"):
            raise RuntimeError(f"RocketMQ 5 client: {result['ack_failed']:.0f} acks failed")
        return result

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            stop_process(self.proc)
            self.proc = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None
