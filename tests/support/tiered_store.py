"""A tiered store for the tier tests: small segments, so a few thousand messages seal
several, with its tier under ``s3://BUCKET/shard-0`` on a test S3 server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import rmq

from bench.peers.s3 import S3Server

SEGMENT = 64 * 1024


def open_tiered_store(path: Path, server: S3Server, bucket: str, **options: Any) -> rmq.Store:
    """``rmq.Store(path)`` with 64 KiB segments (unless ``options`` say otherwise) tiered
    to ``bucket`` on ``server``; ``options`` as ``rmq.Store`` takes them."""
    options.setdefault("commitlog_segment_size", SEGMENT)
    return rmq.Store(
        str(path), tier_url=f"s3://{bucket}/shard-0", tier_endpoint=server.endpoint, **options
    )


def tier_state(path: Path) -> dict[str, Any]:
    """The store's ``tier/state.json``."""
    state: dict[str, Any] = json.loads((path / "tier" / "state.json").read_text())
    return state
