#!/usr/bin/env python3
"""The messages of the RocketMQ interop fixtures, as the harness's write input.

Prints JSON lines (one message, or one batch, per line) in the format of the Java
harness's ``write`` command (see tests/interop/src/main/java/rmq/interop/MessageSpec.java).
The list is deterministic: ``scripts/regen-rocketmq-fixtures`` feeds it to RocketMQ, and
tests/test_interop_rocketmq_write.py feeds the same messages to rmq for the other direction.

It covers: several topics and queues, tags, several keys per message, a key shared by
many messages and the same key in two topics, unicode in tags, keys, properties and
bodies, a property value holding 0x01, empty, binary and large bodies (the large ones
make 8 KiB commit-log segments roll), every IPv4/IPv6 combination of born and store
host, user flags, a retry topic with reconsume times, a committed and a prepared
transaction record, and a batch with batch-level properties.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from typing import Any

BORN_TIMESTAMP = 1_700_000_000_000
V4_BORN = "10.1.2.3:52001"
V4_STORE = "192.168.0.10:10911"
V6_BORN = "[2001:db8::7]:52002"
V6_STORE = "[fd00::10]:10911"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def uniq_key(n: int) -> str:
    """A client-style unique id: 32 uppercase hex characters."""
    return f"0A010203{n:08X}C0FFEE{n * 7919:010X}"


def large_body(n: int, size: int) -> bytes:
    """Readable, compressible text of exactly ``size`` bytes (so fixtures stay small)."""
    line = f"large body {n}: the quick brown fox jumps over the lazy dog; 速い茶色の狐 {n}\n"
    data = (line * (size // len(line.encode()) + 1)).encode()
    return data[:size]


def message(
    n: int,
    topic: str,
    queue_id: int,
    body: bytes,
    *,
    tags: str | None = None,
    keys: list[str] | None = None,
    properties: dict[str, str] | None = None,
    born_host: str = V4_BORN,
    store_host: str = V4_STORE,
    flag: int = 0,
    with_uniq_key: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    props = dict(properties or {})
    if with_uniq_key:
        props["UNIQ_KEY"] = uniq_key(n)
    line: dict[str, Any] = {
        "topic": topic,
        "queueId": queue_id,
        "body": b64(body),
        "bornHost": born_host,
        "storeHost": store_host,
        "bornTimestamp": BORN_TIMESTAMP + n,
        "flag": flag,
        "properties": props,
    }
    if tags is not None:
        line["tags"] = tags
    if keys:
        line["keys"] = keys
    line.update(extra)
    return line


def fixture_messages() -> Iterator[dict[str, Any]]:
    n = 0

    def next_n() -> int:
        nonlocal n
        n += 1
        return n

    # TopicA: four queues, two tags, 1-3 keys each; "order-42" is shared by many.
    for i in range(18):
        k = next_n()
        keys = (
            [f"order-{i}"]
            + (["order-42"] if i % 3 == 0 else [])
            + ([f"user-{i % 5}"] if i % 2 else [])
        )
        yield message(
            k,
            "TopicA",
            i % 4,
            f"hello {i} from TopicA".encode(),
            tags="TagA" if i % 2 == 0 else "TagB",
            keys=keys,
            properties={"color": ["red", "green", "blue"][i % 3], "seq": str(i)},
        )

    # Unicode everywhere a producer can put it; the same key "order-42" in another topic.
    yield message(
        next_n(),
        "TopicUnicode",
        0,
        "żółć 日本語 emoji 🚀 Ünïcödé".encode(),
        tags="标签",
        keys=["ключ", "order-42", "clé-🔑"],
        properties={"名前": "値", "note": "multi\u0001part value", "empty-ish": " "},
    )
    yield message(
        next_n(),
        "TopicUnicode",
        1,
        "second unicode message ✓".encode(),
        tags="Tag with spaces",
        keys=["ключ"],
    )

    # Bodies: empty, binary, no properties at all, large ones that roll 16 KiB segments.
    yield message(next_n(), "TopicBodies", 0, b"", tags="empty", keys=["empty-body"])
    yield message(next_n(), "TopicBodies", 0, bytes(range(256)), keys=["binary-body"], flag=7)
    yield message(next_n(), "TopicBodies", 1, b"no properties", with_uniq_key=False)
    for i, size in enumerate([3000, 5000, 2000, 7000, 4000, 6000, 2500]):
        k = next_n()
        yield message(
            k,
            "TopicLarge",
            i % 2,
            large_body(k, size),
            tags="large",
            keys=[f"large-{i}"],
            flag=2**31 - 1 if i == 0 else -1 if i == 1 else 0,
        )

    # Every combination of IPv4 and IPv6 born and store hosts.
    for i, (born, store) in enumerate(
        [(V4_BORN, V6_STORE), (V6_BORN, V4_STORE), (V6_BORN, V6_STORE), (V4_BORN, V4_STORE)]
    ):
        yield message(
            next_n(),
            "TopicHosts",
            i % 2,
            f"host combination {i}".encode(),
            tags="hosts",
            keys=[f"host-{i}"],
            born_host=born,
            store_host=store,
        )

    # A redelivered message in a retry topic.
    yield message(
        next_n(),
        "%RETRY%GroupA",
        0,
        b"retried body",
        tags="TagA",
        keys=["retry-1"],
        properties={
            "RETRY_TOPIC": "TopicA",
            "ORIGIN_MESSAGE_ID": "C0A8000A00002A9F0000000000000000",
        },
        reconsumeTimes=3,
    )

    # Transactions: a committed record (dispatched) and a prepared half (indexed only).
    yield message(
        next_n(),
        "TopicTx",
        0,
        b"committed transaction",
        tags="tx",
        keys=["tx-commit"],
        properties={"TRAN_MSG": "true", "PGROUP": "ProducerGroupTx"},
        sysFlag=0x8,
        preparedTransactionOffset=1234,
    )
    yield message(
        next_n(),
        "TopicTx",
        0,
        b"prepared transaction half",
        tags="tx",
        keys=["tx-prepared"],
        properties={"TRAN_MSG": "true", "PGROUP": "ProducerGroupTx"},
        sysFlag=0x4,
    )

    # One batch: members carry their own tags/keys/properties, the batch adds its own.
    members = []
    for i in range(3):
        k = next_n()
        members.append(
            {
                "tags": f"batch-{i}",
                "keys": [f"batch-key-{i}", "batch-all"],
                "properties": {"UNIQ_KEY": uniq_key(k), "member": str(i)},
                "body": b64(f"batch member {i}".encode()),
                "flag": i,
            }
        )
    yield {
        "topic": "TopicBatch",
        "queueId": 1,
        "bornHost": V6_BORN,
        "storeHost": V4_STORE,
        "bornTimestamp": BORN_TIMESTAMP + next_n(),
        "properties": {"batch-level": "yes"},
        "batch": members,
    }

    # A few more TopicA messages after the large ones, so a queue spans several segments.
    for i in range(18, 22):
        yield message(
            next_n(),
            "TopicA",
            i % 4,
            f"late {i}".encode(),
            tags="TagA",
            keys=[f"order-{i}", "order-42"],
        )


# Consumer groups long enough that their retry and dead-letter topics pass the V1
# layout's 127 bytes: RocketMQ 5 writes those records as V2. The longest makes a
# 255-byte topic, the most a consume-queue directory name can hold.
LONG_GROUP = "LongConsumerGroup_" + "x" * 120
LONGEST_GROUP = "G" * 248
LONG_TOPICS = [
    f"%RETRY%{LONG_GROUP}",
    f"%DLQ%{LONG_GROUP}",
    f"%RETRY%{LONGEST_GROUP}",
]


def long_topic_messages(first_n: int) -> Iterator[dict[str, Any]]:
    """Redeliveries into the long retry and DLQ topics, interleaved with V1 records."""
    for i in range(12):
        n = first_n + i
        topic = LONG_TOPICS[i % len(LONG_TOPICS)]
        yield message(
            n,
            topic,
            0,
            f"redelivered {i} through {topic[:12]}".encode(),
            tags="TagA",
            keys=[f"long-{i}", "long-all"],
            properties={"RETRY_TOPIC": "TopicA", "ORIGIN_MESSAGE_ID": uniq_key(i)},
            reconsumeTimes=1 + i % 16,
        )
        if i % 4 == 3:
            yield message(n + 1000, "TopicA", i % 4, f"between {i}".encode(), tags="TagB")


def main() -> None:
    """Prints the messages; ``--long-topics`` adds the long retry/DLQ topics (RocketMQ 5)."""
    lines = list(fixture_messages())
    if "--long-topics" in sys.argv[1:]:
        lines += long_topic_messages(first_n=len(lines) + 1)
    for line in lines:
        sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
