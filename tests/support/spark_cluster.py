"""A Spark standalone master and worker on loopback, and the command line of a streaming
job (tests/support/spark_stream_job.py) run in a child driver process against them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parent.parent.parent


def job_command(master: str, endpoint: str, topic: str, out: Path, checkpoint: Path) -> list[str]:
    return [
        sys.executable, "-m", "tests.support.spark_stream_job", "--master", master,
        "--endpoint", endpoint, "--topic", topic, "--out", str(out),
        "--checkpoint", str(checkpoint),
    ]  # fmt: skip


def job_env() -> dict[str, str]:
    """This process's environment with rmq and the tests importable from ``ROOT``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), str(ROOT), *sys.path])
    return env


class Daemon:
    """A Spark standalone daemon (master or worker) started with ``spark-class``."""

    def __init__(self, log: Path, *args: str) -> None:
        spark_home = Path(pyspark.__file__).parent
        env = dict(os.environ, SPARK_HOME=str(spark_home), SPARK_DAEMON_MEMORY="256m")
        env.update(SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=job_env()["PYTHONPATH"])
        self.log = log
        self._file = log.open("wb")
        self.process = subprocess.Popen(
            [str(spark_home / "bin" / "spark-class"), *args],
            stdout=self._file,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def wait_for_line(self, pattern: str, timeout: float = 90) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.log.read_text(errors="replace"))
            if found:
                return found
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"no {pattern!r} in {self.log}:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._file.close()


class StandaloneCluster(threading.Thread):
    """A Spark standalone master and one worker (one core) on loopback, started in the
    background (``url`` once ``join`` returns) while the test does other things."""

    def __init__(self, directory: Path) -> None:
        super().__init__(daemon=True)
        self.directory = directory
        self.daemons: list[Daemon] = []
        self.url = ""
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            master = Daemon(
                self.directory / "master.log", "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
            )  # fmt: skip
            self.daemons.append(master)
            url = master.wait_for_line(r"Starting Spark master at (spark://\S+)").group(1)
            worker = Daemon(
                self.directory / "worker.log", "org.apache.spark.deploy.worker.Worker", url,
                "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0",
                "--work-dir", str(self.directory / "work"),
            )  # fmt: skip
            self.daemons.append(worker)
            worker.wait_for_line(r"Successfully registered with master")
            self.url = url
        except BaseException as error:
            self.error = error

    def ready(self) -> str:
        self.join(120)
        assert self.error is None and self.url, self.error
        return self.url

    def executor_logs(self) -> list[Path]:
        return list((self.directory / "work").rglob("stderr"))

    def stop(self) -> None:
        self.join(120)
        for daemon in reversed(self.daemons):
            daemon.stop()
