"""``Store.put`` takes its keyword arguments however the caller spells them.

The binding matches keyword names written at a call site (which Python interns) by
pointer and hands any other call to pyo3's parser; both routes must store the same fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import rmq

FIELDS: dict[str, Any] = {
    "queue_id": 1,
    "tags": "TagA",
    "keys": ["k1", "k2"],
    "properties": {"p": "v"},
    "flag": 5,
    "born_timestamp": 1_700_000_000_000,
    "born_host": "10.0.0.1:9000",
}


def runtime_name(name: str) -> str:
    """The same name as a new, non-interned string object."""
    return "".join(list(name))


def stored_fields(message: rmq.Message) -> tuple[Any, ...]:
    return (
        message.queue_id,
        message.body,
        message.tags,
        message.keys,
        message.properties,
        message.flag,
        message.born_timestamp,
        message.born_host,
    )


def test_written_and_runtime_keyword_names_store_the_same_fields(tmp_path: Path) -> None:
    with rmq.Store(tmp_path) as store:
        written = store.put(
            "T",
            b"body",
            queue_id=1,
            tags="TagA",
            keys=["k1", "k2"],
            properties={"p": "v"},
            flag=5,
            born_timestamp=1_700_000_000_000,
            born_host="10.0.0.1:9000",
        )
        runtime = {runtime_name(name): value for name, value in FIELDS.items()}
        assert all(name is not runtime_name(name) for name in FIELDS)
        built = store.put("T", b"body", **runtime)
        by_position_and_name = store.put(**{"topic": "T", "body": b"body"}, **FIELDS)
        messages = store.get("T", 1, 0, 3)
    assert [m.queue_offset for m in messages] == [0, 1, 2]
    assert [written.queue_offset, built.queue_offset, by_position_and_name.queue_offset] == [
        0,
        1,
        2,
    ]
    first = stored_fields(messages[0])
    assert first == (
        1,
        b"body",
        "TagA",
        ["k1", "k2"],
        {"p": "v"},
        5,
        1_700_000_000_000,
        "10.0.0.1:9000",
    )
    assert all(stored_fields(m) == first for m in messages[1:])
    # Each route indexed its keys too.
    assert len(store_keys_lookup(tmp_path)) == 3


def store_keys_lookup(path: Path) -> list[rmq.Message]:
    with rmq.Store(path) as store:
        return store.query_by_key("T", "k1", max_count=8)
