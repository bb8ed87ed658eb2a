"""Running the ``rmq`` command line as a real process, for the tests of its subcommands."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping


def rmq_cli(
    *args: str,
    stdin: bytes | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m rmq ARGS``; raises with its stderr when it fails and ``check`` is set.
    ``env`` replaces the environment (e.g. an S3 server's ``subprocess_env()``)."""
    result = subprocess.run(
        [sys.executable, "-m", "rmq", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
        env=None if env is None else dict(env),
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"rmq {' '.join(args)} exited {result.returncode}:\n{result.stderr.decode()}"
        )
    return result
