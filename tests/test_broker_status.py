"""The one table from exceptions to gRPC status codes."""

from __future__ import annotations

import grpc
import pytest
from rmq import errors
from rmq.broker.status import STATUS_BY_ERROR, status_for
from rmq.errors import (
    QueueNotHostedError,
    QueueOutOfRangeError,
    UnauthenticatedError,
    UnimplementedError,
)

EXPECTED = [
    (errors.InvalidArgumentError("bad topic", "topic"), grpc.StatusCode.INVALID_ARGUMENT),
    (errors.NotFoundError("no topic"), grpc.StatusCode.NOT_FOUND),
    (errors.OffsetOutOfRangeError("past end", 9, 0, 3), grpc.StatusCode.OUT_OF_RANGE),
    (QueueOutOfRangeError("queue 9"), grpc.StatusCode.OUT_OF_RANGE),
    (errors.DiskFullError("full", "/d", 0.97, 0.95), grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.CorruptRecordError("crc", "/f", 12, "crc"), grpc.StatusCode.DATA_LOSS),
    (errors.StoreClosedError("closed"), grpc.StatusCode.UNAVAILABLE),
    (errors.FlushFailedError("EIO"), grpc.StatusCode.UNAVAILABLE),
    (errors.TierError("down", "s3://b/p", "refused", True), grpc.StatusCode.UNAVAILABLE),
    (errors.TierObjectChangedError("gone", "s3://b/p/o", 0, "gone"), grpc.StatusCode.DATA_LOSS),
    (errors.StoreLockedError("locked"), grpc.StatusCode.FAILED_PRECONDITION),
    (errors.ReadOnlyError("read only"), grpc.StatusCode.FAILED_PRECONDITION),
    (QueueNotHostedError("elsewhere"), grpc.StatusCode.FAILED_PRECONDITION),
    (UnimplementedError("later"), grpc.StatusCode.UNIMPLEMENTED),
    (UnauthenticatedError("token"), grpc.StatusCode.UNAUTHENTICATED),
    (errors.RmqError("other"), grpc.StatusCode.INTERNAL),
]


@pytest.mark.parametrize(("error", "code"), EXPECTED, ids=lambda v: type(v).__name__)
def test_each_error_class_gets_its_status_and_keeps_its_message(
    error: BaseException, code: grpc.StatusCode
) -> None:
    assert status_for(error) == (code, str(error))


def test_every_error_class_of_rmq_errors_is_in_the_table() -> None:
    classes = [getattr(errors, name) for name in errors.__all__]
    assert set(classes) <= set(STATUS_BY_ERROR)


def test_a_subclass_gets_its_nearest_listed_ancestor() -> None:
    class TornTail(errors.CorruptRecordError):
        pass

    assert status_for(TornTail("torn"))[0] is grpc.StatusCode.DATA_LOSS


def test_an_unexpected_exception_is_internal_and_names_its_type() -> None:
    code, message = status_for(KeyError("boom"))
    assert code is grpc.StatusCode.INTERNAL
    assert "KeyError" in message
