"""Running the ``rmq`` command line as a real process, for the tests of its subcommands."""

from __future__ import annotations

import subprocess
import sys


def rmq_cli(
    *args: str, stdin: bytes | None = None, check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    """``python -m rmq ARGS``; raises with its stderr when it fails and ``check`` is set."""
    result = subprocess.run(
        [sys.executable, "-m", "rmq", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"rmq {' '.join(args)} exited {result.returncode}:\n{result.stderr.decode()}"
        )
    return result
