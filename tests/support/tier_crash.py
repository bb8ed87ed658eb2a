"""A writer on a tiered store killed with SIGKILL while it uploads and evicts: the crash
loop the tier's recovery tests share. Each of three rounds starts a writer that appends to
two queues, uploads and runs retention every 400 messages, and kills it a little later
each round, once it has written 4,000 messages."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import rmq

from bench.peers.s3 import S3Server

WRITER = textwrap.dedent(
    """
    import json, sys, rmq
    path, bucket, endpoint, options = sys.argv[1:5]
    store = rmq.Store(path, commitlog_segment_size=64 * 1024, tier_url=f"s3://{bucket}/shard-0",
                      tier_endpoint=endpoint, local_retention_bytes=0, **json.loads(options))
    i = 0
    while True:
        store.put("Orders", b"x" * 300, queue_id=i % 2, keys=[f"k{i}"])
        i += 1
        if i % 400 == 0:
            store.upload_to_tier()
            store.run_retention()
        if i == 4000:
            print("ready", flush=True)
    """
)

ROUNDS = 3
MESSAGES_PER_ROUND = 4000


def kill_tiered_writers(path: Path, s3_server: S3Server, bucket: str, options: str = "{}") -> None:
    """Run the writer on ``path`` and kill it, ``ROUNDS`` times; ``options`` is a JSON
    object of further ``rmq.Store`` keyword arguments."""
    for round_ in range(ROUNDS):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), bucket, s3_server.endpoint, options],
            env=s3_server.subprocess_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.3 * (round_ + 1))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()


def read_both_queues_whole(store: rmq.Store) -> list[int]:
    """Read each queue the writer wrote from offset 0 to its end and check that no entry is
    missing there (a queue nothing evicted, or one whose evicted part comes from the
    bucket); each queue's end offset."""
    ends = []
    for q in (0, 1):
        assert store.min_offset("Orders", q) == 0
        offset, end = 0, store.max_offset("Orders", q)
        while offset < end:
            got = store.get("Orders", q, offset, 20_000)
            assert [m.queue_offset for m in got] == list(range(offset, offset + len(got)))
            assert got, f"queue {q} stops at {offset} of {end}"
            offset += len(got)
        ends.append(end)
    return ends
