"""The ports a broker listens on: which port each process gets, and whether it can listen
there, so that ``rmq serve`` says which port is taken before it starts anything.

The supervisor listens on ``--port``. Shard process ``i`` (0-based) listens on the
``i``-th port of ``--shard-ports`` when given, else on ``--port + 1 + i`` (or on any free
port when ``--port`` is 0).
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Sequence
from dataclasses import dataclass

MAX_PORT = 65535


@dataclass(frozen=True, slots=True)
class Plan:
    """How the ports of one broker are chosen."""

    host: str
    port: int
    processes: int
    shard_ports: Sequence[int] | None = None

    def shard_port(self, index: int) -> int:
        if self.shard_ports is not None:
            return self.shard_ports[index]
        return 0 if self.port == 0 else self.port + 1 + index

    def owner(self, process: int | None) -> str:
        """Who listens on a port, and how its number was chosen (``None``: the supervisor)."""
        if process is None:
            return f"the supervisor's port (--port {self.port})"
        port = self.shard_port(process)
        if self.shard_ports is not None:
            return f"the port of shard process {process} (number {process + 1} of --shard-ports)"
        rule = (
            "the shard process listens on --port+1"
            if self.processes == 1
            else f"shard processes listen on --port+1 to --port+{self.processes}"
        )
        return (
            f"the port of shard process {process} "
            f"(--port {self.port} + {process + 1} = {port}; {rule})"
        )

    def advice(self, process: int | None) -> str:
        if process is None:
            return "choose a free port with --port (0: any free port), or stop what uses it"
        if self.shard_ports is not None:
            return "choose free ports with --shard-ports, or stop what uses it"
        following = "port is" if self.processes == 1 else f"{self.processes} ports are"
        return (
            f"choose a --port whose next {following} free as well, give the shard ports "
            "with --shard-ports, or stop what uses it"
        )

    def problem(self, process: int | None, port: int, reason: str) -> str:
        """One line: which port, whose, why, and what to do."""
        return (
            f"cannot listen on {address(self.host, port)}: {reason}; it is "
            f"{self.owner(process)}; {self.advice(process)}"
        )

    def check(self) -> str | None:
        """The first port the broker could not listen on right now, as :meth:`problem`
        describes it; None when every port is free (port 0 is always free)."""
        wanted: list[tuple[int | None, int]] = [(None, self.port)]
        wanted += [(index, self.shard_port(index)) for index in range(self.processes)]
        seen: dict[int, int | None] = {}
        for process, port in wanted:
            if port == 0:
                continue
            if port in seen:
                return (
                    f"port {port} is both {self.owner(seen[port])} and {self.owner(process)}; "
                    "each process needs a port of its own"
                )
            seen[port] = process
            reason = bind_problem(self.host, port)
            if reason is not None:
                return self.problem(process, port, reason)
        return None


def address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind_problem(host: str, port: int) -> str | None:
    """Why a server cannot listen on ``host:port`` now, or None when it can.

    Binds a listening socket with ``SO_REUSEADDR``, as gRPC does, on each address ``host``
    resolves to, and closes it again; like gRPC, one address that works is enough.
    """
    if not 0 <= port <= MAX_PORT:
        return f"{port} is not a TCP port (0 to {MAX_PORT})"
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        return f"the host {host!r} does not resolve ({error.strerror})"
    reasons: list[str] = []
    for family, kind, protocol, _, socket_address in addresses:
        try:
            with socket.socket(family, kind, protocol) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(socket_address)
                probe.listen()
        except OSError as error:
            reasons.append(_reason(error))
            continue
        return None
    return reasons[0] if reasons else f"the host {host!r} has no address"


def _reason(error: OSError) -> str:
    if error.errno == errno.EADDRINUSE:
        return "the port is already in use"
    if error.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges)"
    if error.errno == errno.EADDRNOTAVAIL:
        return "the address is not one of this machine's"
    return error.strerror or str(error)
