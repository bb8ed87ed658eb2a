"""The operator's side of the object-storage tier, against a real S3 server (versitygw):
``rmq serve --tier-url``, ``rmq tier status``, ``rmq tier upload`` and the tier in
``rmq inspect``, each run as a real process."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rmq
from rmq.cli import build_parser
from rmq.cli.serve import tier_options
from rmq.cli.tier_report import human_bytes
from rmq.client import Client
from rmq.cluster.local import LocalBroker
from rmq.cluster.tier import brief, shard_options, shard_tier_url

from bench.peers.s3 import S3Server
from tests.support.cli import rmq_cli

SEGMENT = 65536
TOPIC = "Tiered"
SMALL_SEGMENTS = ["--store-option", f"commitlog_segment_size={SEGMENT}"]


def body(index: int) -> bytes:
    return f"{index:06d} ".encode() + b"t" * 400


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s (last: {value!r})")
        time.sleep(0.1)


def tier_status(env: dict[str, str], path: Path) -> tuple[int, dict[str, Any]]:
    result = rmq_cli("tier", "status", str(path), "--json", env=env, check=False)
    assert b"Traceback" not in result.stderr, result.stderr.decode()
    return result.returncode, json.loads(result.stdout)


def produce(endpoint: str, first: int, count: int) -> None:
    with Client(endpoint) as client, client.producer(batch_max_bytes=16384) as producer:
        futures = [producer.send(TOPIC, body(i), keys=[f"k{i}"]) for i in range(first, count)]
        producer.flush()
        assert [f.exception() for f in futures] == [None] * len(futures)


# ---- without a server ---------------------------------------------------------------


def test_each_shard_gets_its_own_prefix() -> None:
    assert shard_tier_url("s3://b/p/", 3) == "s3://b/p/shard-3"
    assert shard_tier_url("s3://b", 0) == "s3://b/shard-0"
    options = {"tier_url": "s3://b/p", "tier_endpoint": "http://h:1", "flush_interval_ms": 5}
    assert shard_options(options, 2) == {**options, "tier_url": "s3://b/p/shard-2"}
    assert shard_options({"flush_interval_ms": 5}, 2) == {"flush_interval_ms": 5}


def test_tier_flags_become_store_options() -> None:
    args = build_parser().parse_args(
        ["serve", "--tier-url", "s3://b/p", "--tier-endpoint", "http://h:1",
         "--local-retention-bytes", "0", "--tier-retention-hours", "1.5"]
    )  # fmt: skip
    assert tier_options(args) == {
        "tier_url": "s3://b/p",
        "tier_endpoint": "http://h:1",
        "local_retention_bytes": 0,
        "tier_retention_hours": 1.5,
    }
    assert tier_options(build_parser().parse_args(["serve"])) == {}


def test_sizes_and_reasons_read_well() -> None:
    assert [human_bytes(n) for n in (0, 1023, 1024, 1536, 5 << 20, 3 << 40)] == [
        "0 B", "1023 B", "1.0 KiB", "1.5 KiB", "5.0 MiB", "3.0 TiB"
    ]  # fmt: skip
    raw = "object storage s3://b/p: the bucket does not exist: Generic S3 error: <Error/>"
    assert brief(raw) == "object storage s3://b/p: the bucket does not exist"
    assert brief("plain") == "plain"
    assert brief(None) is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--local-retention-bytes", "5"], "--local-retention-bytes only applies with --tier-url"),
        (["--tier-endpoint", "http://h:1"], "--tier-endpoint only applies with --tier-url"),
        (["--tier-url", "http://h/b"], "is not s3://BUCKET/PREFIX"),
        (["--tier-url", "s3://"], "is not s3://BUCKET/PREFIX"),
        (["--tier-url", "s3://b/p", "--local-retention-hours", "-1"], "is not a number >= 0"),
    ],
)
def test_bad_tier_flags_are_refused_before_anything_starts(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    result = rmq_cli("serve", "--data", str(tmp_path / "d"), "--port", "0", *flags, check=False)
    assert result.returncode == 2
    assert message in result.stderr.decode()
    assert not (tmp_path / "d").exists()


def test_help_explains_the_tier() -> None:
    serve = rmq_cli("serve", "--help").stdout.decode()
    for text in ("--tier-url", "--tier-endpoint", "--local-retention-bytes", "shard-N",
                 "--tier-retention-hours", "AWS_ACCESS_KEY_ID"):  # fmt: skip
        assert text in serve
    status = rmq_cli("tier", "status", "--help").stdout.decode()
    for text in ("pending", "evicted", "--json", "read-only", "running broker"):
        assert text in " ".join(status.split())
    assert "--tier-url" in rmq_cli("tier", "upload", "--help").stdout.decode()


# ---- against the S3 server ----------------------------------------------------------


def test_a_missing_bucket_stops_serve_with_the_reason(tmp_path: Path, s3_server: S3Server) -> None:
    result = rmq_cli(
        "serve", "--data", str(tmp_path / "d"), "--port", "0", "--shards", "1",
        "--tier-url", "s3://no-such-bucket-here/p", "--tier-endpoint", s3_server.endpoint,
        env=s3_server.subprocess_env(), check=False,
    )  # fmt: skip
    error = result.stderr.decode()
    assert result.returncode == 1
    assert "shard process 0: cannot open" in error
    assert "s3://no-such-bucket-here/p/shard-0: the bucket does not exist" in error
    assert "Traceback" not in error and "<Error>" not in error


def test_serve_uploads_each_shard_under_its_prefix_and_serves_evicted_messages(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    env = s3_server.subprocess_env()
    data, url = tmp_path / "data", f"s3://{s3_bucket}/brokers/one"
    args = [*SMALL_SEGMENTS, "--tier-url", url, "--tier-endpoint", s3_server.endpoint,
            "--local-retention-bytes", "0"]  # fmt: skip
    count = 1200
    with LocalBroker(data, shards=2, args=args, env=env) as broker:
        with Client(broker.endpoint) as client:
            client.create_topic(TOPIC, queues=4)
        produce(broker.endpoint, 0, count)

        def settled() -> dict[str, Any] | None:
            code, report = tier_status(env, data)
            states = report["totals"]["states"]
            ready = code == 0 and states["pending"]["segments"] == 0 and states["uploaded"][
                "segments"] == 0 and all(r["tier"]["states"]["evicted"]["segments"] >= 2
                                         for r in report["stores"])  # fmt: skip
            return report if ready else None

        report = wait_until(settled, 20, "upload and eviction of every sealed segment")
        for shard, store in enumerate(report["stores"]):
            assert store["path"] == str(data / f"shard-{shard}")
            tier = store["tier"]
            assert tier["url"] == f"{url}/shard-{shard}"
            assert tier["uploader"]["source"] == "broker"
            assert tier["uploader"]["failing"] is None
            assert tier["states"]["active"]["segments"] == 1
            evicted = [s for s in tier["segments"] if s["state"] == "evicted"]
            # Only the active segment is on local disk; each evicted one is in the bucket.
            assert [p.name for p in (data / f"shard-{shard}" / "commitlog").iterdir()] == [
                f"{s['start_offset']:020d}" for s in tier["segments"] if s["state"] == "active"
            ]
            listed = s3_server.client().list_objects_v2(
                Bucket=s3_bucket, Prefix=f"brokers/one/shard-{shard}/"
            )
            keys = {o["Key"] for o in listed.get("Contents", [])}
            for segment in evicted:
                name = f"{segment['start_offset']:020d}"
                assert any(key.endswith(name) for key in keys), (name, keys)
        assert report["totals"]["in_tier"]["bytes"] == sum(
            r["tier"]["in_tier"]["bytes"] for r in report["stores"]
        )

        text = rmq_cli("tier", "status", str(data), env=env).stdout.decode()
        assert f"== {data / 'shard-1'}: {url}/shard-1" in text
        assert "only in the tier" in text and "uploader of the serving shard process" in text
        assert "== total: 2 of 2 store(s) with a tier, 0 failing" in text
        assert "KiB" in text

        inspected = rmq_cli("inspect", str(data), "--records", "0", env=env).stdout.decode()
        assert f"tier: {url}/shard-0" in inspected and " evicted (" in inspected

        # The oldest messages are only in the bucket; a consumer reads them all.
        consumed = rmq_cli(
            "consume", TOPIC, "--group", "g", "--count", str(count),
            "--endpoint", broker.endpoint, env=env,
        )  # fmt: skip
        assert sorted(consumed.stdout.splitlines()) == [body(i) for i in range(count)]

        # The object store goes down: the status says the uploads fail, and why.
        s3_server.stop()
        try:
            produce(broker.endpoint, count, count + 400)

            def failing() -> tuple[int, dict[str, Any]] | None:
                code, report = tier_status(env, data)
                return (code, report) if report["totals"]["failing"] else None

            code, report = wait_until(failing, 15, "the uploader to report failures")
            assert code == 1
            uploader = next(r["tier"]["uploader"] for r in report["stores"]
                            if r["tier"]["uploader"]["failing"])  # fmt: skip
            assert "could not be reached" in uploader["failing_brief"]
            assert uploader["failed_attempts"] >= 1 and uploader["failing_since"]
            text = rmq_cli("tier", "status", str(data), env=env, check=False).stdout.decode()
            assert "FAILING since" in text and "could not be reached" in text
        finally:
            s3_server.start()
        wait_until(lambda: settled() is not None, 20, "uploads to resume")
    # The shard processes removed their live status when they stopped.
    assert list((data / "tier-status").iterdir()) == []


def test_tier_upload_gives_a_stopped_store_a_tier_and_uploads_with_progress(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = s3_server.subprocess_env()
    path, url = tmp_path / "store", f"s3://{s3_bucket}/single"
    with rmq.Store(path, commitlog_segment_size=SEGMENT) as store:
        for index in range(800):
            store.put(TOPIC, body(index), queue_id=index % 2)
    sealed = len(list((path / "commitlog").iterdir())) - 1
    assert sealed >= 3
    no_tier = rmq_cli("tier", "status", str(path), env=env).stdout.decode()
    assert "no tier" in no_tier

    result = rmq_cli(
        "tier", "upload", str(path), "--tier-url", url, "--tier-endpoint", s3_server.endpoint,
        env=env,
    )  # fmt: skip
    summary = f"uploaded {sealed} segment(s), {human_bytes(sealed * SEGMENT)}"
    assert summary in result.stdout.decode()
    assert f"{sealed}/{sealed} segments" in result.stderr.decode()  # the progress bar

    # The store keeps its tier: a second upload (no --tier-url) finds nothing to do.
    again = rmq_cli("tier", "upload", str(path), env=env)
    assert "store: nothing to upload" in again.stderr.decode()
    code, report = tier_status(env, path)
    assert code == 0
    tier = report["stores"][0]["tier"]
    assert tier["url"] == url and tier["uploader"]["source"] == "here"
    assert tier["states"]["uploaded"] == {"segments": sealed, "bytes": sealed * SEGMENT}
    assert tier["states"]["pending"]["segments"] == 0
    listed = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="single/")
    assert len(listed.get("Contents", [])) >= sealed

    # A store in use is refused with what to do.
    for name, value in s3_server.aws_env().items():
        monkeypatch.setenv(name, value)
    with rmq.Store(path):
        busy = rmq_cli("tier", "upload", str(path), env=env, check=False)
    assert busy.returncode == 1
    assert "is in use (is the broker running? stop it first" in busy.stderr.decode()
