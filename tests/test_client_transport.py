"""The client's one transport, ``rmq._rmqcore.Transport`` (crates/rmqnet/src/client/calls.rs):
unary calls over rmq's own HTTP/2 connections, waited for or started with a completion.
Against real sockets and a real broker: an endpoint nobody listens on, one that accepts
and never answers, a broker's error status, and a TLS broker whose certificate the client
does not trust."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from rmq import errors
from rmq._rmqcore import PendingCall, Transport, decode_pull_response
from rmq.client import Client
from rmq.client.transport import method_path
from rmq.proto.v1 import broker_pb2 as pb

from tests.support.brokers import Brokers
from tests.support.certificates import self_signed_certificate

GET_ROUTE = method_path("Route", "GetRoute")
PULL = method_path("Shard", "Pull")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """host:port of a socket that accepts connections and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def test_an_unreachable_endpoint_is_unavailable_within_the_timeout() -> None:
    endpoint = f"127.0.0.1:{_free_port()}"
    transport = Transport(timeout=5.0, metadata=[])
    began = time.monotonic()
    with pytest.raises(errors.BrokerUnavailableError) as raised:
        transport.call(endpoint, GET_ROUTE, b"", what="route")
    assert time.monotonic() - began < 5.0
    assert raised.value.code is grpc.StatusCode.UNAVAILABLE
    assert str(raised.value).startswith("route: ")
    # The client retries it for its retry timeout, then raises the same class.
    client = Client(endpoint, timeout=2.0, retry_timeout=0.5)
    began = time.monotonic()
    with pytest.raises(errors.BrokerUnavailableError):
        client.topics()
    assert time.monotonic() - began < 4.0
    client.close()
    transport.close()


def test_a_server_that_never_answers_exceeds_the_deadline(silent_endpoint: str) -> None:
    transport = Transport(timeout=30.0, metadata=[])
    began = time.monotonic()
    with pytest.raises(errors.BrokerUnavailableError) as raised:
        transport.call(silent_endpoint, GET_ROUTE, b"", timeout=0.5)
    elapsed = time.monotonic() - began
    assert raised.value.code is grpc.StatusCode.DEADLINE_EXCEEDED
    assert 0.4 < elapsed < 3.0, elapsed
    transport.close()


def test_a_started_call_that_never_ends_can_be_cancelled(silent_endpoint: str) -> None:
    transport = Transport(timeout=30.0, metadata=[])
    ended = threading.Event()
    call = transport.start(silent_endpoint, GET_ROUTE, b"", lambda _: ended.set(), timeout=0.3)
    call.cancel()
    assert not ended.wait(1.0)
    assert call.done() and call.error is not None and call.error[0] == 1
    transport.close()


def test_a_status_from_the_broker_raises_its_class(brokers: Brokers) -> None:
    broker = brokers.start(shards=1)
    client = brokers.client(broker)
    route = client.create_topic("present", queues=1)
    transport = Transport(timeout=10.0, metadata=[])
    request = pb.GetRouteRequest(topic="absent").SerializeToString()
    with pytest.raises(errors.BrokerNotFoundError) as raised:
        transport.call(broker.endpoint, GET_ROUTE, request)
    assert raised.value.code is grpc.StatusCode.NOT_FOUND
    present = pb.GetRouteRequest(topic="present").SerializeToString()
    answer = pb.TopicRoute.FromString(transport.call(broker.endpoint, GET_ROUTE, present))
    assert [q.endpoint for q in answer.queues] == [q.endpoint for q in route.queues]
    # The started form: a pull of a queue the shard does not have ends with its status.
    ended: list[PendingCall] = []
    done = threading.Event()

    def record(call: PendingCall) -> None:
        ended.append(call)
        done.set()

    bad_pull = pb.PullRequest(topic="present", queue_id=7, offset=0, max_messages=1)
    transport.start(route.queues[0].endpoint, PULL, bad_pull.SerializeToString(), record)
    assert done.wait(10.0)
    (call,) = ended
    assert call.error is not None
    with pytest.raises(errors.BrokerError) as pulled:
        call.result()
    assert pulled.value.code.value[0] == call.error[0]
    assert type(pulled.value) is not errors.BrokerError  # a specific class of the table
    # Decoding the failed call's answer (as the consumer hands it over) raises the same.
    with pytest.raises(type(pulled.value)):
        decode_pull_response(call)
    transport.close()
    with pytest.raises(errors.StoreClosedError):
        transport.call(broker.endpoint, GET_ROUTE, request)


def test_a_token_broker_refuses_a_call_without_the_token(brokers: Brokers) -> None:
    broker = brokers.start(shards=1, args=["--token", "s3cret"])
    request = pb.ListTopicsRequest().SerializeToString()
    list_topics = method_path("Route", "ListTopics")
    without = Transport(timeout=10.0, metadata=[])
    with pytest.raises(errors.AuthenticationError):
        without.call(broker.endpoint, list_topics, request)
    with_token = Transport(timeout=10.0, metadata=[("authorization", "Bearer s3cret")])
    pb.ListTopicsResponse.FromString(with_token.call(broker.endpoint, list_topics, request))
    without.close()
    with_token.close()


def test_tls_with_a_root_that_did_not_sign_the_broker_is_refused(
    brokers: Brokers, tmp_path: Path
) -> None:
    cert, key = self_signed_certificate(tmp_path, "broker")
    stranger, _ = self_signed_certificate(tmp_path, "stranger")
    broker = brokers.start(shards=1, args=["--tls-cert", str(cert), "--tls-key", str(key)])
    request = pb.ListTopicsRequest().SerializeToString()
    list_topics = method_path("Route", "ListTopics")
    refused = Transport(timeout=5.0, metadata=[], tls=True, root_cert=stranger.read_bytes())
    with pytest.raises(errors.BrokerUnavailableError):
        refused.call(broker.endpoint, list_topics, request)
    trusted = Transport(timeout=5.0, metadata=[], tls=True, root_cert=cert.read_bytes())
    pb.ListTopicsResponse.FromString(trusted.call(broker.endpoint, list_topics, request))
    # A name the certificate does not carry is refused too.
    misnamed = Transport(
        timeout=5.0, metadata=[], tls=True, root_cert=cert.read_bytes(), server_name="elsewhere"
    )
    with pytest.raises(errors.BrokerUnavailableError):
        misnamed.call(broker.endpoint, list_topics, request)
    for transport in (refused, trusted, misnamed):
        transport.close()
