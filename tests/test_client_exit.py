"""A program that ends without closing its client, producer or consumer exits cleanly:
the binding's own threads (the producer's resolver, the transport's completions) stay
attached to Python while they wait, and are let go of while the interpreter finalizes,
when sends may still be in flight and answers still arriving."""

from __future__ import annotations

import subprocess
import sys

from rmq.client import Client
from rmq.cluster.local import LocalBroker

PROGRAM = """
import sys
from rmq.client import Client

client = Client(sys.argv[1])
producer = client.producer(linger_ms=1)
done = [producer.send("exit", b"x" * 100, queue_id=i % 2) for i in range(300)]
done[-1].result(timeout=30)
consumer = client.consumer("exit-group", "exit")
assert consumer.poll(timeout=10)
# Left for the interpreter's end: sends still in flight, a consumer mid-stream.
late = [producer.send("exit", b"y" * 1000) for _ in range(200)]
print("ending", flush=True)
"""


def test_a_program_ending_with_everything_open_exits_cleanly(broker: LocalBroker) -> None:
    with Client(broker.endpoint) as client:
        client.create_topic("exit", queues=2)
    for round_ in range(8):
        ended = subprocess.run(
            [sys.executable, "-c", PROGRAM, broker.endpoint],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (ended.returncode, ended.stdout) == (0, "ending\n"), (round_, ended.stderr)
        assert ended.stderr == "", (round_, ended.stderr)
