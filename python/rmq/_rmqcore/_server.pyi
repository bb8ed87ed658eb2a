"""A shard process's native data plane and the status tables it answers with."""

from collections.abc import Mapping, Sequence
from typing import final

from ._leases import LeaseBook
from ._store import Store

@final
class ShardServer:
    """A shard process's native data plane: the engine's own gRPC server on the shard's
    port. It answers ``Send``, ``SendBatches``, ``Pull`` and RocketMQ 5's ``SendMessage``,
    ``ReceiveMessage``, ``AckMessage`` and ``ChangeInvisibleDuration`` (the last three with
    ``leases``), and forwards every other call to the process's Python server on
    ``internal_port`` (loopback)."""

    def __new__(
        cls,
        host: str,
        port: int,
        internal_port: int,
        stores: Sequence[tuple[int, Store]],
        limits: Mapping[str, int],
        *,
        token: str | None = None,
        rocketmq: bool = False,
        leases: Sequence[tuple[int, LeaseBook]] | None = None,
        max_delivery_attempts: int = 16,
        tls_cert: bytes | None = None,
        tls_key: bytes | None = None,
    ) -> ShardServer:
        """``rocketmq``: the process serves RocketMQ 5 clients, so the data plane answers
        their ``SendMessage`` too; ``leases``: each store's lease book, shared with the
        Python path, on which it answers their receives and acks as well (a message out of
        ``max_delivery_attempts`` is left to the Python path). ``tls_cert`` and ``tls_key``
        (PEM, both or neither): serve TLS on ``port``; ``ValueError`` if they are not a
        certificate chain and its key."""
    @property
    def port(self) -> int: ...
    def host_topic(self, topic: str, shards: Sequence[int]) -> None:
        """Queue ``i`` of ``topic`` lives in shard directory ``shards[i]``."""
    def prepare_queues(self, topic: str, first_queue: int) -> None:
        """Create the files of this process's queues of ``topic`` from ``first_queue`` on
        that their first send would create (a topic just created or grown)."""
    def drop_topic(self, topic: str) -> None: ...
    def notify(self, topic: str, queue_id: int) -> None:
        """Wake the pulls waiting on this queue (a send through the Python path)."""
    def version(self, topic: str, queue_id: int) -> int: ...
    def wait(self, topic: str, queue_id: int, version: int, timeout: float) -> bool:
        """Block until the queue's version changes or ``timeout`` seconds pass."""
    def answer_send(self, raw: bytes, born_host: str | None = None) -> bytes:
        """Store one encoded ``rmq.v1.SendRequest`` with the data plane's send function
        (the one ``Send`` and ``SendBatches`` use) and return the encoded
        ``SendStreamResponse``: the result, or the refusal's status. Raises
        ``InvalidArgumentError`` when ``raw`` is not a ``SendRequest``."""
    def request_counts(self) -> list[tuple[str, int, int]]:
        """``(method, answered, declined)`` for each gRPC method the data plane may
        answer: requests it answered itself, and requests it passed to Python."""
    def close(self) -> None: ...

def native_rocketmq_status_codes() -> dict[str, int]:
    """The native data plane's ``apache.rocketmq.v2`` code for each ``rmq.errors``
    engine class."""

def native_rocketmq_system_properties() -> list[str]:
    """The property names both v2 paths refuse as user properties."""

def native_status_codes() -> dict[str, int]:
    """The native data plane's status code for each ``rmq.errors`` engine class."""
