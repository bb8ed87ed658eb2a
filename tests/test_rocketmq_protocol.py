"""The apache.rocketmq.v2 service answered request by request, with raw gRPC stubs: wrong
or missing fields get the protocol's own status code and store nothing; RPCs rmq does not
offer say so. (The leases' bookkeeping against a simple model is a Rust test:
crates/rmqnet/src/rocketmq/queue_leases.rs.)"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from rmq.cluster.local import LocalBroker
from rmq.rocketmq.wire import rpc, service, v2

from tests.support.brokers import Brokers


@pytest.fixture(scope="module")
def broker(module_brokers: Brokers) -> LocalBroker:
    return module_brokers.start(shards=1)


@pytest.fixture(scope="module")
def topic(broker: LocalBroker, module_brokers: Brokers) -> str:
    name = f"p-{uuid.uuid4().hex[:8]}"
    module_brokers.client(broker).create_topic(name, 2)
    return name


@pytest.fixture(scope="module")
def stubs(broker: LocalBroker) -> Iterator[tuple[Any, Any]]:
    """The access point's stub and the shard process's."""
    shard = broker.state()["processes"][0]["endpoint"]
    channels = [grpc.insecure_channel(broker.rocketmq_endpoint), grpc.insecure_channel(shard)]
    yield tuple(service.MessagingServiceStub(c) for c in channels)  # type: ignore[misc]
    for channel in channels:
        channel.close()


def sent(topic: str, body: bytes = b"x", **system: Any) -> Any:
    message = v2.Message(topic=v2.Resource(name=topic), body=body)
    message.system_properties.message_id = system.pop("message_id", uuid.uuid4().hex.upper())
    message.system_properties.message_type = system.pop("message_type", v2.NORMAL)
    for name, value in system.pop("user_properties", {}).items():
        message.user_properties[name] = value
    for name, value in system.items():
        setattr(message.system_properties, name, value)
    return message


def queue_ends(broker: LocalBroker, brokers: Brokers, topic: str) -> list[int]:
    client = brokers.client(broker)
    return [client.queue_offsets(topic, q)[1] for q in range(2)]


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (dict(user_properties={"UNIQ_KEY": "mine"}), "ILLEGAL_MESSAGE_PROPERTY_KEY"),
        (dict(user_properties={"TAGS": "a"}), "ILLEGAL_MESSAGE_PROPERTY_KEY"),
        (dict(body=b""), "MESSAGE_BODY_EMPTY"),
        (dict(body=b"x" * (4 * 1024 * 1024 + 1)), "MESSAGE_BODY_TOO_LARGE"),
        (dict(message_id=""), "ILLEGAL_MESSAGE_ID"),
        (dict(message_type=v2.FIFO), "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE"),
        (dict(message_group="g"), "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE"),
        (dict(message_type=v2.TRANSACTION), "NOT_IMPLEMENTED"),
        (dict(message_type=v2.DELAY), "NOT_IMPLEMENTED"),
        (dict(tag="a|b"), "ILLEGAL_MESSAGE_TAG"),
        (dict(tag=" "), "ILLEGAL_MESSAGE_TAG"),
    ],
)
def test_a_bad_message_gets_its_code_and_nothing_is_stored(
    broker: LocalBroker,
    module_brokers: Brokers,
    topic: str,
    stubs: tuple[Any, Any],
    message: dict[str, Any],
    code: str,
) -> None:
    before = queue_ends(broker, module_brokers, topic)
    body = message.pop("body", b"x")
    answer = stubs[1].SendMessage(
        rpc.SendMessageRequest(messages=[sent(topic, body, **message)]), timeout=10
    )
    assert v2.Code.Name(answer.status.code) == code, answer.status.message
    assert [v2.Code.Name(e.status.code) for e in answer.entries] == [code]
    assert queue_ends(broker, module_brokers, topic) == before


def test_a_send_with_keys_that_hold_spaces_is_refused(topic: str, stubs: tuple[Any, Any]) -> None:
    message = sent(topic)
    message.system_properties.keys.append("two words")
    answer = stubs[1].SendMessage(rpc.SendMessageRequest(messages=[message]), timeout=10)
    assert answer.status.code == v2.ILLEGAL_MESSAGE_KEY


def test_requests_naming_no_or_unknown_topics(topic: str, stubs: tuple[Any, Any]) -> None:
    access, shard = stubs
    unknown = v2.Resource(name="no-such-topic")
    assert access.QueryRoute(rpc.QueryRouteRequest(topic=unknown)).status.code == (
        v2.TOPIC_NOT_FOUND
    )
    assert access.QueryRoute(rpc.QueryRouteRequest()).status.code == v2.ILLEGAL_TOPIC
    answer = shard.SendMessage(rpc.SendMessageRequest(messages=[sent("no-such-topic")]))
    assert answer.status.code == v2.TOPIC_NOT_FOUND
    assert shard.SendMessage(rpc.SendMessageRequest()).status.code == v2.BAD_REQUEST


def test_the_route_names_the_shard_process_for_every_queue(
    broker: LocalBroker, topic: str, stubs: tuple[Any, Any]
) -> None:
    answer = stubs[0].QueryRoute(rpc.QueryRouteRequest(topic=v2.Resource(name=topic)))
    assert answer.status.code == v2.OK
    shard = broker.state()["processes"][0]["endpoint"]
    host, _, port = shard.rpartition(":")
    assert [q.id for q in answer.message_queues] == [0, 1]
    for queue in answer.message_queues:
        assert queue.permission == v2.READ_WRITE
        assert list(queue.accept_message_types) == [v2.NORMAL, v2.FIFO]
        [address] = queue.broker.endpoints.addresses
        assert (address.host, address.port) == (host, int(port))


def receive(stub: Any, topic: str, **fields: Any) -> list[Any]:
    request = rpc.ReceiveMessageRequest(
        group=v2.Resource(name="g"),
        message_queue=v2.MessageQueue(topic=v2.Resource(name=topic), id=0),
        batch_size=fields.pop("batch_size", 8),
        long_polling_timeout=Duration(seconds=0),
        **fields,
    )
    return list(stub.ReceiveMessage(request, timeout=10))


def test_bad_receives_get_their_codes(topic: str, stubs: tuple[Any, Any]) -> None:
    shard = stubs[1]
    [answer] = receive(shard, topic)  # neither an invisible duration nor auto renew
    assert answer.status.code == v2.ILLEGAL_INVISIBLE_TIME
    [answer] = receive(shard, topic, invisible_duration=Duration(seconds=30), batch_size=0)
    assert answer.status.code == v2.BAD_REQUEST
    [answer] = receive(
        shard,
        topic,
        invisible_duration=Duration(seconds=30),
        filter_expression=v2.FilterExpression(type=v2.SQL, expression="a > 1"),
    )
    assert answer.status.code == v2.NOT_IMPLEMENTED
    [answer] = receive(shard, topic, invisible_duration=Duration(seconds=30))
    assert answer.status.code == v2.MESSAGE_NOT_FOUND


def test_acks_with_receipts_this_broker_never_gave_are_refused(
    topic: str, stubs: tuple[Any, Any]
) -> None:
    handles = [
        "garbage",
        f"0/99/1/0/{topic}",  # the format of rmqnet::rocketmq::receipt
        "0/0/1/0/other",
    ]
    answer = stubs[1].AckMessage(
        rpc.AckMessageRequest(
            group=v2.Resource(name="g"),
            topic=v2.Resource(name=topic),
            entries=[rpc.AckMessageEntry(message_id="m", receipt_handle=h) for h in handles],
        )
    )
    assert answer.status.code == v2.INVALID_RECEIPT_HANDLE
    assert [e.status.code for e in answer.entries] == [v2.INVALID_RECEIPT_HANDLE] * 3


def test_what_rmq_does_not_offer_says_not_implemented(topic: str, stubs: tuple[Any, Any]) -> None:
    access, shard = stubs
    assert shard.EndTransaction(rpc.EndTransactionRequest()).status.code == v2.NOT_IMPLEMENTED
    assert shard.GetOffset(rpc.GetOffsetRequest()).status.code == v2.NOT_IMPLEMENTED
    [pulled] = list(shard.PullMessage(rpc.PullMessageRequest()))
    assert pulled.status.code == v2.NOT_IMPLEMENTED
    # Messages go to the brokers the route names, not to the access point.
    answer = access.SendMessage(rpc.SendMessageRequest(messages=[sent(topic)]))
    assert answer.status.code == v2.BAD_REQUEST
    assert "QueryRoute" in answer.status.message


def test_bytes_that_are_not_a_request_fail_the_call_and_the_server_keeps_serving(
    broker: LocalBroker, topic: str, stubs: tuple[Any, Any]
) -> None:
    shard = broker.state()["processes"][0]["endpoint"]
    with grpc.insecure_channel(shard) as channel:
        call = channel.unary_unary("/apache.rocketmq.v2.MessagingService/SendMessage")
        with pytest.raises(grpc.RpcError) as caught:
            call(b"\xff\xff\xff\xff", timeout=10)
        assert caught.value.code() in (grpc.StatusCode.INTERNAL, grpc.StatusCode.INVALID_ARGUMENT)
    answer = stubs[1].SendMessage(rpc.SendMessageRequest(messages=[sent(topic)]), timeout=10)
    assert answer.status.code == v2.OK


def test_telemetry_answers_settings_with_the_brokers_choices(stubs: tuple[Any, Any]) -> None:
    client = v2.Settings(
        client_type=v2.SIMPLE_CONSUMER,
        subscription=v2.Subscription(group=v2.Resource(name="g")),
    )
    [answer] = list(stubs[0].Telemetry(iter([rpc.TelemetryCommand(settings=client)]), timeout=10))
    assert answer.status.code == v2.OK
    assert answer.settings.backoff_policy.max_attempts == 16
    assert answer.settings.subscription.receive_batch_size > 0
    assert answer.settings.backoff_policy.HasField("exponential_backoff")
