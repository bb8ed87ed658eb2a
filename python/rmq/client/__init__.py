"""rmq's client library: ``Client(endpoint)`` with producers and consumers.

client = Client("127.0.0.1:8081")
client.create_topic("orders", queues=8)
with client.producer() as producer:
    producer.send("orders", b"hello", keys=["order-1"]).result()
    producer.send_batch("orders", [b"a", b"b"], keys=["order-2", "order-3"]).result()
with client.consumer("billing", "orders") as consumer:
    for message in consumer.poll(timeout=1.0):
        ...
    consumer.commit()
"""

from rmq._rmqcore import ReceivedMessage, SendBatchFuture, SendFuture
from rmq.client.client import DEFAULT_ENDPOINT, Client
from rmq.client.consumer import Consumer
from rmq.client.messages import QueueInfo, SendResult, ShardProcessInfo, TopicRoute
from rmq.client.producer import Producer
from rmq.errors import (
    AuthenticationError,
    BrokerError,
    BrokerInvalidArgumentError,
    BrokerNotFoundError,
    BrokerOutOfRangeError,
    BrokerUnavailableError,
    StaleRouteError,
)

__all__ = [
    "DEFAULT_ENDPOINT",
    "AuthenticationError",
    "BrokerError",
    "BrokerInvalidArgumentError",
    "BrokerNotFoundError",
    "BrokerOutOfRangeError",
    "BrokerUnavailableError",
    "Client",
    "Consumer",
    "Producer",
    "QueueInfo",
    "ReceivedMessage",
    "SendBatchFuture",
    "SendFuture",
    "SendResult",
    "ShardProcessInfo",
    "StaleRouteError",
    "TopicRoute",
]
