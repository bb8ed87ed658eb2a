"""The stored queue assignment, process placement, msgId parsing and long-poll wake-ups."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from rmq import errors
from rmq.broker.longpoll import QueueSignals
from rmq.broker.validation import parse_msg_id
from rmq.cluster.routes import RouteTable, processes_for


def test_queues_spread_evenly_and_survive_a_reload(tmp_path: Path) -> None:
    table = RouteTable(tmp_path / "routes.json")
    assert table.grow("orders", 8, [0, 1]) == [0, 1, 0, 1, 0, 1, 0, 1]
    table.save()
    loaded = RouteTable.load(tmp_path / "routes.json")
    assert loaded.layout("orders") == [0, 1, 0, 1, 0, 1, 0, 1]


def test_growing_with_more_shards_never_moves_a_queue(tmp_path: Path) -> None:
    table = RouteTable(tmp_path / "routes.json")
    before = table.grow("orders", 4, [0, 1])
    after = table.grow("orders", 7, [0, 1, 2])
    assert after[:4] == before
    assert after[4:].count(2) == 2  # the new, empty shard takes the new queues first


def test_a_damaged_route_file_is_an_error_not_an_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "routes.json"
    path.write_text("{not json")
    with pytest.raises(errors.CorruptRecordError, match=r"routes\.json"):
        RouteTable.load(path)
    path.write_text(json.dumps({"format": 1, "topics": {"t": [0, -3]}}))
    with pytest.raises(errors.CorruptRecordError):
        RouteTable.load(path)


def test_unknown_topics_are_not_found(tmp_path: Path) -> None:
    table = RouteTable(tmp_path / "routes.json")
    with pytest.raises(errors.NotFoundError):
        table.layout("nope")
    with pytest.raises(errors.NotFoundError):
        table.remove("nope")


def test_fewer_processes_than_directories_serve_every_directory() -> None:
    assert processes_for(3, 3) == [(0,), (1,), (2,)]
    assert processes_for(3, 1) == [(0, 1, 2)]
    assert processes_for(5, 2) == [(0, 2, 4), (1, 3)]


def test_msg_id_parsing_follows_rocketmq() -> None:
    assert parse_msg_id("C0A8000A00002A9F0000000000001234") == ("192.168.0.10", 10911, 0x1234)
    for bad in ("", "XYZ", "C0A8000A00002A9F00000000000012", "G" * 32):
        with pytest.raises(errors.InvalidArgumentError, match="msg_id"):
            parse_msg_id(bad)


def test_a_waiting_pull_wakes_on_a_send_and_times_out_otherwise() -> None:
    signals = QueueSignals(max_waiters=4)
    version = signals.version(("t", 0))
    started = time.monotonic()
    assert signals.wait(("t", 0), version, 0.05) is False
    assert time.monotonic() - started >= 0.04
    threading.Timer(0.05, signals.notify, args=(("t", 0),)).start()
    assert signals.wait(("t", 0), version, 5.0) is True
    # A notification that came before the wait started is not missed.
    version = signals.version(("t", 1))
    signals.notify(("t", 1))
    assert signals.wait(("t", 1), version, 5.0) is True


def test_too_many_waiters_return_at_once() -> None:
    signals = QueueSignals(max_waiters=0)
    started = time.monotonic()
    assert signals.wait(("t", 0), signals.version(("t", 0)), 5.0) is False
    assert time.monotonic() - started < 1.0
