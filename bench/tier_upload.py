"""``tier`` benchmark's upload cases: the engine's uploads of the sealed segments against a
plain multipart upload of the same bytes."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from bench.harness import (
    Case,
    Metrics,
)
from bench.tier_fixture import BUCKET, CONCURRENCY, PART, Fixture, open_local


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
    s3.delete_prefix(fixture.s3_client(), BUCKET, prefix)
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

    client = fixture.s3_client()
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
