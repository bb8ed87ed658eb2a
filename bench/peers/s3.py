"""A real S3-compatible server for the benchmarks: versitygw (its posix backend) on a free
loopback port over a directory, the same binary the tests start
(``scripts/install-test-servers`` puts it in ``.tools/bin/versitygw``; else ``versitygw`` on
PATH). The tests' launcher (``tests/support/s3_server.py``) has the fault hooks (pause,
kill); this one only starts, answers and stops, so that bench imports nothing of tests.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.basics import REPO_DIR, NotMeasurable
from bench.peers.common import free_port

VERSITYGW = REPO_DIR / ".tools" / "bin" / "versitygw"
ACCESS_KEY = "rmq-bench-access"
SECRET_KEY = "rmq-bench-secret-key-0123456789"
REGION = "us-east-1"
HOST = "127.0.0.1"

# Variables that would make an AWS client in this process (or a child) use other
# credentials or another endpoint than the server's: removed while the server runs.
AWS_OVERRIDES = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_ENDPOINT",
    "AWS_ENDPOINT_URL_S3",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
)


def find_versitygw() -> Path:
    if VERSITYGW.is_file() and os.access(VERSITYGW, os.X_OK):
        return VERSITYGW
    found = shutil.which("versitygw")
    if found is None:
        raise NotMeasurable(
            "versitygw (the S3 server) is not installed: run `bash scripts/install-test-servers`"
        )
    return Path(found)


class S3Server:
    """versitygw serving ``directory / "root"`` on ``http://127.0.0.1:PORT``."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.root = self.directory / "root"
        self.log_path = self.directory / "versitygw.log"
        self.binary = find_versitygw()
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def aws_env(self) -> dict[str, str]:
        """The AWS_* variables that point boto3 and rmq's engine at this server."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def start(self, timeout: float = 30.0) -> S3Server:
        self.root.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VGW_", "ROOT_"))}
        command = [
            str(self.binary),
            "--port",
            f"{HOST}:{self.port}",
            "--access",
            ACCESS_KEY,
            "--secret",
            SECRET_KEY,
            "--region",
            REGION,
            "--quiet",
            "posix",
            str(self.root),
        ]
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-800:]
                self.stop()
                raise RuntimeError(f"versitygw exited while starting: {tail}")
            connection = http.client.HTTPConnection(HOST, self.port, timeout=1.0)
            try:
                connection.request("GET", "/")
                connection.getresponse().read()
                return self
            except OSError:
                time.sleep(0.05)
            finally:
                connection.close()
        self.stop()
        raise RuntimeError(f"versitygw did not answer on {self.endpoint} within {timeout} s")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def client(endpoint: str) -> Any:
    """A boto3 S3 client of the server at ``endpoint`` (path-style, credentials above)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name=REGION,
        config=Config(
            s3={"addressing_style": "path"},
            retries={"max_attempts": 3, "mode": "standard"},
            # No extra checksum beyond what S3 requires (the payload's SigV4 hash over
            # plain HTTP): the plain upload is meant to be the server's best case.
            request_checksum_calculation="when_required",
        ),
    )


def delete_prefix(s3: Any, bucket: str, prefix: str) -> int:
    """Delete every object under ``prefix``; returns how many."""
    deleted = 0
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
            deleted += len(keys)
    return deleted
