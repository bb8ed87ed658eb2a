"""``tier``: a store whose old segments live only in an S3 bucket against the same store all
local: sequential consume, query_by_key, and upload throughput against a plain multipart
upload."""

from __future__ import annotations

import array
import os
import random
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.basics import NotMeasurable
from bench.harness import (
    Benchmark,
    Case,
    Context,
    Metrics,
    System,
    percentile,
    rmq_store_class,
    run_one,
)
from bench.workload import TAGS, TOPIC

BODY = 1024
QUEUES = 4  # the topic's queues, written a batch to each in turn; case 1 reads queue 0
BATCH = 128
CONSUME_BATCH = 32
PART = 8 << 20  # the engine's multipart part size
CONCURRENCY = 4  # the engine's parts in flight
BUCKET = "rmq-bench-tier"
READ_PREFIX = "read"  # the tiered store that the read cases use


def key_of(i: int) -> str:
    return f"key-{i:09d}"


@dataclass
class Fixture:
    """One store built once per run, all local, and a copy of it tiered and evicted; the S3
    server they use. Shared by the systems, built by the first one set up."""

    ctx: Context
    store_bytes: int
    segment: int
    root: Path = field(init=False)
    server: Any = None
    info: dict[str, Any] = field(default_factory=dict)
    users: int = 0
    error: BaseException | None = None
    saved_env: dict[str, str | None] = field(default_factory=dict)
    on_built: Callable[[dict[str, Any]], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.root = self.ctx.work_dir / f"tier-data-{os.getpid()}"

    @property
    def local(self) -> Path:
        return self.root / "local"

    @property
    def tiered(self) -> Path:
        return self.root / "tiered"

    @property
    def endpoint(self) -> str:
        return str(self.server.endpoint)

    def acquire(self) -> None:
        with self.lock:
            if self.error is not None:
                raise self.error
            self.users += 1
            if self.server is not None:
                return
            try:
                self._build()
            except BaseException as exc:
                self.error = exc
                self.users -= 1
                self._stop()
                raise

    def release(self) -> None:
        with self.lock:
            self.users -= 1
            if self.users <= 0:
                self._stop()

    def _build(self) -> None:
        rmq_store_class()
        try:
            import boto3  # noqa: F401
        except ImportError as exc:
            raise NotMeasurable(f"boto3 is not installed ({exc})") from exc
        from bench.peers import s3

        if self.root.exists():
            shutil.rmtree(self.root)
        self.root.mkdir(parents=True)
        self.server = s3.S3Server(self.root / "s3").start()
        env = self.server.aws_env()
        for name in (*s3.AWS_OVERRIDES, *env):
            self.saved_env[name] = os.environ.get(name)
            os.environ.pop(name, None)
        os.environ.update(env)
        s3.client(self.endpoint).create_bucket(Bucket=BUCKET)
        print(
            f"   building a {self.store_bytes / (1 << 20):,.0f} MiB store "
            f"({self.segment >> 20} MiB segments), tiering a copy ...",
            flush=True,
        )
        # In a forked child: the engine's threads (tokio, flush) never live in this process,
        # which forks every measurement.
        builder = System("build", lambda case, workdir: build_stores(self, case))
        status, value = run_one(builder, Case("build", {}), self.root, isolate=True)
        if status != "ok":
            raise RuntimeError(f"building the stores failed: {value}")
        self.info = value
        print(
            f"   built: {value['messages']:,.0f} messages, {value['segments']:.0f} segments, "
            f"{value['evicted_segments']:.0f} only in the bucket, in {value['build_s']:.0f} s",
            flush=True,
        )
        if self.on_built is not None:
            self.on_built(self.info)

    def _stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        for name, value in self.saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self.saved_env.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def open_local(fixture: Fixture, path: Path, **options: Any) -> Any:
    store_cls = rmq_store_class()
    count = fixture.info.get("index_entries") or index_sizes(fixture)[1]
    return store_cls(
        str(path),
        commitlog_segment_size=fixture.segment,
        index_slot_count=count // 4,
        index_entry_count=count,
        **options,
    )


def index_sizes(fixture: Fixture) -> tuple[int, int]:
    """(expected messages, index entries per file): about 8 index files, all but the last
    full and compacted, as the issue's "uploaded compacted index files" need."""
    messages = fixture.store_bytes // (BODY + 120)
    return messages, max(1000, messages // 8 // 4 * 4)


def build_stores(fixture: Fixture, case: Case) -> Metrics:
    """Fill the all-local store, copy it, tier the copy and evict its sealed segments."""
    import rmq

    t0 = time.perf_counter()
    _, entries = index_sizes(fixture)
    fixture.info["index_entries"] = entries
    rng = random.Random(19)
    pool = [rng.randbytes(BODY) for _ in range(256)]
    first_of_batch: list[tuple[int, int]] = []  # (message index, commit-log offset)
    stamps = array.array("q")  # each message's store timestamp, in message order
    store = open_local(fixture, fixture.local)
    store.create_topic(TOPIC, QUEUES)
    i = 0
    while store.commitlog_max_offset() < fixture.store_bytes:
        batch = [
            rmq.Message(pool[(i + j) % 256], tags=TAGS[(i + j) % 4], keys=[key_of(i + j)])
            for j in range(BATCH)
        ]
        results = store.put_batch(TOPIC, (i // BATCH) % QUEUES, batch)
        first_of_batch.append((i, results[0].commitlog_offset))
        stamps.extend(r.store_timestamp for r in results)
        i += BATCH
    messages = i
    with (fixture.root / "timestamps.bin").open("wb") as f:
        stamps.tofile(f)
    if not store._wait_index_compaction(600):
        raise RuntimeError("the key index was not compacted within 600 s")
    index_files = store._index_files()
    store.flush()
    store.close()
    shutil.copytree(fixture.local, fixture.tiered)

    tiered = open_local(
        fixture,
        fixture.tiered,
        tier_url=f"s3://{BUCKET}/{READ_PREFIX}",
        tier_endpoint=fixture.endpoint,
        local_retention_bytes=0,
    )
    tiered.upload_to_tier()
    tiered.run_retention()
    status = tiered.tier_status()
    local_index_files = len(tiered._index_files())
    tiered.close()
    from bench.peers import s3

    listing = s3.client(fixture.endpoint).list_objects_v2(
        Bucket=BUCKET, Prefix=f"{READ_PREFIX}/index/"
    )
    bucket_index_files = len(listing.get("Contents", []))
    segments = status["segments"]
    evicted = [s for s in segments if s["state"] == "evicted"]
    if not evicted:
        raise RuntimeError(f"no segment was evicted: {[s['state'] for s in segments]}")
    local_from = min(s["start_offset"] for s in segments if s["state"] != "evicted")
    # Messages wholly in evicted segments: every batch that starts below the first local
    # segment, but the last such batch (it may straddle into it).
    old = [idx for idx, offset in first_of_batch if offset < local_from]
    return {
        "messages": messages,
        "old_messages": max(0, (old[-1] if old else 0)),
        "segments": len(segments),
        "evicted_segments": len(evicted),
        "evicted_bytes": sum(s["size"] for s in evicted),
        "index_files": len(index_files),
        "compacted_index_files": sum(1 for f in index_files if f[3]),
        "index_files_in_bucket": bucket_index_files,
        "index_files_local_after_eviction": local_index_files,
        "index_entries": entries,
        "build_s": time.perf_counter() - t0,
    }


# --------------------------------------------------------------------------- cases


def reads_of(store: Any) -> dict[str, int]:
    status = store.tier_status()
    if status is None:
        return {"range_reads": 0, "bytes_fetched": 0, "cache_hits": 0}
    return {k: int(status["reads"][k]) for k in ("range_reads", "bytes_fetched", "cache_hits")}


def consume(store: Any, queues: list[int]) -> Metrics:
    """Read ``queues`` from their first offsets to their ends, a batch of 32 from each in
    turn (one queue: a plain sequential read of it)."""
    ends = {q: store.max_offset(TOPIC, q) for q in queues}
    offsets = {q: store.min_offset(TOPIC, q) for q in queues}
    before = reads_of(store)
    count = 0
    body_bytes = 0
    t0 = time.perf_counter()
    while offsets:
        for q in list(offsets):
            got = store.get(TOPIC, q, offsets[q], CONSUME_BATCH)
            if not got:
                raise RuntimeError(f"get returned nothing at offset {offsets[q]} of {ends[q]}")
            count += len(got)
            for m in got:
                body_bytes += len(m.body)
            offsets[q] = got[-1].queue_offset + 1
            if offsets[q] >= ends[q]:
                del offsets[q]
    seconds = time.perf_counter() - t0
    after = reads_of(store)
    fetched = after["bytes_fetched"] - before["bytes_fetched"]
    return {
        "per_s": count / seconds,
        "msgs_per_s": count / seconds,
        "body_mb_per_s": body_bytes / seconds / 1e6,
        "messages": count,
        "seconds": seconds,
        "range_reads": after["range_reads"] - before["range_reads"],
        "fetched_per_body_byte": fetched / body_bytes if body_bytes else 0.0,
    }


def query(store: Any, fixture: Fixture, queries: int, seed: int, window: bool) -> Metrics:
    """``queries`` lookups of random keys of messages in evicted segments. ``window``: with
    ``begin`` = ``end`` = the message's store time and ``max_count=1`` (the index files
    whose time span holds it); else over all time with the default ``max_count``."""
    old = int(fixture.info["old_messages"])
    rng = random.Random(seed)
    picks = [rng.randrange(old) for _ in range(queries)]
    stamps = array.array("q")
    if window:
        with (fixture.root / "timestamps.bin").open("rb") as f:
            stamps.frombytes(f.read())

    def lookup(i: int) -> list[Any]:
        if window:
            return store.query_by_key(TOPIC, key_of(i), begin=stamps[i], end=stamps[i], max_count=1)
        return store.query_by_key(TOPIC, key_of(i))

    # One unmeasured query: the first call pays for opening the index files.
    lookup(picks[0])
    latencies: list[float] = []
    reads: list[int] = []
    for i in picks:
        before = reads_of(store)["range_reads"]
        t0 = time.perf_counter()
        found = lookup(i)
        latencies.append(time.perf_counter() - t0)
        reads.append(reads_of(store)["range_reads"] - before)
        if len(found) != 1 or found[0].keys != [key_of(i)]:
            raise RuntimeError(f"query_by_key({key_of(i)!r}) found {len(found)} messages")
    latencies.sort()
    reads.sort()
    p99 = percentile(latencies, 99)
    return {
        "per_s": 1.0 / p99,
        "p50_ms": percentile(latencies, 50) * 1e3,
        "p99_ms": p99 * 1e3,
        "range_reads_mean": sum(reads) / len(reads),
        "range_reads_p99": percentile(reads, 99),
        "range_reads_max": float(reads[-1]),
        "queries": float(queries),
    }


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


def sealed_segment_files(fixture: Fixture) -> list[Path]:
    files = sorted((fixture.local / "commitlog").iterdir())
    return files[:-1]  # the last is being written: never uploaded


def upload_rmq(fixture: Fixture, workdir: Path) -> Metrics:
    """Two fresh copies of the all-local store, each opened with a new prefix: the first
    left to the background uploader (timed by polling tier_status), the second uploaded
    by upload_to_tier() called right after opening (timed around the call)."""
    background = upload_pass(fixture, workdir / "background", explicit=False)
    explicit = upload_pass(fixture, workdir / "explicit", explicit=True)
    out = dict(background)
    out["upload_to_tier_mb_per_s"] = explicit["mb_per_s"]
    out["upload_to_tier_uploaded_per_sealed_byte"] = explicit["uploaded_per_sealed_byte"]
    out["upload_to_tier_returned"] = explicit["returned"]
    return out


def upload_pass(fixture: Fixture, path: Path, explicit: bool) -> Metrics:
    from bench.peers import s3

    shutil.copytree(fixture.local, path)
    prefix = f"up-{os.getpid()}-{time.time_ns()}"
    sealed = sealed_segment_files(fixture)
    expected = sum(f.stat().st_size for f in sealed)
    store = open_local(
        fixture, path, tier_url=f"s3://{BUCKET}/{prefix}", tier_endpoint=fixture.endpoint
    )
    returned = 0
    try:
        if explicit:
            t0 = time.perf_counter()
            returned = store.upload_to_tier()
            seconds = time.perf_counter() - t0
        else:
            # The uploader looks every second; the clock starts at the last poll before it
            # is seen at work (<= 10 ms early) and stops when every sealed segment is
            # confirmed in the bucket.
            t0 = time.perf_counter()
            started = None
            deadline = t0 + 3600
            while True:
                status = store.tier_status()
                now = time.perf_counter()
                busy = status["upload"]["in_progress"] is not None
                done = sum(1 for seg in status["segments"] if seg["state"] == "uploaded")
                if started is None and (busy or done):
                    started = t0
                if done >= len(sealed):
                    break
                if status["upload"]["failing"]:
                    raise RuntimeError(f"upload failing: {status['upload']['failing']}")
                if now > deadline:
                    raise RuntimeError("the uploader did not finish within an hour")
                t0 = now if started is None else t0
                time.sleep(0.01)
            seconds = now - (started if started is not None else t0)
        upload = store.tier_status()["upload"]
    finally:
        store.close()
    s3.delete_prefix(s3.client(fixture.endpoint), BUCKET, prefix)
    shutil.rmtree(path, ignore_errors=True)
    uploaded = upload["uploaded_bytes"]
    return {
        "per_s": expected / seconds / 1e6,
        "mb_per_s": expected / seconds / 1e6,
        "engine_mb_per_s": uploaded / upload["upload_seconds"] / 1e6
        if upload["upload_seconds"]
        else 0.0,
        "seconds": seconds,
        "bytes": float(expected),
        "segments": float(len(sealed)),
        "returned": float(returned),
        # More than 1: some segment was uploaded twice (upload_to_tier() and the
        # background uploader at once).
        "uploaded_per_sealed_byte": uploaded / expected if expected else 0.0,
    }


def upload_plain(fixture: Fixture, case: Case, workdir: Path) -> Metrics:
    """The same segment files, one after another, each a boto3 multipart upload."""
    from boto3.s3.transfer import TransferConfig

    from bench.peers import s3

    client = s3.client(fixture.endpoint)
    config = TransferConfig(
        multipart_threshold=PART,
        multipart_chunksize=PART,
        max_concurrency=CONCURRENCY,
        use_threads=True,
    )
    prefix = f"plain-{os.getpid()}-{time.time_ns()}"
    sealed = sealed_segment_files(fixture)
    total = sum(f.stat().st_size for f in sealed)
    t0 = time.perf_counter()
    for f in sealed:
        client.upload_file(str(f), BUCKET, f"{prefix}/{f.name}", Config=config)
    seconds = time.perf_counter() - t0
    s3.delete_prefix(client, BUCKET, prefix)
    return {
        "per_s": total / seconds / 1e6,
        "mb_per_s": total / seconds / 1e6,
        "seconds": seconds,
        "bytes": float(total),
        "segments": float(len(sealed)),
    }


# --------------------------------------------------------------------------- build


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
            "versitygw (a real S3 server on loopback, posix backend), uploaded, and every "
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
