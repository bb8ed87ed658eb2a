"""Self-signed certificates for the TLS tests, made with the openssl command line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def self_signed_certificate(directory: Path, name: str) -> tuple[Path, Path]:
    """(certificate, key) PEM files for localhost and 127.0.0.1, valid for two days."""
    if shutil.which("openssl") is None:
        pytest.fail("the TLS tests need openssl on PATH to make their certificate")
    cert, key = directory / f"{name}-cert.pem", directory / f"{name}-key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key
