"""How a client proves itself and checks the server: :class:`Credentials`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Credentials:
    """How a client proves itself and checks the server.

    ``tls_root_cert`` (PEM) turns TLS on; ``server_name`` overrides the name checked in
    the server's certificate (useful when connecting by IP address).
    """

    token: str | None = None
    tls: bool = False
    tls_root_cert: bytes | None = None
    server_name: str | None = None

    @property
    def uses_tls(self) -> bool:
        return self.tls or self.tls_root_cert is not None

    @property
    def metadata(self) -> Sequence[tuple[str, str]]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()
