"""Building the tests' Java harnesses with Maven.

Offline first: once the local repository holds the jars, no network is needed. The first
run (or a new RocketMQ release) falls back to the Maven client's default repositories.
Without Java or Maven the tests fail; they are never skipped.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

MAVEN_TIMEOUT_S = 540


def java_and_maven(what: str) -> str:
    """The ``java`` on PATH, or the test fails saying ``what`` needs it."""
    java, mvn = shutil.which("java"), shutil.which("mvn")
    if java is None or mvn is None:
        pytest.fail(f"{what} need java (17+) and mvn on PATH")
    return java


def maven_package(project: Path, *options: str, what: str) -> None:
    """``mvn -B -q <options> package`` in ``project``: offline, then online; the test
    fails with Maven's output tail when both fail."""
    mvn = shutil.which("mvn") or "mvn"
    command = [mvn, "-B", "-q", "-Dstyle.color=never", *options, "package"]
    for offline in (True, False):
        built = subprocess.run(
            [command[0], *(["-o"] if offline else []), *command[1:]],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=MAVEN_TIMEOUT_S,
        )
        if built.returncode == 0:
            return
    pytest.fail(f"building {what} failed:\n" + (built.stdout + built.stderr)[-4000:])
