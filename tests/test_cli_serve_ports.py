"""``rmq serve`` with a port already taken: one line on stderr says which port, whose it
is and what to do; no traceback, a non-zero exit and no shard process left behind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.cli import rmq_cli

SHARDS = 2


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_run(count: int) -> int:
    """A port P with P, P+1, ..., P+count-1 free on loopback."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = int(probe.getsockname()[1])
        if base + count <= 65536 and all(port_is_free(base + i) for i in range(count)):
            return base
    raise RuntimeError(f"no {count} consecutive free ports found")


@contextmanager
def listening_on(port: int) -> Iterator[socket.socket]:
    """Another program's server on ``port``."""
    with socket.socket() as taker:
        taker.bind(("127.0.0.1", port))
        taker.listen()
        yield taker


def processes_mentioning(text: str) -> list[str]:
    """Command lines of running processes that contain ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in command:
            found.append(command)
    return found


def check_one_clear_line(
    result: subprocess.CompletedProcess[bytes], port: int, data: Path, *wanted: str
) -> str:
    """The failure is one ERROR line naming ``port`` with ``wanted``; returns that line."""
    stderr = result.stderr.decode()
    assert result.returncode != 0, stderr
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, stderr
    line = errors[0]
    assert f"127.0.0.1:{port}: the port is already in use" in line, line
    for text in wanted:
        assert text in line, f"{text!r} not in {line!r}"
    # Checked before any shard process starts, and nothing stays behind.
    assert "started shard process" not in stderr, stderr
    assert processes_mentioning(str(data)) == []
    return line


def serve(data: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return rmq_cli("serve", "--data", str(data), "--shards", str(SHARDS), *args, check=False)


def test_a_taken_supervisor_port_is_named_with_what_to_do(tmp_path: Path) -> None:
    port = free_port_run(SHARDS + 1)
    with listening_on(port):
        result = serve(tmp_path / "data", "--port", str(port))
    check_one_clear_line(
        result, port, tmp_path / "data", "the supervisor's port", f"--port {port}", "--port"
    )


@pytest.mark.parametrize("process", range(SHARDS))
def test_a_taken_shard_port_names_the_shard_and_how_its_port_was_chosen(
    tmp_path: Path, process: int
) -> None:
    port = free_port_run(SHARDS + 1)
    taken = port + 1 + process
    with listening_on(taken):
        result = serve(tmp_path / "data", "--port", str(port))
    check_one_clear_line(
        result,
        taken,
        tmp_path / "data",
        f"shard process {process}",
        f"--port {port} + {process + 1} = {taken}",
        f"--port+1 to --port+{SHARDS}",
        "--shard-ports",
    )


def test_a_taken_port_of_shard_ports_names_the_shard_and_the_option(tmp_path: Path) -> None:
    port = free_port_run(SHARDS + 1)
    shard_ports = [port + 1, port + 2]
    with listening_on(shard_ports[1]):
        result = serve(
            tmp_path / "data",
            "--port",
            str(port),
            "--shard-ports",
            ",".join(map(str, shard_ports)),
        )
    check_one_clear_line(
        result,
        shard_ports[1],
        tmp_path / "data",
        "shard process 1 (number 2 of --shard-ports)",
        "choose free ports with --shard-ports",
    )


def test_a_shard_process_that_cannot_listen_exits_with_one_line(tmp_path: Path) -> None:
    """A port taken after rmq serve checked it: the shard process itself says so."""
    data = tmp_path / "data"
    data.mkdir()
    port = free_port_run(1)
    command = [
        sys.executable, "-m", "rmq.cluster.shard",
        "--data", str(data), "--shards", "0", "--port", str(port),
        "--routes", str(data / "routes.json"),
    ]  # fmt: skip
    with listening_on(port):
        result = subprocess.run(command, capture_output=True, timeout=120, check=False)
    stderr = result.stderr.decode()
    assert result.returncode == 4, stderr  # EXIT_CANNOT_LISTEN, which the supervisor reads
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, stderr
    assert errors[0].endswith(f"cannot listen on 127.0.0.1:{port}: the port is already in use")
    assert result.stdout == b""  # never said it serves
