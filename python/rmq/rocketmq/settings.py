"""The settings a broker hands a client over the Telemetry stream.

A client opens the stream with its own settings (its type, topics or subscriptions,
retry policy); the broker answers with them completed by what it decides: the largest
body it takes, for consumers whether the group is FIFO, the batch size, the long-polling
time and the group's retry policy (how many deliveries before the dead-letter queue).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf.duration_pb2 import Duration

from rmq.rocketmq.wire import v2


@dataclass(frozen=True, slots=True)
class ConsumerPolicy:
    """How the broker treats RocketMQ v2 consumer groups."""

    max_delivery_attempts: int = 16
    fifo_groups: frozenset[str] = field(default_factory=frozenset)
    receive_batch_size: int = 32
    long_polling_seconds: int = 20
    # Between redeliveries after a failed consumption (PushConsumer).
    retry_initial_seconds: int = 1
    retry_max_seconds: int = 60


def answer(client: v2.Settings, max_body_bytes: int, policy: ConsumerPolicy) -> v2.Settings:
    settings = v2.Settings()
    settings.CopyFrom(client)
    # rmq collects no client metrics (its own are on the broker's metrics endpoint).
    settings.metric.CopyFrom(v2.Metric(on=False))
    if client.HasField("publishing") or client.client_type == v2.PRODUCER:
        settings.publishing.max_body_size = max_body_bytes
        settings.publishing.validate_message_type = True
        if not client.backoff_policy.HasField("exponential_backoff"):
            settings.backoff_policy.CopyFrom(
                v2.RetryPolicy(
                    max_attempts=client.backoff_policy.max_attempts or 3,
                    exponential_backoff=v2.ExponentialBackoff(
                        initial=Duration(nanos=10_000_000), max=Duration(seconds=1), multiplier=2
                    ),
                )
            )
    if client.HasField("subscription"):
        subscription = settings.subscription
        subscription.fifo = client.subscription.group.name in policy.fifo_groups
        subscription.receive_batch_size = policy.receive_batch_size
        subscription.long_polling_timeout.CopyFrom(Duration(seconds=policy.long_polling_seconds))
        settings.backoff_policy.CopyFrom(
            v2.RetryPolicy(
                max_attempts=policy.max_delivery_attempts,
                exponential_backoff=v2.ExponentialBackoff(
                    initial=Duration(seconds=policy.retry_initial_seconds),
                    max=Duration(seconds=policy.retry_max_seconds),
                    multiplier=2,
                ),
            )
        )
    return settings
