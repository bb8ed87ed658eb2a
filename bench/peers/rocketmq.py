"""Apache RocketMQ 5 from its released jars: name server + one broker on loopback.

Small heaps, loopback addresses, the store in a temporary directory, async flush. Also
runs RocketMQ's store engine in-process (``StoreBench``, bench/peers/java) for the
``append``, ``recovery`` and ``scale`` benchmarks.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench.basics import DEFAULT_WORK, NotMeasurable
from bench.peers.common import (
    bench_result,
    compile_java,
    fetch_jars,
    free_port,
    free_port_block,
    run_java_tool,
    start_java,
    stop_process,
    wait_port,
)

NAME = "rocketmq"
VERSION = "5.3.3"  # keep in step with bench/peers/rocketmq/pom.xml
CLUSTER = "BenchCluster"


def classpath() -> str:
    lib = fetch_jars(NAME)
    classes = compile_java(lib)
    return f"{classes}:{lib}/*"


class RocketMQ:
    """A name server and one broker; ``start()`` raises NotMeasurable when they can't run."""

    def __init__(self, heap: str = "512m") -> None:
        self.heap = heap
        self.home: Path | None = None
        self.namesrv: subprocess.Popen[bytes] | None = None
        self.broker: subprocess.Popen[bytes] | None = None
        self.ns_port = 0
        self.port = 0
        self.cp = ""

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.ns_port}"

    def start(self) -> None:
        self.cp = classpath()
        DEFAULT_WORK.mkdir(parents=True, exist_ok=True)
        self.home = Path(tempfile.mkdtemp(prefix="rocketmq-", dir=DEFAULT_WORK))
        env_home = ["-Drocketmq.home.dir=" + str(self.home), "-XX:MaxDirectMemorySize=512m"]
        self.ns_port = free_port()
        (self.home / "namesrv.conf").write_text(f"listenPort={self.ns_port}\n")
        self.namesrv = start_java(
            "org.apache.rocketmq.namesrv.NamesrvStartup",
            ["-c", str(self.home / "namesrv.conf")],
            self.cp,
            self.home / "namesrv.out",
            heap="256m",
            extra=env_home,
            home=self.home,
        )
        wait_port(self.ns_port, self.namesrv, 90, "RocketMQ name server")
        self.port = free_port_block(4) + 2  # listenPort-2 (fast channel) .. listenPort+1 (HA)
        store = self.home / "store"
        (self.home / "broker.conf").write_text(
            "\n".join(
                [
                    f"brokerClusterName={CLUSTER}",
                    "brokerName=bench-broker",
                    "brokerId=0",
                    "brokerRole=ASYNC_MASTER",
                    "flushDiskType=ASYNC_FLUSH",
                    f"listenPort={self.port}",
                    f"haListenPort={self.port + 1}",
                    f"namesrvAddr={self.namesrv_addr}",
                    "brokerIP1=127.0.0.1",
                    f"storePathRootDir={store}",
                    f"storePathCommitLog={store / 'commitlog'}",
                    "autoCreateTopicEnable=true",
                    "defaultTopicQueueNums=8",
                    "diskMaxUsedSpaceRatio=95",
                    "enablePropertyFilter=false",
                    "",
                ]
            )
        )
        self.broker = start_java(
            "org.apache.rocketmq.broker.BrokerStartup",
            ["-c", str(self.home / "broker.conf")],
            self.cp,
            self.home / "broker.out",
            heap=self.heap,
            extra=env_home,
            home=self.home,
        )
        wait_port(self.port, self.broker, 120, "RocketMQ broker")
        self._wait_registered()

    def _wait_registered(self, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        last = ""
        while time.time() < deadline:
            proc = self.admin(["clusterList", "-n", self.namesrv_addr], timeout=60)
            last = proc.stdout + proc.stderr
            if "bench-broker" in proc.stdout:
                return
            time.sleep(1)
        raise NotMeasurable(f"RocketMQ broker never registered with the name server: {last[-300:]}")

    def admin(self, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        assert self.home is not None
        return run_java_tool(
            "org.apache.rocketmq.tools.command.MQAdminStartup",
            args,
            self.cp,
            timeout,
            heap="256m",
            home=self.home,
        )

    def create_topic(self, topic: str, queues: int = 8) -> None:
        proc = self.admin(
            [
                "updateTopic",
                "-n",
                self.namesrv_addr,
                "-c",
                CLUSTER,
                "-t",
                topic,
                "-r",
                str(queues),
                "-w",
                str(queues),
            ]
        )
        if proc.returncode != 0 or "success" not in proc.stdout.lower():
            raise RuntimeError(f"RocketMQ updateTopic failed: {(proc.stdout + proc.stderr)[-500:]}")

    def produce(
        self, topic: str, count: int, body: int, batch: int, threads: int = 4
    ) -> dict[str, float]:
        args = [self.namesrv_addr, topic, str(count), str(body), str(batch), str(threads)]
        proc = run_java_tool("RocketProduce", args, self.cp, 1800, heap="512m", home=self.home)
        result = bench_result(proc, "RocketMQ producer")
        if result.get("failed_batches"):
            raise RuntimeError(f"RocketMQ producer: {result['failed_batches']:.0f} batches failed")
        return result

    def consume(self, topic: str, count: int) -> dict[str, float]:
        args = [self.namesrv_addr, topic, str(count)]
        proc = run_java_tool("RocketConsume", args, self.cp, 1800, heap="512m", home=self.home)
        result = bench_result(proc, "RocketMQ consumer")
        if result["messages"] < count:
            raise RuntimeError(f"RocketMQ consumer got {result['messages']:.0f} of {count}")
        return result

    def stop(self) -> None:
        stop_process(self.broker)
        stop_process(self.namesrv)
        self.broker = self.namesrv = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None


def store_bench(args: list[str], timeout: float = 1800) -> dict[str, float]:
    """Run StoreBench (RocketMQ's DefaultMessageStore in-process) and return its figures."""
    cp = classpath()
    home = Path(tempfile.mkdtemp(prefix="storebench-", dir=DEFAULT_WORK))
    try:
        proc = run_java_tool(
            "StoreBench",
            args,
            cp,
            timeout,
            heap="1g",
            home=home,
        )
        return bench_result(proc, "RocketMQ StoreBench " + args[0])
    finally:
        shutil.rmtree(home, ignore_errors=True)
