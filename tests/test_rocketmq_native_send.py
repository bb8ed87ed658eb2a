"""RocketMQ 5's SendMessage served by the native data plane (rmqnet), the one send path:
requests are answered and stored as the protocol says (each message's id and queue offset,
tags, keys and properties as RocketMQ's broker keeps them, a message group on one queue,
the others in turn over the process's queues), and every refusal gets the protocol's
code. The broker's ``rmq_native_requests`` metric proves the data plane answered every
request itself, so these tests fail if a send reaches the Python server.
"""

from __future__ import annotations

import gzip
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import rmq
from google.protobuf.timestamp_pb2 import Timestamp
from rmq._rmqcore import native_rocketmq_status_codes, native_rocketmq_system_properties
from rmq.cluster.local import LocalBroker
from rmq.rocketmq import message_codec
from rmq.rocketmq.status import status_for
from rmq.rocketmq.wire import rpc, service, v2

from tests.support.brokers import Brokers
from tests.support.engine_errors import ENGINE_ERRORS
from tests.support.native_requests import native_requests

PLANES = ("native",)
SEND_MESSAGE = "/apache.rocketmq.v2.MessagingService/SendMessage"
QUEUES = 4


def message(topic: str, message_id: str, body: bytes = b"body", **system: Any) -> Any:
    out = v2.Message(topic=v2.Resource(name=topic), body=body)
    out.system_properties.message_id = message_id
    out.system_properties.message_type = system.pop("message_type", v2.NORMAL)
    out.system_properties.body_encoding = system.pop("body_encoding", v2.IDENTITY)
    for name, value in system.pop("user_properties", {}).items():
        out.user_properties[name] = value
    out.system_properties.keys.extend(system.pop("keys", []))
    born = system.pop("born_ms", None)
    if born is not None:
        out.system_properties.born_timestamp.CopyFrom(
            Timestamp(seconds=born // 1000, nanos=born % 1000 * 1_000_000 + 123)
        )
    for name, value in system.items():
        if isinstance(value, Timestamp):
            getattr(out.system_properties, name).CopyFrom(value)
        else:
            setattr(out.system_properties, name, value)
    return out


def fifo(topic: str, message_id: str, group: str, **system: Any) -> Any:
    return message(topic, message_id, message_type=v2.FIFO, message_group=group, **system)


def native_counts(broker: LocalBroker) -> dict[str, float]:
    """The broker's ``rmq_native_requests`` for SendMessage, by outcome."""
    found = native_requests(broker)
    return {
        outcome: found.get((SEND_MESSAGE, outcome), 0.0) for outcome in ("answered", "declined")
    }


class Plane:
    """A broker of one data plane, its stub to the shard process that hosts queue 0 of
    the test's topics, and that process's queues."""

    def __init__(self, broker: LocalBroker, client: rmq.Client, topics: list[str]) -> None:
        self.broker = broker
        routes = [client.create_topic(topic, QUEUES) for topic in topics]
        endpoint = routes[0].queues[0].endpoint
        self.local = [q.queue_id for q in routes[0].queues if q.endpoint == endpoint]
        self.channel = grpc.insecure_channel(endpoint)
        self.stub = service.MessagingServiceStub(self.channel)
        self.client = client

    def send(self, *messages: Any) -> Any:
        return self.stub.SendMessage(rpc.SendMessageRequest(messages=messages), timeout=10)

    def ends(self, topics: list[str]) -> list[int]:
        return [self.client.queue_offsets(t, q)[1] for t in topics for q in range(QUEUES)]


def start_planes(brokers: Brokers, topics: list[str]) -> dict[str, Plane]:
    planes = {}
    for plane in PLANES:
        broker = brokers.start(shards=2)
        planes[plane] = Plane(broker, brokers.client(broker), topics)
    assert 1 < len(planes["native"].local) < QUEUES  # round robin over this process's only
    return planes


def stored(data_dir: Path, topics: list[str], born_given: set[str]) -> list[tuple[Any, ...]]:
    """Every record of ``topics`` in a stopped broker's stores, as far as the test can
    know them: not the store time, nor the client's port, nor the born time of messages
    whose client gave none (``born_given`` names those that did), which the store took at
    the put."""
    out = []
    for path in sorted(data_dir.glob("shard-*")):
        with rmq.Store(str(path)) as store:
            for topic in topics:
                if topic not in store.topics():
                    continue
                for queue_id in range(store.queue_count(topic)):
                    for m in store.get(topic, queue_id, 0, 1000):
                        given = m.properties.get(message_codec.UNIQ_KEY) in born_given
                        out.append(
                            (
                                path.name,
                                m.topic,
                                m.queue_id,
                                m.queue_offset,
                                m.body,
                                m.tags,
                                m.keys,
                                list(m.properties.items()),  # in the record's order
                                m.flag,
                                m.sys_flag,
                                m.born_host.rpartition(":")[0],
                                m.born_timestamp if given else None,
                            )
                        )
    return out


def test_sends_are_answered_and_stored_as_the_protocol_says(brokers: Brokers) -> None:
    a, b = f"na-{uuid.uuid4().hex[:6]}", f"nb-{uuid.uuid4().hex[:6]}"
    planes = start_planes(brokers, [a, b])
    properties = {"zeta": "1", "alpha": "2", "mid": "3", "b": "4", "k9": "5", "x": "6"}
    taken = [  # every message plainly acceptable
        [message(a, "M-1", tag="t1", keys=["k1", "k2"], user_properties=properties)],
        [
            message(a, f"M-2-{i}", f"body {i}".encode(), user_properties={"n": str(i)})
            for i in range(5)
        ],
        [
            fifo(a, f"M-3-{i}", group, tag="ordered")
            for i, group in enumerate(["g1", "g2", "g1", "g3", "g2"])
        ],
        [message(a, "M-4-0"), message(b, "M-4-1"), fifo(a, "M-4-2", "g1"), message(b, "M-4-3")],
        [
            message(a, "M-5-0", message_type=v2.MESSAGE_TYPE_UNSPECIFIED, tag="标签", keys=["键"]),
            message(a, "M-5-1", message_type=v2.MESSAGE_TYPE_UNSPECIFIED, message_group="g4"),
            message(a, "M-5-2", body_encoding=v2.ENCODING_UNSPECIFIED, user_properties={"é": "ü"}),
        ],
        [message(a, "M-6", born_ms=1_700_000_000_123, tag=" spaced ")],
        [fifo(b, f"M-7-{i}", "big", body=bytes(range(256)) * 256) for i in range(3)],
    ]
    unusual = [  # a gzip body; a request with one message refused
        [fifo(a, "M-8", "gz", body=gzip.compress(b"zipped"), body_encoding=v2.GZIP)],
        [fifo(a, "M-9-0", "g2"), fifo(a, "M-9-1", "g2", body=b"")],  # one good, one refused
    ]
    answers: dict[str, list[Any]] = {}
    for name, plane in planes.items():
        answers[name] = [plane.send(*request) for request in taken + unusual]
        counts = native_counts(plane.broker)
        assert counts == {"answered": len(taken) + len(unusual), "declined": 0}
    for answer, request in zip(answers["native"][: len(taken)], taken, strict=True):
        assert answer.status == v2.Status(code=v2.OK, message="OK")
        assert [e.message_id for e in answer.entries] == [
            m.system_properties.message_id for m in request
        ]
    mixed = answers["native"][-1]
    assert mixed.status.code == v2.MESSAGE_BODY_EMPTY
    assert [e.status.code for e in mixed.entries] == [v2.OK, v2.MESSAGE_BODY_EMPTY]

    records = {}
    for name, plane in planes.items():
        plane.channel.close()
        plane.broker.stop()
        records[name] = stored(plane.broker.data_dir, [a, b], {"M-6"})
    everything = records["native"]
    assert len(everything) == sum(len(r) for r in taken) + 2
    by_id = {dict(r[7])["UNIQ_KEY"]: r for r in everything}
    first = by_id["M-1"]
    assert (first[5], first[6]) == ("t1", ["k1", "k2"])
    assert first[7] == [*sorted(properties.items()), ("UNIQ_KEY", "M-1")]
    assert by_id["M-6"][11] == 1_700_000_000_123
    assert by_id["M-8"][4] == b"zipped"
    groups: dict[str, set[tuple[str, int]]] = {}
    for record in everything:
        group = dict(record[7]).get("__SHARDINGKEY")
        if group is not None:
            groups.setdefault(group, set()).add((record[1], record[2]))
    assert all(len(queues) == 1 for queues in groups.values()), groups
    local = set(planes["native"].local)
    assert {record[2] for record in everything} <= local
    round_robin = [by_id[f"M-2-{i}"][2] for i in range(5)]
    assert len(set(round_robin)) == len(local)  # turns over every local queue


@pytest.fixture(scope="module")
def refusing(module_brokers: Brokers) -> Iterator[tuple[str, dict[str, Plane]]]:
    topic = f"nr-{uuid.uuid4().hex[:6]}"
    planes = start_planes(module_brokers, [topic])
    yield topic, planes
    for plane in planes.values():
        plane.channel.close()


def refusals(topic: str) -> list[tuple[list[Any], str]]:
    good = message(topic, "GOOD")
    return [
        ([message(topic, "R", user_properties={"UNIQ_KEY": "x"})], "ILLEGAL_MESSAGE_PROPERTY_KEY"),
        (
            [message(topic, "R", user_properties={"__BORNHOST": "x"})],
            "ILLEGAL_MESSAGE_PROPERTY_KEY",
        ),
        ([message(topic, "R", user_properties={"p": ""})], "ILLEGAL_MESSAGE_PROPERTY_KEY"),
        ([message(topic, "R", user_properties={"p": "a\x01b"})], "ILLEGAL_MESSAGE_PROPERTY_KEY"),
        ([message(topic, "R", user_properties={"__CRC32#": "1"})], "BAD_REQUEST"),
        ([message(topic, "R", body=b"")], "MESSAGE_BODY_EMPTY"),
        ([message(topic, "R", body=b"x" * (4 * 1024 * 1024 + 1))], "MESSAGE_BODY_TOO_LARGE"),
        ([message(topic, "")], "ILLEGAL_MESSAGE_ID"),
        ([message(topic, "R", message_type=v2.FIFO)], "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE"),
        ([message(topic, "R", message_group="g")], "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE"),
        ([message(topic, "R", message_type=v2.DELAY)], "NOT_IMPLEMENTED"),
        ([message(topic, "R", message_type=v2.TRANSACTION)], "NOT_IMPLEMENTED"),
        (
            [message(topic, "R", delivery_timestamp=Timestamp(seconds=2_000_000_000))],
            "NOT_IMPLEMENTED",
        ),
        ([message(topic, "R", message_type=v2.LITE)], "UNSUPPORTED"),
        ([message(topic, "R", tag="a|b")], "ILLEGAL_MESSAGE_TAG"),
        ([message(topic, "R", tag=" ")], "ILLEGAL_MESSAGE_TAG"),
        ([message(topic, "R", tag="\u3000")], "ILLEGAL_MESSAGE_TAG"),
        ([message(topic, "R", keys=["two words"])], "ILLEGAL_MESSAGE_KEY"),
        ([message(topic, "R", keys=["\t"])], "ILLEGAL_MESSAGE_KEY"),
        ([fifo(topic, "R", " ")], "ILLEGAL_MESSAGE_GROUP"),
        ([message(topic, "R", body=b"not gzip", body_encoding=v2.GZIP)], "MESSAGE_CORRUPTED"),
        ([message("no-such-topic", "R")], "TOPIC_NOT_FOUND"),
        ([message("", "R")], "ILLEGAL_TOPIC"),
        ([], "BAD_REQUEST"),
        ([good, message(topic, "R", tag="|")], "ILLEGAL_MESSAGE_TAG"),
    ]


def test_every_refusal_gets_its_code_and_stores_nothing(
    refusing: tuple[str, dict[str, Plane]],
) -> None:
    topic, planes = refusing
    cases = refusals(topic)
    for name, plane in planes.items():
        before = native_counts(plane.broker)
        for request, code in cases:
            ends = plane.ends([topic])
            answer = plane.send(*request)
            assert v2.Code.Name(answer.status.code) == code, (name, request, answer)
            if request and request[0].system_properties.message_id == "GOOD":
                # Each message gets its own answer: the good one is stored.
                assert answer.entries[0].status.code == v2.OK
                assert sum(plane.ends([topic])) == sum(ends) + 1
                continue
            assert plane.ends([topic]) == ends, (name, request)
        after = native_counts(plane.broker)
        assert after["answered"] == before["answered"] + len(cases)
        assert after["declined"] == before["declined"] == 0


def test_the_native_plane_takes_a_plain_send_after_refusals(
    refusing: tuple[str, dict[str, Plane]],
) -> None:
    topic, planes = refusing
    native = planes["native"]
    before = native_counts(native.broker)
    answer = native.send(message(topic, "PLAIN", tag="t", keys=["k"]))
    assert answer.status.code == v2.OK
    assert native_counts(native.broker)["answered"] == before["answered"] + 1


def test_the_native_v2_status_table_is_the_python_one() -> None:
    native = native_rocketmq_status_codes()
    assert sorted(native) == sorted(cls.__name__ for cls in ENGINE_ERRORS)
    for cls in ENGINE_ERRORS:
        assert native[cls.__name__] == status_for(cls.__new__(cls)).code, cls.__name__


def test_the_reserved_properties_hold_what_the_codec_sets_itself() -> None:
    """Both paths refuse the data plane's one list; it must hold every property the
    codec writes from a message's own fields, or a user property could overwrite one."""
    native = native_rocketmq_system_properties()
    assert len(native) == len(set(native))
    assert {"TAGS", "KEYS", message_codec.UNIQ_KEY, message_codec.MESSAGE_GROUP} <= set(native)


def test_without_the_protocol_the_native_plane_stores_no_v2_send(brokers: Brokers) -> None:
    """``--rocketmq-port 0`` turns RocketMQ 5 off: a SendMessage to a shard process is
    unknown there, and stores nothing."""
    broker = brokers.start(shards=1, args=["--rocketmq-port", "0"])
    client = brokers.client(broker)
    topic = "off"
    endpoint = client.create_topic(topic, 2).queues[0].endpoint
    with grpc.insecure_channel(endpoint) as channel:
        stub = service.MessagingServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.SendMessage(rpc.SendMessageRequest(messages=[message(topic, "M")]), timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert [client.queue_offsets(topic, q)[1] for q in range(2)] == [0, 0]
    assert native_counts(broker) == {"answered": 0, "declined": 0}  # not its call at all
