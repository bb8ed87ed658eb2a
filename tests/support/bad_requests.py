"""The bad rmq.v1 requests a broker must answer with a precise status and no change to
its stores: one row per case, (case, service, method, request, status code, part of the
message). tests/test_broker_bad_input.py sends each to a running broker."""

from __future__ import annotations

from typing import Any

import grpc
from rmq.proto.v1 import broker_pb2 as pb

MiB = 1024 * 1024
TOPIC = "good"


def message(**fields: Any) -> pb.Message:
    return pb.Message(body=fields.pop("body", b"body"), **fields)


def send(
    queue_id: int = 0, topic: str = TOPIC, messages: list[pb.Message] | None = None
) -> pb.SendRequest:
    return pb.SendRequest(
        topic=topic, queue_id=queue_id, messages=messages if messages is not None else [message()]
    )


OK = grpc.StatusCode
CASES: list[tuple[str, str, str, Any, grpc.StatusCode, str]] = [
    # (case, service, method, request, code, part of the message)
    ("empty topic", "Shard", "Send", send(topic=""), OK.INVALID_ARGUMENT, "topic name is empty"),
    ("dot-dot topic", "Shard", "Send", send(topic=".."), OK.INVALID_ARGUMENT, "contains '.'"),
    ("slash topic", "Shard", "Send", send(topic="a/b"), OK.INVALID_ARGUMENT, "contains '/'"),
    (
        "climbing topic",
        "Shard",
        "Send",
        send(topic="../../etc"),
        OK.INVALID_ARGUMENT,
        "contains '.'",
    ),
    (
        "long topic",
        "Shard",
        "Send",
        send(topic="t" * 256),
        OK.INVALID_ARGUMENT,
        "256 bytes, more than 255",
    ),
    ("space topic", "Shard", "Send", send(topic="a b"), OK.INVALID_ARGUMENT, "contains ' '"),
    ("unicode topic", "Shard", "Send", send(topic="caf\u00e9"), OK.INVALID_ARGUMENT, "contains"),
    ("nul topic", "Shard", "Send", send(topic="a\x00b"), OK.INVALID_ARGUMENT, "contains"),
    (
        "unknown topic",
        "Shard",
        "Send",
        send(topic="nosuchtopic"),
        OK.NOT_FOUND,
        "'nosuchtopic' does not exist",
    ),
    (
        "oversized body",
        "Shard",
        "Send",
        send(messages=[message(body=b"b" * (4 * MiB + 1))]),
        OK.INVALID_ARGUMENT,
        "4194305 bytes, more than the limit of 4194304",
    ),
    (
        "too many messages",
        "Shard",
        "Send",
        send(messages=[message(body=b"")] * 8193),
        OK.INVALID_ARGUMENT,
        "8193 messages, more than the limit of 8192",
    ),
    (
        "batch too large",
        "Shard",
        "Send",
        send(messages=[message(body=b"b" * (3 * MiB + MiB // 4))] * 5),
        OK.INVALID_ARGUMENT,
        "add up to",
    ),
    (
        "request over gRPC's limit",
        "Shard",
        "Send",
        send(messages=[message(body=b"b" * (4 * MiB))] * 5),
        OK.RESOURCE_EXHAUSTED,
        "larger than max",
    ),
    ("empty batch", "Shard", "Send", send(messages=[]), OK.INVALID_ARGUMENT, "no messages"),
    (
        "separator in property name",
        "Shard",
        "Send",
        send(messages=[message(properties={"a\x01b": "v"})]),
        OK.INVALID_ARGUMENT,
        "separates properties",
    ),
    (
        "separator in property value",
        "Shard",
        "Send",
        send(messages=[message(properties={"a": "v\x02w"})]),
        OK.INVALID_ARGUMENT,
        "separates properties",
    ),
    (
        "separator in tags",
        "Shard",
        "Send",
        send(messages=[message(tags="t\x01")]),
        OK.INVALID_ARGUMENT,
        "separates properties",
    ),
    (
        "separator in key",
        "Shard",
        "Send",
        send(messages=[message(keys=["k\x02"])]),
        OK.INVALID_ARGUMENT,
        "separates properties",
    ),
    (
        "space in key",
        "Shard",
        "Send",
        send(messages=[message(keys=["a b"])]),
        OK.INVALID_ARGUMENT,
        "contains a space",
    ),
    (
        "reserved property",
        "Shard",
        "Send",
        send(messages=[message(properties={"KEYS": "k"})]),
        OK.INVALID_ARGUMENT,
        "reserved",
    ),
    (
        "empty property value",
        "Shard",
        "Send",
        send(messages=[message(properties={"a": ""})]),
        OK.INVALID_ARGUMENT,
        "empty value",
    ),
    (
        "negative queue",
        "Shard",
        "Send",
        send(queue_id=-1),
        OK.INVALID_ARGUMENT,
        "queue_id -1 is negative",
    ),
    ("queue past the count", "Shard", "Send", send(queue_id=8), OK.OUT_OF_RANGE, "has 8 queues"),
    ("queue of another shard", "Shard", "Send", None, OK.FAILED_PRECONDITION, "refresh the route"),
    (
        "negative pull offset",
        "Shard",
        "Pull",
        pb.PullRequest(topic=TOPIC, queue_id=0, offset=-1),
        OK.INVALID_ARGUMENT,
        "offset -1 is negative",
    ),
    (
        "pull past the end",
        "Shard",
        "Pull",
        pb.PullRequest(topic=TOPIC, queue_id=0, offset=1000),
        OK.OUT_OF_RANGE,
        "past the end",
    ),
    (
        "negative max messages",
        "Shard",
        "Pull",
        pb.PullRequest(topic=TOPIC, queue_id=0, max_messages=-5),
        OK.INVALID_ARGUMENT,
        "max_messages -5",
    ),
    (
        "negative wait",
        "Shard",
        "Pull",
        pb.PullRequest(topic=TOPIC, queue_id=0, wait_ms=-1),
        OK.INVALID_ARGUMENT,
        "wait_ms -1",
    ),
    (
        "pull negative queue",
        "Shard",
        "Pull",
        pb.PullRequest(topic=TOPIC, queue_id=-7),
        OK.INVALID_ARGUMENT,
        "negative",
    ),
    (
        "pull unknown topic",
        "Shard",
        "Pull",
        pb.PullRequest(topic="nosuchtopic"),
        OK.NOT_FOUND,
        "does not exist",
    ),
    (
        "offsets of a queue past the count",
        "Shard",
        "QueueOffsets",
        pb.QueueOffsetsRequest(topic=TOPIC, queue_id=99),
        OK.OUT_OF_RANGE,
        "has 8 queues",
    ),
    (
        "offsets of an unknown topic",
        "Shard",
        "QueueOffsets",
        pb.QueueOffsetsRequest(topic="nosuchtopic", queue_id=0),
        OK.NOT_FOUND,
        "does not exist",
    ),
    (
        "offsets of a negative queue",
        "Shard",
        "QueueOffsets",
        pb.QueueOffsetsRequest(topic=TOPIC, queue_id=-2),
        OK.INVALID_ARGUMENT,
        "queue_id -2 is negative",
    ),
    (
        "fetch for a bad group",
        "Shard",
        "FetchOffsets",
        pb.FetchOffsetsRequest(group="../g", topic=TOPIC, queue_ids=[0]),
        OK.INVALID_ARGUMENT,
        "group name",
    ),
    (
        "fetch for a queue past the count",
        "Shard",
        "FetchOffsets",
        pb.FetchOffsetsRequest(group="g", topic=TOPIC, queue_ids=[0, 8]),
        OK.OUT_OF_RANGE,
        "has 8 queues",
    ),
    (
        "bad group",
        "Shard",
        "CommitOffsets",
        pb.CommitOffsetsRequest(
            group="../g", topic=TOPIC, offsets=[pb.QueueOffset(queue_id=0, offset=0)]
        ),
        OK.INVALID_ARGUMENT,
        "group name",
    ),
    (
        "commit past the end",
        "Shard",
        "CommitOffsets",
        pb.CommitOffsetsRequest(
            group="g", topic=TOPIC, offsets=[pb.QueueOffset(queue_id=0, offset=99)]
        ),
        OK.OUT_OF_RANGE,
        "ends at 1",
    ),
    (
        "commit negative offset",
        "Shard",
        "CommitOffsets",
        pb.CommitOffsetsRequest(
            group="g", topic=TOPIC, offsets=[pb.QueueOffset(queue_id=0, offset=-2)]
        ),
        OK.INVALID_ARGUMENT,
        "negative",
    ),
    (
        "bad msg id",
        "Shard",
        "GetByMsgId",
        pb.GetByMsgIdRequest(msg_id="zz"),
        OK.INVALID_ARGUMENT,
        "hex digits",
    ),
    (
        "foreign msg id",
        "Shard",
        "GetByMsgId",
        pb.GetByMsgIdRequest(msg_id="0A0000010000000100000000000000FF"),
        OK.NOT_FOUND,
        "not a shard of this process",
    ),
    (
        "bad host assignment",
        "Shard",
        "HostTopic",
        pb.HostTopicRequest(topic="x", queues=[pb.QueueAssignment(queue_id=5, shard=0)]),
        OK.INVALID_ARGUMENT,
        "queue ids must be",
    ),
    (
        "create with no queues",
        "Route",
        "CreateTopic",
        pb.CreateTopicRequest(topic="t0", queues=0),
        OK.INVALID_ARGUMENT,
        "between 1 and 1024",
    ),
    (
        "create with too many queues",
        "Route",
        "CreateTopic",
        pb.CreateTopicRequest(topic="t0", queues=100000),
        OK.INVALID_ARGUMENT,
        "between 1 and 1024",
    ),
    (
        "create a climbing topic",
        "Route",
        "CreateTopic",
        pb.CreateTopicRequest(topic="../up", queues=1),
        OK.INVALID_ARGUMENT,
        "contains '.'",
    ),
    (
        "route of an unknown topic",
        "Route",
        "GetRoute",
        pb.GetRouteRequest(topic="nosuchtopic"),
        OK.NOT_FOUND,
        "does not exist",
    ),
    (
        "delete an unknown topic",
        "Route",
        "DeleteTopic",
        pb.DeleteTopicRequest(topic="nosuchtopic"),
        OK.NOT_FOUND,
        "does not exist",
    ),
]
