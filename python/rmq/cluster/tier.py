"""The broker's side of a store's object-storage tier: one prefix per shard, and the
live uploader state a shard process publishes for ``rmq tier status``.

The engine keeps which segments are uploaded in each store's ``tier/state.json``, which
a read-only store reads; how the uploader is doing (failing and why, the segment being
uploaded, what this process uploaded) lives only in the process that writes the store.
A shard process therefore writes its stores' ``tier_status()`` every few seconds to
``DATA/tier-status/shard-N.json`` and removes it when it stops.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rmq.cluster.files import write_json_atomically

# ``rmq serve``'s tier flags, by the rmq.Store keyword each one sets.
TIER_OPTIONS = (
    "tier_url",
    "tier_endpoint",
    "tier_region",
    "local_retention_bytes",
    "local_retention_hours",
    "tier_retention_hours",
)
LIVE_STATUS_DIRECTORY = "tier-status"
LIVE_STATUS_INTERVAL = 2.0
# A live status older than this is from a shard process that is gone.
LIVE_STATUS_STALE_AFTER = 15.0
# Where the engine's messages stop saying what went wrong and quote the server's answer.
_DETAIL_MARKERS = (": Generic S3 error", ": Generic ", ": Error performing ")


def shard_tier_url(url: str, shard: int) -> str:
    """The tier of shard directory ``shard`` under the broker's ``url``: its own prefix."""
    return f"{url.rstrip('/')}/shard-{shard}"


def shard_options(options: Mapping[str, Any], shard: int) -> dict[str, Any]:
    """``options`` for shard ``shard``'s store: a ``tier_url`` gets the shard's prefix."""
    result = dict(options)
    if result.get("tier_url"):
        result["tier_url"] = shard_tier_url(str(result["tier_url"]), shard)
    return result


def brief(reason: str | None) -> str | None:
    """The engine's tier error without the server's quoted answer (request, XML body)."""
    if reason is None:
        return None
    cut = min((reason.find(m) for m in _DETAIL_MARKERS if m in reason), default=-1)
    return reason[:cut] if cut > 0 else reason


def live_status_path(store: Path) -> Path | None:
    """Where the shard process serving the store directory ``store`` (``DATA/shard-N``)
    publishes its tier status; None for a directory that is no broker's shard."""
    name = store.name
    if not (name.startswith("shard-") and name[6:].isdigit()):
        return None
    return store.parent / LIVE_STATUS_DIRECTORY / f"{name}.json"


def write_live_status(store: Path, status: Mapping[str, Any]) -> None:
    path = live_status_path(store)
    if path is None:
        return
    path.parent.mkdir(exist_ok=True)
    write_json_atomically(
        path, {"pid": os.getpid(), "written_ms": int(time.time() * 1000), "status": status}
    )


def remove_live_status(store: Path) -> None:
    path = live_status_path(store)
    if path is not None:
        path.unlink(missing_ok=True)


def read_live_status(store: Path, now: float | None = None) -> dict[str, Any] | None:
    """The status the serving shard process last published for ``store``, with its
    ``pid`` and ``written_ms``; None when there is none or it is stale."""
    path = live_status_path(store)
    if path is None:
        return None
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("status"), dict):
        return None
    age = (now if now is not None else time.time()) - value.get("written_ms", 0) / 1000
    return value if age <= LIVE_STATUS_STALE_AFTER else None
