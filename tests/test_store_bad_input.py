"""Bad input raises the right error, names the argument, and writes nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import rmq
from rmq.errors import InvalidArgumentError


def commit_log_bytes(path: Path) -> bytes:
    """What the commit log holds, the zeros after its last written byte left out: an open
    store has its first segment (1 GiB, sparse) created ahead of the first put, and
    reading it whole would read 1 GiB of zeros."""
    return b"".join(written_prefix(p) for p in sorted((path / "commitlog").glob("*")))


def written_prefix(segment: Path) -> bytes:
    with segment.open("rb") as file:
        # Records are written from the start of a segment: they lie in its first stretch
        # of data, up to the first hole.
        end = os.lseek(file.fileno(), 0, os.SEEK_HOLE)
        file.seek(0)
        return file.read(end).rstrip(b"\0")


BAD_TOPICS = [
    "",
    "..",
    "../escape",
    "a/b",
    "a\\b",
    "a.b",
    "with space",
    "tab\t",
    "é",
    "x" * 256,
    "nul\0",
]


@pytest.mark.parametrize("topic", BAD_TOPICS)
def test_invalid_topic_names_are_refused(tmp_path: Path, topic: str) -> None:
    with rmq.Store(tmp_path) as store:
        before = commit_log_bytes(tmp_path)
        with pytest.raises(InvalidArgumentError) as raised:
            store.put(topic, b"x")
        assert raised.value.argument == "topic"
        with pytest.raises(InvalidArgumentError):
            store.create_topic(topic, 1)
        assert commit_log_bytes(tmp_path) == before
        assert store.topics() == []
    assert not any(p.name not in {"commitlog"} for p in (tmp_path / "consumequeue").glob("*"))


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"queue_id": -1}, "queue_id"),
        ({"queue_id": 2**40}, "queue_id"),
        ({"queue_id": 65536}, "queue_id"),
        ({"tags": "a\x01b"}, "tags"),
        ({"tags": "a\x02b"}, "tags"),
        ({"keys": ["ok", "bad\x02"]}, "keys"),
        ({"keys": ["two words"]}, "keys"),
        ({"properties": {"k\x01": "v"}}, "properties"),
        ({"properties": {"k": "v\x02"}}, "properties"),
        ({"properties": {"k": ""}}, "properties"),
        ({"properties": {"TAGS": "x"}}, "properties"),
        ({"flag": 2**31}, "flag"),
        ({"born_host": "not-an-address"}, "born_host"),
    ],
)
def test_invalid_message_fields_are_refused(
    tmp_path: Path, kwargs: dict[str, Any], argument: str
) -> None:
    with rmq.Store(tmp_path) as store:
        with pytest.raises(InvalidArgumentError) as raised:
            store.put("Topic", b"body", **kwargs)
        assert raised.value.argument == argument
        assert argument in str(raised.value)
        assert store.topics() == []
    assert commit_log_bytes(tmp_path) == b""


def test_oversized_body_is_refused(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        with pytest.raises(InvalidArgumentError) as raised:
            store.put("Topic", b"x" * (4 * 1024 * 1024 + 1))
        assert raised.value.argument == "body"
        assert "4194304" in str(raised.value)


def test_configured_body_limit_is_enforced(tmp_path: Path) -> None:
    with rmq.Store(tmp_path, max_message_size=100) as store:
        store.put("Topic", b"x" * 100)
        with pytest.raises(InvalidArgumentError):
            store.put("Topic", b"x" * 101)


def test_a_bad_message_in_a_batch_writes_none_of_it(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        with pytest.raises(InvalidArgumentError):
            store.put_batch("Topic", 0, [b"ok", rmq.Message(b"bad", tags="a\x02")])
        with pytest.raises(InvalidArgumentError):
            store.put_batch("Topic", 0, [])
        with pytest.raises(InvalidArgumentError):
            store.put_batch("Topic", 0, [b"ok", "not bytes"])  # type: ignore[list-item]
        with pytest.raises(InvalidArgumentError, match="2 entries for 3 messages"):
            store.put_batch("Topic", 0, [b"a", b"b", b"c"], tags=["x", "y"])
        with pytest.raises(InvalidArgumentError, match="keys"):
            store.put_batch("Topic", 0, [b"a"], keys="not a column")
        with pytest.raises(InvalidArgumentError, match="tags"):
            store.put_batch("Topic", 0, [b"a", b"b"], tags=["ok", "bad\x01"])
        with pytest.raises(InvalidArgumentError, match=r"rmq\.Message carries its own"):
            store.put_batch("Topic", 0, [rmq.Message(b"m")], tags="T")
        assert store.topics() == []


def test_bad_read_arguments(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        store.put("Topic", b"x")
        with pytest.raises(InvalidArgumentError):
            store.get("Topic", 0, -1)
        with pytest.raises(InvalidArgumentError):
            store.get("Topic", -1, 0)
        with pytest.raises(InvalidArgumentError):
            store.get("Topic", 0, 0, 0)
        with pytest.raises(rmq.errors.NotFoundError):
            store.get("Unknown", 0, 0)
        with pytest.raises(InvalidArgumentError):
            store.get("../etc", 0, 0)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("commitlog_segment_size", 100),
        ("consume_queue_entries_per_file", 0),
        ("store_host", "localhost"),
        ("flush_disk_type", "SOMETIMES"),
        ("max_message_size", -1),
    ],
)
def test_bad_options_are_refused(tmp_path: Path, option: str, value: Any) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        rmq.Store(tmp_path, **{option: value})
    assert raised.value.argument == option
