"""Fixtures shared by the test modules: real brokers (``rmq serve`` child processes).

    def test_something(brokers: Brokers) -> None:
        broker = brokers.start(shards=2)
        client = brokers.client(broker)

``brokers`` starts brokers in the test's ``tmp_path`` and stops them when the test ends;
``module_brokers`` is the same for brokers a module's tests share (a module-scoped
fixture of the module starts them). See tests/support/brokers.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.brokers import Brokers


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
