"""Reads of data only the tier holds fail loudly (issue 19, docs/errors.md), against a
real S3-compatible server (versitygw on loopback, bench/peers/s3.py): with the
server killed, every kind of read of evicted data (pull by queue offset through an
evicted queue file, read at a commit-log offset, key and msgId lookups, search by time)
raises ``TierError`` with ``unreachable`` set, never an empty answer, and works again
once the server is back; an object deleted or replaced behind the store's back raises
``TierObjectChangedError`` (a ``CorruptRecordError`` and a ``TierError``) until it is
restored. Local data reads on regardless.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
import rmq
from rmq.client import Client
from rmq.client.messages import QueueRoute
from rmq.errors import CorruptRecordError, TierError, TierObjectChangedError
from rmq.proto.v1 import broker_pb2 as pb
from rmq.proto.v1 import broker_pb2_grpc as pb_grpc

from bench.peers.s3 import S3Server
from tests.support.tiered_store import (
    LOST_SEGMENT,
    broker_with_evicted_segment,
    read_queue,
    upload_and_evict,
)
from tests.support.tiered_store import open_store_with_small_queue_files as open_store

FIRST_SEGMENT = "shard-0/commitlog/" + f"{0:020d}"
FIRST_QUEUE_FILE = "shard-0/consumequeue/Orders/0/" + f"{0:020d}"


def evicted_store(path: Path, server: S3Server, bucket: str) -> list[rmq.PutResult]:
    """A closed store whose oldest segments and queue files are only in the bucket."""
    store = open_store(path, server, bucket, local_retention_bytes=0)
    results = [
        store.put("Orders", f"order {i} ".encode() * 6, queue_id=i % 2, keys=[f"order-{i}"])
        for i in range(1500)
    ]
    upload_and_evict(store)
    store.close()
    state = json.loads((path / "tier" / "state.json").read_text())
    assert not state["segments"][str(0)]["local"]
    assert not state["consumeQueues"]["Orders/0/" + f"{0:020d}"]["local"]
    return results


def evicted_reads(store: rmq.Store, first: rmq.PutResult) -> dict[str, Callable[[], Any]]:
    """Each kind of read, of the first message (in an evicted segment and queue file)."""
    return {
        "get": lambda: store.get("Orders", 0, 0, 10),
        "get_at": lambda: store.get_at(first.commitlog_offset),
        "query_by_key": lambda: store.query_by_key("Orders", "order-0"),
        "get_by_msg_id": lambda: store.get_by_msg_id(first.msg_id),
        "offset_for_time": lambda: store.offset_for_time("Orders", 0, first.store_timestamp),
    }


def test_reads_of_evicted_data_fail_while_the_server_is_down_and_work_once_it_is_back(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    results = evicted_store(path, aws_env, s3_bucket)
    store = rmq.Store(str(path))  # nothing of the bucket cached
    before = read_queue(store, 0)
    store.close()
    store = rmq.Store(str(path))
    aws_env.kill()
    try:
        for name, read in evicted_reads(store, results[0]).items():
            with pytest.raises(TierError) as raised:
                read()
            assert raised.value.unreachable, name
            assert not isinstance(raised.value, CorruptRecordError), name
        # Local data is unaffected: the newest queue file and segment.
        tail = store.get("Orders", 0, 740, 10)
        assert [m.queue_offset for m in tail] == list(range(740, 750))
        status = store.tier_status()
        assert status is not None and status["reads"]["queue_read_failure"]
    finally:
        aws_env.start()
    assert read_queue(store, 0) == before
    assert store.get_by_msg_id(results[0].msg_id).body == before[0][1]
    assert store.offset_for_time("Orders", 0, results[0].store_timestamp) == 0
    store.close()


def test_an_object_deleted_or_replaced_behind_the_stores_back_fails_until_restored(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    path = tmp_path / "store"
    results = evicted_store(path, aws_env, s3_bucket)
    first = results[0]
    client = aws_env.client()
    saved = {}
    for key in (FIRST_SEGMENT, FIRST_QUEUE_FILE):
        got = client.get_object(Bucket=s3_bucket, Key=key)
        saved[key] = (got["Body"].read(), got["Metadata"])
    assert saved[FIRST_SEGMENT][1], "the upload keeps the CRC32 with the object"

    client.delete_object(Bucket=s3_bucket, Key=FIRST_SEGMENT)
    store = rmq.Store(str(path))
    with pytest.raises(TierObjectChangedError, match="gone from the bucket") as raised:
        store.get_at(first.commitlog_offset)
    assert isinstance(raised.value, CorruptRecordError) and isinstance(raised.value, TierError)
    assert FIRST_SEGMENT in raised.value.object and not raised.value.unreachable
    with pytest.raises(TierObjectChangedError):
        store.query_by_key("Orders", "order-0")

    # Replaced through the S3 API by other bytes of the same size: the GET's answer no
    # longer carries the recorded CRC32, so not one block of it is served.
    segment_bytes, _ = saved[FIRST_SEGMENT]
    client.put_object(Bucket=s3_bucket, Key=FIRST_SEGMENT, Body=bytes(len(segment_bytes)))
    with pytest.raises(TierObjectChangedError, match="uploaded as") as raised:
        store.get_at(first.commitlog_offset)
    assert raised.value.offset >= 0

    # Restored (same bytes, same metadata): reads work again in the same store.
    data, metadata = saved[FIRST_SEGMENT]
    client.put_object(Bucket=s3_bucket, Key=FIRST_SEGMENT, Body=data, Metadata=metadata)
    assert store.get_at(first.commitlog_offset).body == b"order 0 " * 6
    store.close()

    # An evicted queue file gone (before the open, which may read a queue's first entry):
    # the pull that needs its entries fails, naming the queue offset, rather than
    # answering "no messages".
    client.delete_object(Bucket=s3_bucket, Key=FIRST_QUEUE_FILE)
    store = rmq.Store(str(path))
    with pytest.raises(TierObjectChangedError, match="gone from the bucket") as raised:
        store.get("Orders", 0, 0, 10)
    assert raised.value.queue_offset == 0 and FIRST_QUEUE_FILE in raised.value.object
    assert store.get("Orders", 1, 0, 1)[0].queue_offset == 0  # the other queue's file
    data, metadata = saved[FIRST_QUEUE_FILE]
    client.put_object(Bucket=s3_bucket, Key=FIRST_QUEUE_FILE, Body=data, Metadata=metadata)
    assert [m.queue_offset for m in store.get("Orders", 0, 0, 10)] == list(range(10))
    store.close()


def pull_status(client: Client, queue: QueueRoute, offset: int) -> tuple[grpc.StatusCode, str]:
    """The status of one raw Shard.Pull (no client retries) of ``queue`` at ``offset``."""
    request = pb.PullRequest(topic="Tiered", queue_id=queue.queue_id, offset=offset)
    with grpc.insecure_channel(queue.endpoint) as channel:
        try:
            answer = pb_grpc.ShardStub(channel).Pull(request, timeout=30, metadata=client.metadata)
        except grpc.RpcError as error:
            return error.code(), error.details() or ""
    assert answer.messages, "an OK pull of evicted messages must bring them"
    return grpc.StatusCode.OK, ""


def test_a_broker_pull_of_evicted_messages_answers_unavailable_or_data_loss(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    """Over gRPC: UNAVAILABLE while the tier cannot be reached (a client retries it),
    DATA_LOSS for an object gone from the bucket, never an empty pull."""
    bodies = [f"message {i} ".encode() * 8 for i in range(1200)]
    with broker_with_evicted_segment(
        tmp_path / "data", s3_server, s3_bucket, "Tiered", 1, bodies
    ) as evicted:
        c = evicted.client
        queue = c.route("Tiered").queues[0]
        client = s3_server.client()
        got = client.get_object(Bucket=s3_bucket, Key=LOST_SEGMENT)
        saved = (got["Body"].read(), got["Metadata"])
        s3_server.kill()
        try:
            code, details = pull_status(c, queue, 0)
            assert code == grpc.StatusCode.UNAVAILABLE, details
            assert "could not be reached" in details or "refused" in details, details
        finally:
            s3_server.start()
        client.delete_object(Bucket=s3_bucket, Key=LOST_SEGMENT)
        code, details = pull_status(c, queue, 0)
        assert code == grpc.StatusCode.DATA_LOSS, details
        assert "gone from the bucket" in details, details
        # Restored: the same pull brings the messages.
        client.put_object(Bucket=s3_bucket, Key=LOST_SEGMENT, Body=saved[0], Metadata=saved[1])
        assert pull_status(c, queue, 0)[0] == grpc.StatusCode.OK
