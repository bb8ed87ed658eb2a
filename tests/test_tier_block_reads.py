"""Records read from the tier's block cache at every position against a block boundary
(issue 19, format §7.4), against a real S3-compatible server (versitygw on loopback).

A record inside one 64 KiB block is served as a slice of that block; one crossing into
the next block, or whose length field does, is read again whole. The blocks' buffers are
reused once the cache pushes blocks out, so the store here is larger than the cache:
every record must still arrive intact and in order."""

from __future__ import annotations

from pathlib import Path

import rmq

from bench.peers.s3 import S3Server

SEGMENT = 8 << 20
BLOCK = 64 << 10
CACHE = 64 << 20  # the engine's default tier read cache
TOPIC = "Edges"


def record_size(store: rmq.Store, body_len: int) -> int:
    before = store.commitlog_max_offset()
    store.put(TOPIC, b"s" * body_len)
    return store.commitlog_max_offset() - before


def test_records_at_every_block_edge_arrive_intact_through_reused_buffers(
    tmp_path: Path, aws_env: S3Server, s3_bucket: str
) -> None:
    store = rmq.Store(
        str(tmp_path / "store"),
        commitlog_segment_size=SEGMENT,
        tier_url=f"s3://{s3_bucket}/shard-0",
        tier_endpoint=aws_env.endpoint,
        local_retention_bytes=0,
    )
    store.create_topic(TOPIC, 1)
    overhead = record_size(store, 100) - 100
    assert record_size(store, 2000) == overhead + 2000
    bodies = [b"s" * 100, b"s" * 2000]
    # Where each record starts relative to the next block boundary: 2 bytes before it
    # (its length field crosses), 100 before it (the record crosses), just after it, and
    # anywhere (sizes stepping through a prime).
    edges = [2, 100, 0, None]
    step = 0
    while store.commitlog_max_offset() < 10 * SEGMENT + (1 << 20):
        edge = edges[step % len(edges)]
        step += 1
        if edge is not None:
            here = store.commitlog_max_offset()
            boundary = (here // BLOCK + 1) * BLOCK
            filler = boundary - edge - here - overhead
            if filler > 0:
                body = bytes([step % 251]) * filler
                store.put(TOPIC, body)
                bodies.append(body)
        body = f"{step}:".encode().ljust(1000 + (step * 613) % 5000, b"e")
        store.put(TOPIC, body)
        bodies.append(body)
    store.upload_to_tier()
    store.run_retention()
    status = store.tier_status()
    assert status is not None
    evicted = [s for s in status["segments"] if s["state"] == "evicted"]
    assert len(evicted) >= 9, [s["state"] for s in status["segments"]]
    evicted_bytes = sum(s["size"] for s in evicted)
    assert evicted_bytes > CACHE, "the read must push blocks out of the cache"

    # Where records start: the offsets the log gives them, read back from the store.
    got: list[bytes] = []
    starts: list[int] = []
    offset = store.min_offset(TOPIC, 0)
    end = store.max_offset(TOPIC, 0)
    while offset < end:
        batch = store.get(TOPIC, 0, offset, 32)
        assert batch, f"the read stopped at {offset} of {end}"
        got.extend(m.body for m in batch)
        starts.extend(m.commitlog_offset for m in batch)
        offset = batch[-1].queue_offset + 1
    assert len(got) == len(bodies)
    assert got == bodies

    evicted_end = max(s["start_offset"] + s["size"] for s in evicted)
    in_tier = [
        (start, len(body)) for start, body in zip(starts, got, strict=True) if start < evicted_end
    ]
    length_crosses = sum(1 for start, _ in in_tier if start % BLOCK > BLOCK - 4)
    record_crosses = sum(
        1 for start, size in in_tier if start // BLOCK != (start + size + overhead - 1) // BLOCK
    )
    assert length_crosses >= 100, length_crosses
    assert record_crosses >= 500, record_crosses
    status = store.tier_status()
    assert status is not None
    reads = status["reads"]
    assert reads["bytes_fetched"] >= evicted_bytes, "every evicted byte came from the bucket"
    store.close()
