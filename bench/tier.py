"""``tier``: a store whose old segments live only in an S3 bucket against the same store all
local: sequential consume, query_by_key, and upload throughput against a plain multipart
upload. The fixture, the read cases and the upload cases are in `tier_fixture.py`,
`tier_reads.py` and `tier_upload.py`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.harness import Benchmark, Case, Context, Metrics, System
from bench.tier_fixture import (
    BATCH,
    BODY,
    CONCURRENCY,
    CONSUME_BATCH,
    PART,
    QUEUES,
    Fixture,
    open_local,
)
from bench.tier_reads import consume, query
from bench.tier_upload import upload_plain, upload_rmq


def run_rmq(fixture: Fixture, tiered: bool, case: Case, workdir: Path) -> Metrics:
    if case.params["kind"] == "upload":
        return upload_rmq(fixture, workdir)
    path = fixture.tiered if tiered else fixture.local
    # Reopened without tier options: a tiered store's state names its tier. The index
    # sizes must be given again (they are not 5M/20M nor 1:4 of RocketMQ's defaults).
    with open_local(fixture, path) as store:
        if tiered and store.tier_status() is None:
            raise RuntimeError("the tiered copy opened without its tier")
        if case.params["kind"] == "consume":
            return consume(store, case.params["queues"])
        seed = int(time.time_ns() % 1_000_000)
        return query(store, fixture, case.params["queries"], seed, case.params["window"])


def build(ctx: Context) -> Benchmark:
    store_bytes = ctx.pick(6 << 20, 512 << 20, 2 << 30)
    segment = ctx.pick(1 << 20, 64 << 20, 128 << 20)
    queries = ctx.pick(50, 400, 1000)
    fixture = Fixture(ctx, store_bytes, segment)

    def setup() -> None:
        fixture.acquire()

    def teardown() -> None:
        fixture.release()

    cases = [
        Case("consume queue 0 (msgs/s; goal tier >= 0.5x)", {"kind": "consume", "queues": [0]}),
        Case(
            f"consume all {QUEUES} queues in turn (msgs/s)",
            {"kind": "consume", "queues": list(range(QUEUES))},
        ),
        Case(
            "query_by_key, all time (1/p99)",
            {"kind": "query", "queries": queries, "window": False},
        ),
        Case(
            "query_by_key, its ms, max 1 (1/p99; goal tier >= 0.2x, i.e. p99 <= 5x local, "
            "<= 3 range reads)",
            {"kind": "query", "queries": queries, "window": True},
        ),
        Case("upload (MB/s; goal rmq >= 0.8x plain)", {"kind": "upload"}),
    ]
    read_cases = [c.label for c in cases[:4]]
    bench = Benchmark(
        name="tier",
        title="a store tiered to S3 against the same store all local",
        description=(
            f"One store of {store_bytes >> 20} MiB ({segment >> 20} MiB commit-log "
            f"segments, 1 KiB messages with a tag and a unique key, {QUEUES} queues written "
            f"a batch of {BATCH} to each in turn, the key index in about 8 files, all but "
            "the last compacted) is built once; a copy of it is opened with a tier on "
            "versitygw (a real S3 server on loopback, posix backend, --io-buffer-size 64 KiB; "
            "its CPU per ranged GET is in parameters.server), uploaded, and every "
            "sealed segment's local copy evicted (local_retention_bytes=0). Each round opens "
            "a store in a fresh process (empty block cache). consume: get(topic, q, offset, "
            "32) from each queue's first offset to its end, queue 0 alone, then all queues "
            "a batch from each in turn. query_by_key: random keys of messages in evicted "
            "segments, one at a time, p50/p99 latency and the range reads each needs (delta "
            "of tier_status()['reads']['range_reads']), once over all time (default "
            "max_count 64: every index file is searched) and once with begin = end = the "
            "message's store time and max_count=1 (only the index files whose span holds "
            "it); figure = 1/p99, so that higher is better here too. upload: a fresh copy of "
            "the local store opened with a new prefix, left to the background uploader "
            "(timed by polling tier_status every 10 ms until every sealed segment is "
            "confirmed); beside it upload_to_tier() called right after opening another "
            "fresh copy. Against boto3's managed upload of the same sealed segment files, "
            f"one after another, each multipart in {PART >> 20} MiB parts, {CONCURRENCY} at "
            "a time (the engine's part size and parts in flight), to the same server."
        ),
        cases=cases,
        systems=[
            System(
                "rmq tiered",
                lambda case, workdir: run_rmq(fixture, True, case, workdir),
                role="rmq",
                setup=setup,
                teardown=teardown,
                note="the tiered copy (set once it is built)",
            ),
            System(
                "rmq local",
                lambda case, workdir: run_rmq(fixture, False, case, workdir),
                role="baseline",
                setup=setup,
                teardown=teardown,
                cases=read_cases,
                note="the same store, all local (no tier)",
            ),
            System(
                "plain multipart",
                lambda case, workdir: upload_plain(fixture, case, workdir),
                role="limit",
                setup=setup,
                teardown=teardown,
                cases=[cases[4].label],
                note=f"boto3 upload_file, {PART >> 20} MiB parts, {CONCURRENCY} threads, no "
                "checksum beyond the SigV4 payload hash; what the server takes",
            ),
        ],
        primary="per_s",
        higher_is_better=True,
        parameters={
            "store_bytes": store_bytes,
            "segment": segment,
            "body": BODY,
            "queues": QUEUES,
            "consume_batch": CONSUME_BATCH,
            "queries": queries,
            "part_size": PART,
            "parts_in_flight": CONCURRENCY,
            "goals": {
                "consume": "tier msgs/s >= 0.5x local",
                "query_by_key": "tier p99 <= 3 range reads and <= 5x local p99",
                "upload": "upload_to_tier MB/s >= 0.8x plain multipart",
            },
        },
        columns={
            "per_s": "figure",
            "msgs_per_s": "msgs/s",
            "fetched_per_body_byte": "fetched ÷ body bytes",
            "p50_ms": "p50 ms",
            "p99_ms": "p99 ms",
            "range_reads_p99": "range reads p99",
            "range_reads_max": "range reads max",
            "mb_per_s": "MB/s",
            "engine_mb_per_s": "engine's MB/s",
            "upload_to_tier_mb_per_s": "upload_to_tier() MB/s",
            "upload_to_tier_uploaded_per_sealed_byte": "upload_to_tier(): uploaded ÷ sealed bytes",
        },
    )

    def describe(info: dict[str, Any]) -> None:
        bench.parameters["store"] = {k: v for k, v in info.items() if k != "peak_rss_mb"}
        bench.parameters["server"] = {
            "name": "versitygw v1.8.0, posix backend",
            "io_buffer_size": fixture.server.io_buffer_size,
            "cpu_us_per_ranged_get": fixture.server_get_cost,
            "cpu_us_per_ranged_get_default_1mib_buffer": fixture.default_get_cost,
        }
        bucket, local = info["index_files_in_bucket"], info["index_files_local_after_eviction"]
        if bucket:
            index = (
                f"{bucket:.0f} compacted index files uploaded and only in the bucket "
                f"({local:.0f} local: the one being written), so query_by_key reads the index "
                "and each record from the bucket"
            )
        else:
            index = (
                f"the key index stays local ({local:.0f} files; none in the bucket), so "
                "query_by_key reads the index locally and each record from the bucket"
            )
        bench.systems[0].note = (
            f"the tiered copy: {info['evicted_segments']:.0f} of {info['segments']:.0f} "
            "segments only in the bucket (every one but the one being written; read through a "
            "64 MiB cache of 64 KiB blocks, in ranged GETs of runs of blocks, a pull's next "
            f"records fetched ahead from its queue's entries); {index}; upload: the background "
            "uploader's MB/s is the figure, upload_to_tier() called right after opening is "
            "shown beside it"
        )

    fixture.on_built = describe
    return bench
