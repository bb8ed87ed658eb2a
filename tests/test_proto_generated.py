"""The committed generated code under python/rmq/proto equals a fresh run of scripts/gen-proto."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "python" / "rmq" / "proto" / "v1"


def test_generated_code_matches_the_proto_files(tmp_path: Path) -> None:
    if importlib.util.find_spec("grpc_tools") is None:
        pytest.fail("grpcio-tools is not installed (it is in the test extra)")
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen-proto"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    fresh = tmp_path / "rmq" / "proto" / "v1"
    generated = sorted(p.name for p in fresh.iterdir() if p.is_file())
    assert generated, "gen-proto wrote nothing"
    committed = sorted(
        p.name
        for p in COMMITTED.iterdir()
        if p.name.endswith(("pb2.py", "pb2.pyi", "pb2_grpc.py", "pb2_grpc.pyi"))
    )
    assert generated == committed, "generated files differ in name from the committed ones"
    stale = [n for n in generated if (fresh / n).read_bytes() != (COMMITTED / n).read_bytes()]
    assert not stale, f"stale generated code, run scripts/gen-proto: {stale}"


def test_generated_modules_import_inside_the_package() -> None:
    from rmq.proto.v1 import broker_pb2, broker_pb2_grpc

    assert broker_pb2.SendRequest.DESCRIPTOR.full_name == "rmq.v1.SendRequest"
    assert hasattr(broker_pb2_grpc, "ShardStub") and hasattr(broker_pb2_grpc, "RouteStub")


def test_rocketmq_descriptors_are_what_the_pinned_client_ships(tmp_path: Path) -> None:
    """crates/rmqproto generates the apache.rocketmq.v2 Rust types from the committed
    descriptor set; it must be the one the installed (pinned) official client was built
    from, so that both sides of the server speak the same definitions."""
    fresh = tmp_path / "descriptors.binpb"
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "gen-proto"),
            "--out",
            str(tmp_path / "python"),
            "--descriptors",
            str(fresh),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    committed = ROOT / "proto" / "apache" / "rocketmq" / "v2" / "descriptors.binpb"
    assert fresh.read_bytes() == committed.read_bytes(), (
        "proto/apache/rocketmq/v2/descriptors.binpb is not what rocketmq-python-client "
        "ships; run scripts/gen-proto"
    )
    from google.protobuf import descriptor_pb2
    from rmq.rocketmq.wire import rpc

    files = descriptor_pb2.FileDescriptorSet.FromString(committed.read_bytes()).file
    assert [f.name for f in files] == [
        "google/protobuf/duration.proto",
        "google/protobuf/timestamp.proto",
        "definition.proto",
        "service.proto",
    ]
    assert rpc.DESCRIPTOR.serialized_pb in committed.read_bytes()
