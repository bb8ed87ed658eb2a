"""``tier`` benchmark's fixture: one store built once per run, all local, and a copy of it
tiered and evicted to an S3 bucket (versitygw), shared by the systems."""

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
    Case,
    Context,
    Metrics,
    System,
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
    server_get_cost: dict[str, float] = field(default_factory=dict)
    default_get_cost: dict[str, float] = field(default_factory=dict)
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

    def s3_client(self) -> Any:
        """A boto3 client of the server that retries, and sends no checksum beyond what
        S3 requires (the payload's SigV4 hash over plain HTTP): the plain upload is meant
        to be the server's best case."""
        return self.server.client(
            retries={"max_attempts": 3, "mode": "standard"},
            request_checksum_calculation="when_required",
        )

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
        self.s3_client().create_bucket(Bucket=BUCKET)
        from bench.s3_get_cost import get_cost

        # What a GET costs this server, in its own CPU: the figure that sizes the tier's
        # GETs (docs/format.md §7.4), measured on the server the run uses.
        self.server_get_cost = get_cost(self.server)
        # The same server with its default 1 MiB read buffer, measured beside it in this
        # run (same load): what the 64 KiB one saves per GET.
        with s3.S3Server(self.root / "s3-default", io_buffer_size=None) as default:
            self.default_get_cost = get_cost(default)
        print(
            "   server CPU per ranged GET (64 KiB read buffer; its default 1 MiB): "
            + ", ".join(
                f"{key[4:-3]} {value:,.0f} µs ({self.default_get_cost[key]:,.0f} µs)"
                for key, value in self.server_get_cost.items()
                if not key.endswith("wall_us")
            ),
            flush=True,
        )
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
    listing = fixture.s3_client().list_objects_v2(Bucket=BUCKET, Prefix=f"{READ_PREFIX}/index/")
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
