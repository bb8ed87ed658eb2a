"""Apache RocketMQ 5's client protocol, ``apache.rocketmq.v2.MessagingService``, served by
``rmq serve`` so that RocketMQ's official clients (Java, Python, Go, ...) work unchanged.

- :mod:`rmq.rocketmq.wire`: the protocol's generated types (from the official client).
- :mod:`rmq.rocketmq.servicer`: the gRPC servicer, thin: parse, call, answer a status.
- :mod:`rmq.rocketmq.routes`: topics as the protocol sees them (brokers, endpoints).
- :mod:`rmq.rocketmq.shard_backend`: sends, receives, acks on a shard process's stores.
- ``rmq._rmqcore.LeaseBook``: which messages a consumer group holds invisible, and until
  when; kept per store directory across restarts, shared with the native data plane
  (``crates/rmqnet/src/rocketmq``), which answers most receives and acks itself.
- :mod:`rmq.rocketmq.message_codec`, :mod:`rmq.rocketmq.receipts`,
  :mod:`rmq.rocketmq.settings`, :mod:`rmq.rocketmq.status`: the conversions.
"""
