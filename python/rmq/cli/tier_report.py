"""What ``rmq tier status`` and ``rmq inspect`` say about a store's object-storage tier,
made from ``rmq.Store.tier_status()`` (and the serving shard process's live status)."""

from __future__ import annotations

import datetime
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rmq.cluster.tier import brief, read_live_status

# Segment states in the order of their lifecycle, with what each means for an operator.
STATES = {
    "active": "local, being written",
    "pending": "local, waiting for upload",
    "uploaded": "local and in the tier",
    "evicted": "only in the tier",
}
LOCAL_STATES = ("active", "pending", "uploaded")
TIER_STATES = ("uploaded", "evicted")


def human_bytes(count: int) -> str:
    """``1.5 MiB``: binary units, one decimal (bytes as a whole number)."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _millis(value: int | None) -> str | None:
    if value is None:
        return None
    moment = datetime.datetime.fromtimestamp(value / 1000, datetime.UTC)
    return moment.isoformat(timespec="seconds")


def _count(segments: list[Mapping[str, Any]], states: tuple[str, ...]) -> dict[str, int]:
    chosen = [s for s in segments if s["state"] in states]
    return {"segments": len(chosen), "bytes": sum(int(s["size"]) for s in chosen)}


def summarize(status: Mapping[str, Any]) -> dict[str, Any]:
    """Counts and bytes per state, what is local and what is in the tier."""
    segments: list[Mapping[str, Any]] = list(status.get("segments", []))
    return {
        "url": status.get("url"),
        "states": {state: _count(segments, (state,)) for state in STATES},
        "local": _count(segments, LOCAL_STATES),
        "in_tier": _count(segments, TIER_STATES),
        "consume_queue_files": {
            state: _count(list(status.get("consume_queues", [])), (state,)) for state in TIER_STATES
        },
    }


def uploader(store: Path, status: Mapping[str, Any], now: float | None = None) -> dict[str, Any]:
    """How uploads go: from the shard process serving ``store`` when it published its
    status lately (``source`` "broker"), else as this process's read-only store saw the
    tier when it opened (``source`` "here")."""
    live = read_live_status(store, now)
    upload: Mapping[str, Any] = status.get("upload") or {}
    answer: dict[str, Any] = {"source": "here"}
    if live is not None:
        upload = live["status"].get("upload") or {}
        age = (now if now is not None else time.time()) - live["written_ms"] / 1000
        answer = {"source": "broker", "pid": live["pid"], "age_seconds": round(age, 1)}
    failing = upload.get("failing")
    in_progress = upload.get("in_progress")
    answer.update(
        failing=failing,
        failing_brief=brief(failing),
        failing_since_ms=upload.get("failing_since_ms"),
        failing_since=_millis(upload.get("failing_since_ms")),
        failed_attempts=upload.get("failed_attempts", 0),
        in_progress=(
            {"start_offset": in_progress[0], "size": in_progress[1]} if in_progress else None
        ),
    )
    if live is not None:
        for name in ("uploaded_segments", "uploaded_bytes", "upload_seconds"):
            answer[name] = upload.get(name)
    return answer


def describe_tier(store: Path, status: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The tier part of a store's report (``status`` from a read-only store): None for a
    store without a tier. A store whose shard process serves it with a tier but has
    uploaded nothing yet has no ``tier/state.json`` a read-only store could find: the
    shard process's published status stands in."""
    if status is None:
        live = read_live_status(store)
        status = live["status"] if live is not None else None
    if status is None:
        return None
    return {
        **summarize(status),
        "uploader": uploader(store, status),
        "segments": [dict(s) for s in status.get("segments", [])],
    }


def state_line(states: Mapping[str, Mapping[str, int]]) -> str:
    """``2 pending (128.0 KiB), 6 evicted (384.0 KiB)``: the states that have segments."""
    parts = [
        f"{counts['segments']} {state} ({human_bytes(counts['bytes'])})"
        for state, counts in states.items()
        if counts["segments"]
    ]
    return ", ".join(parts) or "no segments"


def uploader_line(info: Mapping[str, Any]) -> str:
    """One line on the uploader: ok, or failing since when and why."""
    if info["source"] == "broker":
        where = (
            f"uploader of the serving shard process (pid {info['pid']}, "
            f"{info['age_seconds']} s ago)"
        )
    else:
        where = "tier as seen from here (no serving shard process publishes its uploader)"
    if info["failing"]:
        since = f" since {info['failing_since']}" if info.get("failing_since") else ""
        return (
            f"{where}: FAILING{since}, {info['failed_attempts']} attempt(s): "
            f"{info['failing_brief']}"
        )
    return f"{where}: ok"
