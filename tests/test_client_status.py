"""The client's one table from a broker's gRPC status to an exception
(``rmq._rmqcore.broker_error``, crates/rmqcore-py/src/errors.rs), through which both a
failed call (``rmq.client.status``) and a batch the shard refused to the producer's core
become exceptions: the same class and the same status either way."""

from __future__ import annotations

import grpc
import pytest
from rmq import errors
from rmq.client import Client
from rmq.client.status import from_status, is_retryable

from tests.support.brokers import Brokers

# What the table gave when it lived in rmq/client/status.py, code by code.
EXPECTED: dict[grpc.StatusCode, type[errors.BrokerError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: errors.BrokerInvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: errors.BrokerNotFoundError,
    grpc.StatusCode.OUT_OF_RANGE: errors.BrokerOutOfRangeError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: errors.BrokerResourceExhaustedError,
    grpc.StatusCode.DATA_LOSS: errors.BrokerDataLossError,
    grpc.StatusCode.UNAVAILABLE: errors.BrokerUnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: errors.BrokerUnavailableError,
    grpc.StatusCode.FAILED_PRECONDITION: errors.StaleRouteError,
    grpc.StatusCode.UNAUTHENTICATED: errors.AuthenticationError,
    grpc.StatusCode.PERMISSION_DENIED: errors.AuthenticationError,
}


@pytest.mark.parametrize("code", list(grpc.StatusCode), ids=lambda code: code.name)
def test_every_status_code_gets_its_class_and_keeps_its_code(code: grpc.StatusCode) -> None:
    error = from_status(code.value[0], "why", "send to t/0")
    assert type(error) is EXPECTED.get(code, errors.BrokerError)
    assert error.code is code and str(error).endswith("send to t/0: why")


def test_an_unknown_number_is_a_plain_broker_error_with_unknown() -> None:
    error = from_status(99, "odd")
    assert type(error) is errors.BrokerError and error.code is grpc.StatusCode.UNKNOWN


def test_the_retryable_codes_are_the_transient_ones() -> None:
    transient = {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.FAILED_PRECONDITION,
    }
    assert transient == {code for code in grpc.StatusCode if is_retryable(code)}


def test_a_refused_send_raises_the_tables_class_with_the_status(brokers: Brokers) -> None:
    """An empty tag is refused by the shard with INVALID_ARGUMENT, inside a SendBatches
    answer: the future raises what a failed call with that status would."""
    client: Client = brokers.client(brokers.start(shards=1))
    client.create_topic("refused", queues=1)
    with client.producer() as producer:
        future = producer.send("refused", b"x", tags="")
        error = future.exception(timeout=30)
    assert type(error) is errors.BrokerInvalidArgumentError, error
    assert error.code is grpc.StatusCode.INVALID_ARGUMENT
    assert str(error).startswith("send to refused/0: ")
    with pytest.raises(errors.BrokerInvalidArgumentError):
        future.result()
