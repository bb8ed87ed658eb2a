"""Fixtures shared by the test modules: real brokers (``rmq serve`` child processes).

    def test_something(brokers: Brokers) -> None:
        broker = brokers.start(shards=2)
        client = brokers.client(broker)

``brokers`` starts brokers in the test's ``tmp_path`` and stops them when the test ends;
``module_brokers`` is the same for brokers a module's tests share (a module-scoped
fixture of the module starts them). See tests/support/brokers.py.

``broker`` is a two-shard broker a module's tests share, and ``client`` a client of it
(a module that needs another broker defines its own).

``s3_server`` is a real S3-compatible server (versitygw) for the session and ``s3_bucket``
a fresh bucket on it for one test. See bench/peers/s3.py.

``spark`` is a local Spark session with rmq's data source for one module's tests (a
module that needs other settings defines its own). See tests/support/spark_session.py.

``harness`` is RocketMQ's own store library (the Java harness under tests/interop/), for
the interop tests. See tests/support/rocketmq_interop.py.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rmq.client import Client
from rmq.cluster.local import LocalBroker

from bench.peers.s3 import S3Server
from tests.support.brokers import Brokers
from tests.support.rocketmq_interop import Harness, build_harness


@pytest.fixture
def brokers(tmp_path: Path) -> Iterator[Brokers]:
    started = Brokers(tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture(scope="module")
def module_brokers(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Brokers]:
    started = Brokers(tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2]))
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture(scope="module")
def broker(module_brokers: Brokers) -> LocalBroker:
    return module_brokers.start(shards=2)


@pytest.fixture(scope="module")
def client(module_brokers: Brokers, broker: LocalBroker) -> Client:
    return module_brokers.client(broker)


@pytest.fixture(scope="module")
def spark(request: pytest.FixtureRequest) -> Iterator[Any]:
    # Imported here: pyspark is loaded only by the modules that ask for Spark.
    from tests.support.spark_session import local_spark

    name = request.module.__name__.rpartition(".")[2].removeprefix("test_").replace("_", "-")
    with local_spark(f"rmq-{name}-tests") as session:
        yield session


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3-compatible server (versitygw, posix backend) on a loopback port for the
    whole session; see bench/peers/s3.py. A test that stops it should start it
    again (``s3_bucket`` restarts one left stopped)."""
    with S3Server(tmp_path_factory.mktemp("s3")) as server:
        yield server


@pytest.fixture
def aws_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """``s3_server`` with its credentials in this test's ``AWS_*`` environment, as a
    store opened in-process reads them."""
    for name, value in s3_server.aws_env().items():
        monkeypatch.setenv(name, value)
    return s3_server


@pytest.fixture
def s3_bucket(s3_server: S3Server, request: pytest.FixtureRequest) -> str:
    """A new, empty bucket on ``s3_server`` for this test; its name."""
    s3_server.start()  # a no-op unless an earlier test left the server stopped
    stem = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    return s3_server.create_bucket(f"{stem or 'test'}-{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="session")
def harness() -> Harness:
    """RocketMQ's own store library in a Java harness, built with Maven once per session
    (see tests/support/rocketmq_interop.py)."""
    return build_harness()
