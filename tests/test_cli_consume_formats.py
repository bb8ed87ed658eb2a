"""``rmq consume`` output formats, run as real processes against a real broker: raw
bytes, safe text, JSON lines, format strings, the default on a terminal and on a pipe,
and the report of damaged records on stderr."""

from __future__ import annotations

import base64
import json
import os
import pty
import subprocess
import sys
import tty
from dataclasses import dataclass
from pathlib import Path

import pytest
from rmq.client import Client, SendResult
from rmq.cluster.local import LocalBroker

from tests.support.brokers import Brokers
from tests.support.cli import rmq_cli
from tests.support.damaged_records import body as damaged_body
from tests.support.damaged_records import damage_body

TOPIC = "formats"


@dataclass(frozen=True)
class Sent:
    body: bytes
    tags: str | None
    keys: tuple[str, ...]
    result: SendResult


# Text; bytes that are not UTF-8 with terminal controls (ESC, BEL, a C1 CSI, CR, DEL);
# UTF-8 text with a tab and an embedded newline; an empty body without tags or keys.
BODIES = [
    (b"hello world", "greeting", ("k1",)),
    (b"\xff\xfe\x1b[2J\x07\xc2\x9bbin\r\x7f", "binary", ("k2", "k3")),
    ("café €\tsecond\nline".encode(), None, ("k4",)),
    (b"", None, ()),
]
# What --format text shows for each.
TEXTS = [
    "hello world",
    "\ufffd\ufffd\\x1b[2J\\x07\\x9bbin\\x0d\\x7f",
    "café €\tsecond\nline",
    "",
]


@pytest.fixture(scope="module")
def broker(module_brokers: Brokers) -> LocalBroker:
    return module_brokers.start(shards=1)


@pytest.fixture(scope="module")
def sent(broker: LocalBroker) -> list[Sent]:
    with Client(broker.endpoint) as client:
        client.create_topic(TOPIC, queues=1)
        with client.producer() as producer:
            return [
                Sent(body, tags, keys, producer.send_sync(TOPIC, body, tags=tags, keys=keys))
                for body, tags, keys in BODIES
            ]


def consume_args(broker: LocalBroker, *options: str) -> list[str]:
    """Read everything again each time: no commit, so the group starts at the earliest."""
    return [
        "consume", TOPIC, "--group", "viewer", "--no-commit", "--count", str(len(BODIES)),
        "--endpoint", broker.endpoint, *options,
    ]  # fmt: skip


def consume(broker: LocalBroker, *options: str) -> bytes:
    return rmq_cli(*consume_args(broker, *options)).stdout


def consume_on_a_terminal(broker: LocalBroker, *options: str) -> bytes:
    """stdout of ``rmq consume`` when stdout is a terminal (a pty in raw mode, so the
    bytes arrive as written)."""
    primary, secondary = pty.openpty()
    tty.setraw(secondary)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "rmq", *consume_args(broker, *options)],
            stdout=secondary,
            stderr=subprocess.PIPE,
        )
        os.close(secondary)
        output = bytearray()
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: every writer closed its end
                break
            if not chunk:
                break
            output += chunk
        assert process.stderr is not None
        stderr = process.stderr.read()
        assert process.wait(timeout=120) == 0, stderr.decode()
    finally:
        os.close(primary)
    return bytes(output)


def expected_raw() -> bytes:
    return b"".join(body + b"\n" for body, _, _ in BODIES)


def expected_text() -> bytes:
    return "".join(text + "\n" for text in TEXTS).encode()


def test_raw_writes_each_body_as_stored_and_a_newline(
    broker: LocalBroker, sent: list[Sent]
) -> None:
    assert consume(broker, "--format", "raw") == expected_raw()
    assert consume(broker, "--format", "body") == expected_raw()  # the earlier name


def test_text_replaces_undecodable_bytes_and_shows_control_characters(
    broker: LocalBroker, sent: list[Sent]
) -> None:
    assert consume(broker, "--format", "text") == expected_text()


def test_json_has_the_body_as_text_when_it_is_utf8_else_base64(
    broker: LocalBroker, sent: list[Sent]
) -> None:
    records = [json.loads(line) for line in consume(broker, "--format", "json").splitlines()]
    assert len(records) == len(sent)
    for record, message in zip(records, sent, strict=True):
        body = record.pop("body", None)
        body_base64 = record.pop("body_base64", None)
        if message is sent[1]:
            assert body is None and base64.b64decode(body_base64) == message.body
        else:
            assert body_base64 is None and body == message.body.decode()
        born = record.pop("born_timestamp")
        assert isinstance(born, int) and born > 0
        assert record == {
            "topic": TOPIC,
            "queue_id": message.result.queue_id,
            "queue_offset": message.result.queue_offset,
            "msg_id": message.result.msg_id,
            "tags": message.tags,
            "keys": list(message.keys),
            "properties": record["properties"],
            "store_timestamp": message.result.store_timestamp,
        }


def test_json_base64_always_has_the_body_in_base64(broker: LocalBroker, sent: list[Sent]) -> None:
    lines = consume(broker, "--format", "json-base64").splitlines()
    records = [json.loads(line) for line in lines]
    assert [base64.b64decode(r["body_base64"]) for r in records] == [m.body for m in sent]
    assert all("body" not in r for r in records)


def test_a_format_string_fills_in_each_placeholder(broker: LocalBroker, sent: list[Sent]) -> None:
    template = "{queue_id}:{queue_offset} [{tags}] [{keys}] {{{body_size}}}\\t{body}\\n"
    expected = b"".join(
        b"%d:%d [%s] [%s] {%d}\t%s\n"
        % (
            m.result.queue_id,
            m.result.queue_offset,
            (m.tags or "").encode(),
            " ".join(m.keys).encode(),
            len(m.body),
            m.body,
        )
        for m in sent
    )
    assert consume(broker, "--format-string", template) == expected

    template = "{topic} {msg_id} {store_timestamp} {body_base64} {body_text}\\0"
    expected = b"".join(
        f"{TOPIC} {m.result.msg_id} {m.result.store_timestamp} "
        f"{base64.b64encode(m.body).decode()} {text}\0".encode()
        for m, text in zip(sent, TEXTS, strict=True)
    )
    assert consume(broker, "--format-string", template) == expected


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{offset}\\n", "unknown placeholder {offset}; known: {topic} {queue_id}"),
        ("{body", "'{' at position 0 is not closed"),
        ("body}", "'}' at position 4 closes nothing"),
        ("{body}\\x", "unknown escape \\x (position 6); escapes: \\n \\t"),
        ("{body}\\", "a lone \\ ends it (position 6)"),
    ],
)
def test_a_bad_format_string_is_refused_with_what_is_wrong(template: str, message: str) -> None:
    result = rmq_cli("consume", TOPIC, "--group", "g", "--format-string", template, check=False)
    assert result.returncode == 2
    assert message in result.stderr.decode()
    assert b"Traceback" not in result.stderr


def test_the_default_is_text_on_a_terminal_and_raw_into_a_pipe(
    broker: LocalBroker, sent: list[Sent]
) -> None:
    assert consume_on_a_terminal(broker) == expected_text()
    assert consume(broker) == expected_raw()
    # An explicit format wins on a terminal too.
    assert consume_on_a_terminal(broker, "--format", "raw") == expected_raw()


def test_damaged_records_the_consumer_skipped_are_reported_on_stderr(tmp_path: Path) -> None:
    data, count, victim = tmp_path / "data", 20, 7
    small_segments = ["--store-option", "commitlog_segment_size=65536"]
    with LocalBroker(data, shards=1, args=small_segments) as broker, Client(broker.endpoint) as c:
        c.create_topic("Damaged", queues=1)
        with c.producer() as producer:
            for index in range(count):
                producer.send_sync("Damaged", damaged_body(index))
    damage_body(data / "shard-0", victim)

    with LocalBroker(data, shards=1, args=small_segments) as broker:
        result = rmq_cli(
            "consume", "Damaged", "--group", "g", "--count", str(count - 1),
            "--endpoint", broker.endpoint,
        )  # fmt: skip
    wanted = [damaged_body(index) + b"\n" for index in range(count) if index != victim]
    assert result.stdout == b"".join(wanted)
    lines = result.stderr.decode().splitlines()
    logged = "rmq consume: ERROR rmq.client.consumer: skipping the damaged record at offset 7"
    assert sum(1 for line in lines if line.startswith(logged)) == 1, lines
    assert lines[-2:] == [
        f"consumed {count - 1} messages",
        "rmq consume: skipped 1 damaged record that could not be read (see the errors above)",
    ]


def test_help_explains_every_format_and_placeholder() -> None:
    text = rmq_cli("consume", "--help").stdout.decode()
    for name in ("raw", "text", "json", "json-base64", "--format-string", "terminal", "pipe"):
        assert name in text
    for placeholder in ("{queue_offset}", "{tags}", "{keys}", "{msg_id}", "{body}"):
        assert placeholder in text
