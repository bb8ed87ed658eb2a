"""The native data plane holds finished answers briefly while other requests of the same
connection are in flight, and writes them together (crates/rmqnet/src/coalesce.rs). Many
requests in flight on one HTTP/2 connection must each still get its own, correct answer:
rmq.v1 Send answers carry their request's sequence and the offsets its message was
stored at, RocketMQ 5 SendMessage answers their request's message id; what is stored
at each answered offset is that request's message. (The hold's timing rules, a lone
request never held among them, are tested over real sockets in coalesce_tests.rs.)
"""

from __future__ import annotations

import uuid

import grpc
import rmq
from rmq.cluster.local import LocalBroker
from rmq.proto.v1 import broker_pb2 as pb
from rmq.rocketmq import message_codec
from rmq.rocketmq.wire import rpc, service, v2

from tests.support.native_requests import native_requests

IN_FLIGHT = 400
SEND_MESSAGE = "/apache.rocketmq.v2.MessagingService/SendMessage"


def stored_messages(channel: grpc.Channel, topic: str, queue_id: int) -> list[pb.StoredMessage]:
    """Every message of a queue, pulled from the shard."""
    pull = channel.unary_unary("/rmq.v1.Shard/Pull")
    messages: list[pb.StoredMessage] = []
    offset = 0
    while True:
        request = pb.PullRequest(topic=topic, queue_id=queue_id, offset=offset)
        pulled = pb.PullResponse.FromString(pull(request.SerializeToString(), timeout=10))
        messages.extend(pulled.messages)
        if pulled.next_offset >= pulled.max_offset:
            return messages
        offset = pulled.next_offset


def test_pipelined_v1_sends_each_get_their_own_answer(
    broker: LocalBroker, client: rmq.Client
) -> None:
    topic = f"coalesce-{uuid.uuid4().hex[:8]}"
    endpoint = client.create_topic(topic, 1).queues[0].endpoint
    with grpc.insecure_channel(endpoint) as channel:  # one HTTP/2 connection
        send = channel.unary_unary("/rmq.v1.Shard/Send")
        calls = [
            send.future(
                pb.SendRequest(
                    topic=topic,
                    queue_id=0,
                    sequence=i,
                    messages=[pb.Message(body=f"body-{i}".encode(), keys=[f"k{i}"])],
                ).SerializeToString(),
                timeout=30,
            )
            for i in range(IN_FLIGHT)
        ]
        answers = [pb.SendResponse.FromString(call.result()) for call in calls]
        stored = {m.queue_offset: m.body for m in stored_messages(channel, topic, 0)}
    assert [a.sequence for a in answers] == list(range(IN_FLIGHT))
    offsets = [a.queue_offsets[0] for a in answers]
    assert sorted(offsets) == list(range(IN_FLIGHT))
    assert len(stored) == IN_FLIGHT
    assert all(stored[offsets[i]] == f"body-{i}".encode() for i in range(IN_FLIGHT))


def test_pipelined_rocketmq_sends_each_get_their_own_answer(
    broker: LocalBroker, client: rmq.Client
) -> None:
    topic = f"coalesce-v2-{uuid.uuid4().hex[:8]}"
    route = client.create_topic(topic, 2)
    endpoint = route.queues[0].endpoint
    local = [q.queue_id for q in route.queues if q.endpoint == endpoint]
    before = native_requests(broker).get((SEND_MESSAGE, "answered"), 0.0)
    ids = [f"01{uuid.uuid4().hex.upper()}"[:32] for _ in range(IN_FLIGHT)]
    with grpc.insecure_channel(endpoint) as channel:
        stub = service.MessagingServiceStub(channel)
        calls = []
        for i, message_id in enumerate(ids):
            message = v2.Message(topic=v2.Resource(name=topic), body=f"v2-{i}".encode())
            message.system_properties.message_id = message_id
            message.system_properties.message_type = v2.NORMAL
            message.system_properties.body_encoding = v2.IDENTITY
            request = rpc.SendMessageRequest(messages=[message])
            calls.append(stub.SendMessage.future(request, timeout=30))
        answers = [call.result() for call in calls]
        stored = {
            m.properties[message_codec.UNIQ_KEY]: (m.queue_offset, m.body)
            for queue_id in local
            for m in stored_messages(channel, topic, queue_id)
        }
    assert all(a.status.code == v2.OK for a in answers)
    assert [a.entries[0].message_id for a in answers] == ids
    assert len(stored) == IN_FLIGHT
    for i, answer in enumerate(answers):
        assert stored[ids[i]] == (answer.entries[0].offset, f"v2-{i}".encode())
    answered = native_requests(broker).get((SEND_MESSAGE, "answered"), 0.0) - before
    assert answered == IN_FLIGHT  # the data plane answered them all, not the Python path
