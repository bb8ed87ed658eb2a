"""Errors that only the broker raises; they sit under ``rmq.errors.RmqError`` too."""

from __future__ import annotations

from rmq.errors import RmqError


class QueueNotHostedError(RmqError):
    """The queue exists but another shard process serves it: the client's route is stale."""


class QueueOutOfRangeError(RmqError):
    """The queue id is not one of the topic's queues."""


class UnimplementedError(RmqError):
    """The engine this shard runs does not offer the operation yet."""


class UnauthenticatedError(RmqError):
    """The request lacks the broker's token, or carries a wrong one."""
