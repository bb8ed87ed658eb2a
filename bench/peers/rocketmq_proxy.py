"""RocketMQ 5's proxy (``rocketmq-proxy``, the gRPC access point of the RocketMQ 5
clients) in cluster mode, in front of the name server and broker of
:class:`bench.peers.rocketmq.RocketMQ`: it finds the broker through the name server and
relays the clients' sends, receives and acks to it over RocketMQ's remoting protocol, as a
deployment with separate proxies does."""

from __future__ import annotations

import json
import subprocess

from bench.peers.common import free_port, start_java, stop_process, wait_port
from bench.peers.rocketmq import CLUSTER, RocketMQ


class RocketMQProxy:
    def __init__(self, rocketmq: RocketMQ, heap: str = "512m") -> None:
        self.rocketmq = rocketmq
        self.heap = heap
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start it (the broker must be running); raises NotMeasurable if it won't listen."""
        home = self.rocketmq.home
        assert home is not None and self.rocketmq.cp
        self.port = free_port()
        config = {
            "rocketMQClusterName": CLUSTER,
            "proxyMode": "cluster",
            "namesrvAddr": self.rocketmq.namesrv_addr,
            "grpcServerPort": self.port,
            "remotingListenPort": free_port(),  # its RocketMQ-remoting front end, unused here
            "localServeAddr": "127.0.0.1",
            "enablePrintJstack": False,
        }
        path = home / "rmq-proxy.json"
        path.write_text(json.dumps(config, indent=2))
        self.proc = start_java(
            "org.apache.rocketmq.proxy.ProxyStartup",
            ["-pc", str(path), "-pm", "cluster", "-n", self.rocketmq.namesrv_addr],
            self.rocketmq.cp,
            home / "proxy.out",
            heap=self.heap,
            extra=[f"-Drocketmq.home.dir={home}", "-XX:MaxDirectMemorySize=512m"],
            home=home,
        )
        wait_port(self.port, self.proc, 120, "RocketMQ proxy")

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None
