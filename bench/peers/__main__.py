"""``python -m bench.peers fetch|check NAME``: fetch a peer's jars, or start, probe and stop it."""

from __future__ import annotations

import argparse
import sys
import time

from bench.basics import NotMeasurable


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
                finally:
                    peer.stop()
        except NotMeasurable as exc:
            print(f"{name}: cannot be started: {exc}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
