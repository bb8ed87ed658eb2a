"""The real S3-compatible server that the tests and the benchmarks start: a child process on
a free loopback port over a root directory. One launcher for both (bench imports nothing of
tests; the tests import this).

    with S3Server(tmp_path / "s3") as server:
        server.create_bucket("tier")
        client = server.client()                    # a boto3 S3 client
        env = server.subprocess_env()               # AWS_* for a child process
        path = server.object_path("tier", "a/b")    # the object's file: root/tier/a/b
        server.stop()                               # the object store is down...
        server.start()                              # ...and back, same port and root

The server is versitygw (https://github.com/versity/versitygw) with its posix backend:
``scripts/install-test-servers`` installs it into .tools/bin/versitygw (else ``versitygw``
on PATH is used). It keeps bucket ``B`` as the directory ``root/B`` and object ``K`` as the
file ``root/B/K`` (``K`` split on "/" into directories), with the object's metadata (ETag,
checksums, content type) in ``user.*`` extended attributes of that file: the root must be
on a file system with user xattrs (ext4, xfs, btrfs, tmpfs on Linux >= 6.6). Multipart
uploads are staged in ``root/B/.sgwtmp/multipart/``; ``root/.vgwlocks/`` holds lock files.
Neither shows up in listings. Editing an object's file changes what GET returns (the
length is the file's, the ETag and checksums the stored ones).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from bench.basics import REPO_DIR, NotMeasurable
from bench.peers.common import free_port

VERSITYGW = REPO_DIR / ".tools" / "bin" / "versitygw"
INSTALL_SCRIPT = "scripts/install-test-servers"

ACCESS_KEY = "rmq-s3-access"
SECRET_KEY = "rmq-s3-secret-key-0123456789"
REGION = "us-east-1"

# versitygw's posix backend wraps every ranged GET's file reader in a fresh buffered reader
# of this size (its default is 1 MiB, allocated and zeroed per request: about 1.5 ms of CPU
# for a 64 KiB GET, 0.6 ms with 64 KiB; `python -m bench.s3_get_cost`). 64 KiB is the
# tier's block size. None: the server's default.
IO_BUFFER_SIZE: int | None = 64 << 10

# Variables of the caller's environment that would make an AWS client (boto3, or rmq's
# engine in a child process) use other credentials or another endpoint than the server's.
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


class S3ServerError(RuntimeError):
    """The S3 server is not installed, did not start, or did not answer."""


class S3ServerNotInstalled(S3ServerError, NotMeasurable):
    """The server's binary is missing: a test fails on it, a benchmark reports it as not
    measurable."""


def find_versitygw() -> Path:
    """The versitygw binary: .tools/bin/versitygw, else ``versitygw`` on PATH."""
    if VERSITYGW.is_file() and os.access(VERSITYGW, os.X_OK):
        return VERSITYGW
    found = shutil.which("versitygw")
    if found is not None:
        return Path(found)
    raise S3ServerNotInstalled(
        f"versitygw (the S3 server) is not installed: run `bash {INSTALL_SCRIPT}` (it "
        "installs it into .tools/bin/; scripts/test-all runs it)"
    )


class S3Server:
    """versitygw serving ``directory / "root"`` on ``http://127.0.0.1:PORT``.

    The port is chosen once, so ``stop()`` then ``start()`` brings the same endpoint back
    over the same root. Its output goes to ``directory / "versitygw.log"``. Used as a
    context manager it starts on entry and is killed on exit, whatever happened.
    """

    host = "127.0.0.1"

    def __init__(
        self,
        directory: Path,
        *,
        port: int | None = None,
        access_key: str = ACCESS_KEY,
        secret_key: str = SECRET_KEY,
        region: str = REGION,
        binary: Path | None = None,
        start_timeout: float = 30.0,
        io_buffer_size: int | None = IO_BUFFER_SIZE,
    ) -> None:
        self.directory = Path(directory)
        self.root = self.directory / "root"
        self.log_path = self.directory / "versitygw.log"
        self.port = port if port is not None else free_port()
        self.access_key = access_key
        self.secret_key = secret_key
        self.region = region
        self.binary = binary if binary is not None else find_versitygw()
        self.start_timeout = start_timeout
        self.io_buffer_size = io_buffer_size
        self._process: subprocess.Popen[bytes] | None = None
        self._client: Any = None

    # -- where it is ---------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://{self.host}:{self.port}"

    def bucket_path(self, bucket: str) -> Path:
        """The bucket's directory: ``root / bucket``."""
        return self.root / bucket

    def object_path(self, bucket: str, key: str) -> Path:
        """The object's file: ``root / bucket / key`` (``key``'s "/" are directories)."""
        return self.bucket_path(bucket).joinpath(*key.split("/"))

    # -- running it ----------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self.running and self._process is not None else None

    def command(self) -> list[str]:
        """The server's command line."""
        return [
            str(self.binary),
            "--port",
            f"{self.host}:{self.port}",
            "--access",
            self.access_key,
            "--secret",
            self.secret_key,
            "--region",
            self.region,
            "--quiet",
            "posix",
            *(
                ["--io-buffer-size", str(self.io_buffer_size)]
                if self.io_buffer_size is not None
                else []
            ),
            str(self.root),
        ]

    def start(self) -> S3Server:
        """Start the server (nothing to do when it runs) and wait until it answers HTTP."""
        if self.running:
            return self
        self.root.mkdir(parents=True, exist_ok=True)
        # versitygw reads its settings from VGW_* and ROOT_* variables too: none of the
        # caller's may change the one started here.
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("VGW_", "ROOT_ACCESS_KEY", "ROOT_SECRET"))
        }
        command = self.command()
        with self.log_path.open("ab") as log:
            log.write(f"\n==> {' '.join(command)}\n".encode())
            log.flush()
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # a ^C to pytest or the bench is not a ^C to it
            )
        try:
            self._wait_until_answering()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the server (SIGTERM, SIGKILL after ``timeout`` s); its files stay."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGCONT)  # a paused one cannot act on SIGTERM
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def kill(self) -> None:
        """Stop the server at once (SIGKILL), as a crash would."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): connections are accepted, nothing is answered."""
        if self._process is None or not self.running:
            raise S3ServerError("the S3 server is not running")
        os.kill(self._process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server go on (SIGCONT)."""
        if self._process is None or not self.running:
            raise S3ServerError("the S3 server is not running")
        os.kill(self._process.pid, signal.SIGCONT)

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far."""
        if self._process is None or not self.running:
            raise S3ServerError("the S3 server is not running")
        fields = Path(f"/proc/{self._process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        # utime and stime are the 14th and 15th fields; the split starts at the 3rd.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __enter__(self) -> S3Server:
        try:
            return self.start()
        except BaseException:
            self.kill()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.kill()

    def _wait_until_answering(self) -> None:
        """Until GET / has a response from versitygw (AccessDenied: it is unsigned)."""
        deadline = time.monotonic() + self.start_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            assert self._process is not None
            code = self._process.poll()
            if code is not None:
                raise S3ServerError(
                    f"versitygw exited with {code} while starting on {self.endpoint}"
                    f"{self._log_tail()}"
                )
            connection = http.client.HTTPConnection(self.host, self.port, timeout=1.0)
            try:
                connection.request("GET", "/")
                response = connection.getresponse()
                response.read()
                if response.getheader("Server", "").upper() == "VERSITYGW":
                    return
                raise S3ServerError(
                    f"{self.endpoint} answered, but not as versitygw "
                    f"(Server: {response.getheader('Server')!r})"
                )
            except OSError as error:
                last_error = error
            finally:
                connection.close()
            time.sleep(0.05)
        raise S3ServerError(
            f"versitygw did not answer on {self.endpoint} within {self.start_timeout} s "
            f"({last_error}){self._log_tail()}"
        )

    def _log_tail(self, lines: int = 20) -> str:
        try:
            tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return f"\n--- {self.log_path.name} ---\n" + "\n".join(tail)

    # -- using it ------------------------------------------------------------------------

    def aws_env(self) -> dict[str, str]:
        """The AWS_* variables that point an S3 client (boto3, the AWS CLI, Rust's
        object_store) at this server with its credentials."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            # No client may look for credentials on a cloud metadata address.
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def subprocess_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default ``os.environ``) without its AWS profile, token and endpoint
        overrides, plus ``aws_env()``: the ``env`` for a child process that uses S3."""
        env = dict(os.environ if base is None else base)
        for key in AWS_OVERRIDES:
            env.pop(key, None)
        env.update(self.aws_env())
        return env

    def client(self, **config: Any) -> Any:
        """A boto3 S3 client of this server (path-style addressing, no retries: a request
        to a stopped server fails at once). ``config`` goes to ``botocore.config.Config``."""
        import boto3
        from botocore.config import Config

        options: dict[str, Any] = {
            "s3": {"addressing_style": "path"},
            "retries": {"max_attempts": 1, "mode": "standard"},
            "connect_timeout": 5,
            "read_timeout": 30,
        }
        options.update(config)
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
            config=Config(**options),
        )

    def create_bucket(self, name: str) -> str:
        """Create the bucket ``name`` (3-63 lowercase letters, digits, "-" and ".")."""
        if self._client is None:
            self._client = self.client()
        self._client.create_bucket(Bucket=name)
        return name


def delete_prefix(s3: Any, bucket: str, prefix: str) -> int:
    """Delete every object under ``prefix`` with the boto3 client ``s3``; returns how many."""
    deleted = 0
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
            deleted += len(keys)
    return deleted
