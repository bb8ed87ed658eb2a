"""The ``apache.rocketmq.v2`` wire types.

They come from the generated code that the official Python client
(``rocketmq-python-client``) ships, so rmq speaks exactly the definitions the clients
were built with; upgrading that package is how rmq follows the protocol.
"""

from __future__ import annotations

from rocketmq.grpc_protocol import definition_pb2 as v2
from rocketmq.grpc_protocol import service_pb2 as rpc
from rocketmq.grpc_protocol import service_pb2_grpc as service

SERVICE_NAME = "apache.rocketmq.v2.MessagingService"

__all__ = ["SERVICE_NAME", "rpc", "service", "v2"]
