"""Small file helpers for the cluster's own files (routes, serve state)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_json_atomically(path: Path, value: Any) -> None:
    """Write ``value`` so that a crash leaves either the old file or the new one:
    temp file, fsync, rename, fsync the directory."""
    temporary = path.with_name(f".{path.name}.tmp")
    data = json.dumps(value, indent=2, sort_keys=True).encode() + b"\n"
    with open(temporary, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
