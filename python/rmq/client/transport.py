"""The client's one transport: ``rmq._rmqcore.Transport`` (crates/rmqnet/src/client/calls.rs),
unary calls over the client's own HTTP/2 connections, TLS and token included.

Requests and answers cross it as bytes: protobuf messages are serialised here
(``SerializeToString``/``FromString``); a pull's answer goes to
``rmq._rmqcore.decode_pull_response`` as the ``PendingCall`` holding it, not copied into
``bytes``. A failed call raises the class of the one client
table (``rmq._rmqcore.broker_error``) with its gRPC status.
"""

from __future__ import annotations

from rmq._rmqcore import Transport
from rmq.client.credentials import Credentials
from rmq.proto.v1 import broker_pb2 as pb


def method_path(service: str, name: str) -> str:
    """The path of an ``rmq.v1`` method, from the service descriptor: "/rmq.v1.Shard/Pull"."""
    method = pb.DESCRIPTOR.services_by_name[service].methods_by_name[name]
    return "/{}/{}".format(*method.full_name.rsplit(".", 1))


def open_transport(credentials: Credentials, timeout: float) -> Transport:
    """Connections with ``credentials``, each call bounded by ``timeout`` seconds unless it
    names its own."""
    return Transport(
        timeout=timeout,
        metadata=list(credentials.metadata),
        tls=credentials.uses_tls,
        root_cert=credentials.tls_root_cert,
        server_name=credentials.server_name,
    )
