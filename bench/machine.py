"""Where a run was measured: the machine and the versions of everything compared,
recorded with every result."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.basics import REPO_DIR


def rmq_version() -> str | None:
    try:
        import rmq

        return str(rmq.__version__)
    except Exception:
        return None


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def machine_description(work_dir: Path) -> dict[str, Any]:
    cpu = ""
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = 0
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    fs = ""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["df", "-T", str(work_dir)], capture_output=True, text=True, timeout=10
        ).stdout.splitlines()
        if len(out) > 1:
            fs = " ".join(out[1].split()[:2])
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "work_filesystem": fs,
        "python": sys.version.split()[0],
        "loadavg_at_start": os.getloadavg()[0],
    }


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"rmq": rmq_version()}
    from importlib import metadata

    for dist in ("rocksdict", "lmdb", "pyarrow", "pyspark", "matplotlib", "tqdm"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = None
    import sqlite3

    found["sqlite"] = sqlite3.sqlite_version
    from bench.peers import kafka, rocketmq
    from bench.peers.common import java_version

    found["rocketmq_peer"] = rocketmq.VERSION
    found["kafka_peer"] = kafka.VERSION
    found["java"] = java_version()
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["git", "-C", str(REPO_DIR), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        found["rmq_commit"] = out.stdout.strip() or None
    return found
