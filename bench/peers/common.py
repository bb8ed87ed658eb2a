"""Process and Maven helpers shared by the broker peers."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.basics import NotMeasurable

PEERS_DIR = Path(__file__).resolve().parent
CACHE = PEERS_DIR / ".cache"
CLASSES = CACHE / "classes"
JAVA_SOURCES = PEERS_DIR / "java"
# Sources bench/peers/java shares with the Maven project bench/peers/rocketmq_client.
SHARED_JAVA_SOURCES = PEERS_DIR / "java-shared"


def java_available() -> None:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise NotMeasurable(f"`{tool}` is not on PATH (a JDK 17+ and Maven are needed)")


def fetch_jars(
    name: str, quiet: bool = True, properties: dict[str, str] | None = None, cache: str = ""
) -> Path:
    """Copy the peer's released jars (and their dependencies) into .cache/<cache>/lib
    (``cache`` defaults to ``name``); ``properties`` are given to Maven as ``-Dkey=value``."""
    java_available()
    lib = CACHE / (cache or name) / "lib"
    stamp = CACHE / (cache or name) / ".fetched"
    pom = PEERS_DIR / name / "pom.xml"
    if stamp.exists() and stamp.stat().st_mtime >= pom.stat().st_mtime and any(lib.glob("*.jar")):
        return lib
    lib.mkdir(parents=True, exist_ok=True)
    cmd = [
        "mvn",
        "-B",
        *(["-q"] if quiet else []),
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={lib}",
        "-DincludeScope=runtime",
        *(f"-D{key}={value}" for key, value in (properties or {}).items()),
    ]
    print(f"   fetching {cache or name} jars with Maven ...", flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
        raise NotMeasurable(f"Maven could not fetch the {name} jars:\n{tail}")
    stamp.touch()
    return lib


def compile_java(lib: Path) -> Path:
    """Compile bench/peers/java/*.java, and the shared sources they use, against a peer's
    jars (once per change)."""
    sources = sorted(JAVA_SOURCES.glob("*.java")) + sorted(SHARED_JAVA_SOURCES.rglob("*.java"))
    out = CLASSES
    stamp = out / ".compiled"
    newest = max(s.stat().st_mtime for s in sources)
    if stamp.exists() and stamp.stat().st_mtime >= newest:
        return out
    if shutil.which("javac") is None:
        raise NotMeasurable("`javac` is not on PATH (a JDK 17+ is needed)")
    out.mkdir(parents=True, exist_ok=True)
    cmd = ["javac", "-nowarn", "-d", str(out), "-cp", f"{lib}/*", *map(str, sources)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise NotMeasurable(f"javac failed on bench/peers/java:\n{proc.stderr[-2000:]}")
    stamp.touch()
    return out


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_port_block(size: int) -> int:
    """A base port such that base .. base+size-1 are all free on loopback."""
    for _ in range(50):
        base = free_port()
        if base + size > 65000:
            continue
        ok = True
        for p in range(base - 2, base + size):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise NotMeasurable("no block of free loopback ports found")


def wait_port(port: int, proc: subprocess.Popen[Any], timeout: float, what: str) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise NotMeasurable(f"{what} exited with code {proc.returncode} while starting")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise NotMeasurable(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def start_java(
    main: str,
    args: list[str],
    classpath: str,
    log: Path,
    heap: str = "512m",
    extra: list[str] | None = None,
    home: Path | None = None,
) -> subprocess.Popen[bytes]:
    cmd = ["java", f"-Xms{heap}", f"-Xmx{heap}", "-XX:+UseG1GC", *(extra or [])]
    if home is not None:
        cmd.append(f"-Duser.home={home}")
    cmd += ["-cp", classpath, main, *args]
    out = open(log, "ab")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def stop_process(proc: subprocess.Popen[Any] | None, timeout: float = 20.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def run_java_tool(
    main: str,
    args: list[str],
    classpath: str,
    timeout: float,
    heap: str = "512m",
    home: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    cmd = ["java", f"-Xmx{heap}", "-XX:+UseG1GC"]
    if home is not None:
        cmd.append(f"-Duser.home={home}")
    cmd += ["-cp", classpath, main, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def bench_result(proc: subprocess.CompletedProcess[str], what: str) -> dict[str, float]:
    """The BENCH_RESULT JSON line one of bench/peers/java's programs printed."""
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("BENCH_RESULT "):
            data = json.loads(line[len("BENCH_RESULT ") :])
            return {k: float(v) for k, v in data.items() if isinstance(v, int | float)}
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
    raise RuntimeError(f"{what} printed no result (exit {proc.returncode}):\n{tail}")


def java_version() -> str | None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        return out.stderr.splitlines()[0] if out.stderr else None
    return None
