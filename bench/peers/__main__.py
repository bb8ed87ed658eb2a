"""``python -m bench.peers fetch|check NAME``: fetch a peer's jars, or start, probe and stop it."""

from __future__ import annotations

import argparse
import sys
import time

from bench.basics import NotMeasurable
from bench.peers.rocketmq import RocketMQ


def check_proxy(peer: RocketMQ) -> None:
    """RocketMQ's proxy in front of the running broker, driven by the RocketMQ 5 client."""
    from bench.peers.rocketmq_client import V2Load
    from bench.peers.rocketmq_proxy import RocketMQProxy

    proxy = RocketMQProxy(peer)
    load = V2Load()
    try:
        t0 = time.time()
        proxy.start()
        print(f"rocketmq proxy: started in {time.time() - t0:.1f} s at {proxy.endpoint}")
        peer.create_topic("PeerCheckV2", 8)
        sent = load.produce(proxy.endpoint, "PeerCheckV2", 1000, 100)
        print(f"rocketmq proxy: RocketMQ 5 client produced {sent}")
        peer.create_topic("PeerCheckV2c", 8)
        got = load.consume(proxy.endpoint, "PeerCheckV2c", 1000, 100, "PeerCheckGroup")
        print(f"rocketmq proxy: RocketMQ 5 client produced and consumed {got}")
    finally:
        load.close()
        proxy.stop()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers")
    parser.add_argument("action", choices=["fetch", "check"])
    parser.add_argument("name", choices=["rocketmq", "kafka", "all"])
    args = parser.parse_args()
    names = ["rocketmq", "kafka"] if args.name == "all" else [args.name]
    failed = False
    for name in names:
        try:
            if name == "rocketmq":
                from bench.peers.rocketmq import RocketMQ as Peer
                from bench.peers.rocketmq import classpath
            else:
                from bench.peers.kafka import Kafka as Peer  # type: ignore[assignment]
                from bench.peers.kafka import classpath
            classpath()
            if name == "rocketmq":
                from bench.peers import rocketmq_client

                rocketmq_client.build()
            print(f"{name}: jars ready")
            if args.action == "check":
                peer = Peer()
                t0 = time.time()
                try:
                    peer.start()
                    print(f"{name}: started in {time.time() - t0:.1f} s")
                    peer.create_topic("PeerCheck", 8)
                    print(f"{name}: produced {peer.produce('PeerCheck', 1000, 100, 100)}")
                    print(f"{name}: consumed {peer.consume('PeerCheck', 1000)}")
                    if name == "rocketmq":
                        check_proxy(peer)
                finally:
                    peer.stop()
        except NotMeasurable as exc:
            print(f"{name}: cannot be started: {exc}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
