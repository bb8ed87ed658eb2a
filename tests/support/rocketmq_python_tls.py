"""Run as ``python -m tests.support.rocketmq_python_tls ENDPOINT TOPIC GROUP COUNT``: the
official RocketMQ 5 Python client over TLS (``tls_enable=True``) sends COUNT messages
(half sync, half async), then receives and acks them with a SimpleConsumer, and prints
one JSON line: the bodies sent with their message ids, and the bodies received with
theirs. Its own process, because the client verifies the server against gRPC's default
roots, which this process is started pointing at the test's certificate
(``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``, read once per process)."""

from __future__ import annotations

import json
import sys
import time

from rocketmq import (
    ClientConfiguration,
    Credentials,
    FilterExpression,
    Message,
    Producer,
    SimpleConsumer,
)


def main(endpoint: str, topic: str, group: str, count: int) -> None:
    configuration = ClientConfiguration(endpoint, Credentials(), request_timeout=10)
    producer = Producer(configuration, (topic,), tls_enable=True)
    producer.startup()
    sent: dict[str, str] = {}
    try:
        futures = {}
        for i in range(count):
            message = Message()
            message.topic = topic
            message.body = f"tls-{i}".encode()
            if i % 2 == 0:
                sent[message.body.decode()] = producer.send(message).message_id
            else:
                futures[message.body.decode()] = producer.send_async(message)
        for body, future in futures.items():
            sent[body] = future.result(timeout=30).message_id
    finally:
        producer.shutdown()
    consumer = SimpleConsumer(
        configuration, group, {topic: FilterExpression("*")}, await_duration=2, tls_enable=True
    )
    consumer.startup()
    received: dict[str, str] = {}
    try:
        deadline = time.monotonic() + 60
        while len(received) < count and time.monotonic() < deadline:
            for message in consumer.receive(16, 30):
                received[message.body.decode()] = message.message_id
                consumer.ack(message)
    finally:
        consumer.shutdown()
    print(json.dumps({"sent": sent, "received": received}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
