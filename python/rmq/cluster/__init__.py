"""The broker's processes: the supervisor and its shard processes (no RPC code here
beyond starting servers built by :mod:`rmq.broker`)."""

from rmq.cluster.config import ServeConfig
from rmq.cluster.front_doors import StartError
from rmq.cluster.supervisor import Supervisor, serve

__all__ = ["ServeConfig", "StartError", "Supervisor", "serve"]
