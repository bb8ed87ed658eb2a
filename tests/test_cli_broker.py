"""The broker's command line: serve (through LocalBroker), topic, produce, consume, query,
inspect and verify, run as real processes."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path

import pytest
import rmq
from rmq.cluster.local import LocalBroker

from tests.support.cli import rmq_cli

SUBCOMMANDS = {
    "serve": ["--data", "--shards", "--port", "--token", "--tls-cert", "--flush"],
    "topic": ["create", "list", "describe", "delete"],
    "produce": ["--count", "--size", "--sharding-key", "--buffer-bytes", "--no-progress"],
    "consume": ["--group", "--count", "--idle-timeout", "--format", "--format-string"],
    "query": ["--key", "--msg-id", "--time"],
    "inspect": ["--records", "--json"],
    "verify": ["path"],
}


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_each_subcommand_explains_itself(name: str) -> None:
    text = rmq_cli(name, "--help").stdout.decode()
    for option in SUBCOMMANDS[name]:
        assert option in text, f"rmq {name} --help does not mention {option}"


def test_topic_produce_consume_query_round_trip(broker: LocalBroker) -> None:
    endpoint = ["--endpoint", broker.endpoint]
    assert (
        "4 queues"
        in rmq_cli("topic", "create", "clitopic", "--queues", "4", *endpoint).stdout.decode()
    )
    assert "clitopic" in rmq_cli("topic", "list", *endpoint).stdout.decode().split()

    produced = rmq_cli(
        "produce",
        "clitopic",
        "--count",
        "500",
        "--size",
        "64",
        "--keys",
        "--tags",
        "gen",
        *endpoint,
    )
    assert "stored 500 of 500" in produced.stderr.decode()
    lines = rmq_cli(
        "produce", "clitopic", "--no-progress", *endpoint, stdin=b"first line\nsecond line\n"
    )
    assert "stored 2 of 2" in lines.stderr.decode()

    queues = json.loads(rmq_cli("topic", "describe", "clitopic", "--json", *endpoint).stdout)
    assert sum(q["max_offset"] for q in queues) == 502

    consumed = rmq_cli(
        "consume", "clitopic", "--group", "g", "--count", "502", "--format", "json", *endpoint
    )
    records = [json.loads(line) for line in consumed.stdout.splitlines()]
    assert len(records) == 502
    assert {"first line", "second line"} <= {r.get("body") for r in records}
    assert sum(1 for r in records if r["tags"] == "gen" and r["keys"][0].startswith("key-")) == 500
    # The group committed: nothing more for it.
    again = rmq_cli("consume", "clitopic", "--group", "g", "--idle-timeout", "1", *endpoint)
    assert again.stdout == b""

    sample = records[7]
    found = json.loads(rmq_cli("query", "--msg-id", sample["msg_id"], *endpoint).stdout)
    assert (found["queue_id"], found["queue_offset"]) == (
        sample["queue_id"],
        sample["queue_offset"],
    )

    missing = rmq_cli("query", "--msg-id", "not-an-id", *endpoint, check=False)
    assert missing.returncode == 1 and b"hex digits" in missing.stderr
    bad = rmq_cli("topic", "create", "../escape", *endpoint, check=False)
    assert bad.returncode == 1 and b"contains '.'" in bad.stderr

    assert "deleted" in rmq_cli("topic", "delete", "clitopic", *endpoint).stdout.decode()
    assert "clitopic" not in rmq_cli("topic", "list", *endpoint).stdout.decode().split()


def test_generated_load_is_sent_in_batches_within_the_limits(broker: LocalBroker) -> None:
    endpoint = ["--endpoint", broker.endpoint]
    rmq_cli("topic", "create", "batched", "--queues", "3", *endpoint)
    # 364 bytes counted per message: 27 to a batch, 1,000 messages in 38 batches.
    produced = rmq_cli(
        "produce", "batched", "--count", "1000", "--size", "300", "--keys",
        "--batch-messages", "128", "--batch-bytes", "10000", "--no-progress", *endpoint,
    )  # fmt: skip
    assert "stored 1000 of 1000" in produced.stderr.decode()
    consumed = rmq_cli(
        "consume", "batched", "--group", "g", "--count", "1000", "--format", "json", *endpoint
    )
    records = [json.loads(line) for line in consumed.stdout.splitlines()]
    assert sorted(r["keys"][0] for r in records) == sorted(f"key-{i}" for i in range(1000))
    assert {len(base64.b64decode(r["body_base64"])) for r in records} == {300}

    too_big = rmq_cli(
        "produce", "batched", "--count", "1", "--size", "20000", "--batch-bytes", "10000",
        *endpoint, check=False,
    )  # fmt: skip
    assert too_big.returncode == 2 and b"raise --batch-bytes" in too_big.stderr

    # Over the broker's body limit (4 MiB): refused whole, counted, and the exit says so.
    refused = rmq_cli(
        "produce", "batched", "--count", "2", "--size", str(5 << 20),
        "--batch-bytes", str(16 << 20), "--no-progress", *endpoint, check=False,
    )  # fmt: skip
    assert refused.returncode == 1
    assert b"stored 0 of 2" in refused.stderr and b"first failure" in refused.stderr


def checksums(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_inspect_and_verify_change_nothing(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with rmq.Store(store_dir, commitlog_segment_size=16 * 1024) as store:
        store.create_topic("inspected", 2)
        for i in range(300):
            store.put("inspected", b"payload-%d" % i, queue_id=i % 2, tags="t", keys=[f"k{i}"])
    before = checksums(store_dir)

    text = rmq_cli("inspect", str(store_dir), "--records", "2").stdout.decode()
    assert "topic inspected: 2 queue(s)" in text
    assert "offsets 0 to 150" in text and "payload-0" in text
    report = json.loads(rmq_cli("inspect", str(store_dir), "--json").stdout)
    assert len(report["commitlog"]) >= 2  # small segments rolled
    assert [q["max_offset"] for q in report["topics"]["inspected"]] == [150, 150]

    verified = rmq_cli("verify", str(store_dir), check=False)
    assert verified.returncode == 0, verified.stdout.decode() + verified.stderr.decode()
    assert f"{store_dir}: clean" in verified.stdout.decode()
    assert checksums(store_dir) == before, "inspect or verify changed the store's files"


def test_verify_reports_a_missing_consume_queue_and_exits_1(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with rmq.Store(store_dir) as store:
        store.create_topic("checked", 2)
        for i in range(50):
            store.put("checked", b"payload-%d" % i, queue_id=i % 2)
    shutil.rmtree(store_dir / "consumequeue" / "checked" / "1")
    verified = rmq_cli("verify", str(store_dir), check=False)
    assert verified.returncode == 1, verified.stdout.decode() + verified.stderr.decode()
    text = verified.stdout.decode()
    assert f"{store_dir}: DIFFERENCES" in text and "difference_count=25" in text


@pytest.mark.parametrize(
    "command", [["inspect"], ["verify"], ["rebuild"], ["tier", "status"], ["tier", "upload"]]
)
def test_a_path_that_is_no_directory_is_refused_with_status_2(
    tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "no-such-store"
    result = rmq_cli(*command, str(missing), check=False)
    assert result.returncode == 2
    assert f"{missing} is not a directory" in result.stderr.decode()
    assert not missing.exists()


def test_inspect_walks_every_shard_of_a_broker_directory(broker: LocalBroker) -> None:
    rmq_cli("topic", "create", "walked", "--queues", "2", "--endpoint", broker.endpoint)
    text = rmq_cli("inspect", str(broker.data_dir), "--topic", "walked").stdout.decode()
    assert "shard-0" in text and "shard-1" in text
    assert text.count("topic walked: 2 queue(s)") == 2
