"""Real brokers for tests: each one an ``rmq serve`` child process (``LocalBroker``) in a
temporary directory, stopped, with the clients made for it closed, when the test or test
module that started it ends, whether it passed or not.

tests/conftest.py hands these out: ``brokers`` for one test (in its ``tmp_path``),
``module_brokers`` for brokers that every test of a module shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rmq.client import Client
from rmq.cluster.local import LocalBroker


class Brokers:
    """Starts brokers in ``directory`` and remembers them (and their clients) to stop."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._brokers: list[LocalBroker] = []
        self._clients: list[Client] = []

    def start(
        self,
        shards: int = 1,
        args: Sequence[str] = (),
        data: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> LocalBroker:
        """A serving broker with ``shards`` shard processes and the extra ``rmq serve``
        ``args``, on ``data`` (default: ``data`` in the directory, then ``data-2``, ...),
        with the environment ``env`` (default: this process's)."""
        if data is None:
            count = len(self._brokers)
            data = self.directory / ("data" if count == 0 else f"data-{count + 1}")
        broker = LocalBroker(data, shards=shards, args=args, env=env)
        self._brokers.append(broker)  # before it starts: stopped even if starting fails
        return broker.start()

    def client(self, broker: LocalBroker, **options: Any) -> Client:
        """A client of ``broker`` (``options`` as ``Client`` takes them)."""
        client = Client(broker.endpoint, **options)
        self._clients.append(client)
        return client

    def stop_all(self) -> None:
        """Close every client, then stop every broker."""
        for client in self._clients:
            client.close()
        for broker in self._brokers:
            broker.stop()
