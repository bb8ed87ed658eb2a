"""The future ``Producer.send`` returns: one small object per message, resolved a batch at
a time.

``concurrent.futures.Future`` builds a condition variable per instance and takes it on every
state change; at the rate a producer sends, that bookkeeping cost more than the rest of
``send``. Here the waiting, the error and the broker's answer belong to the batch, and a
message's future is only its batch and its position in it. ``SendResult`` objects are made
when asked for. The methods are those of ``concurrent.futures.Future`` that make sense for a
send (a send cannot be cancelled once queued); ``concurrent.futures.wait`` and
``as_completed`` need real ``Future`` objects and do not accept these.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from rmq.client.messages import SendResult
from rmq.proto.v1 import broker_pb2 as pb


class BatchOutcome:
    """How one batch ended, shared by the futures of its messages. Thread-safe."""

    __slots__ = ("_callbacks", "_done", "_error", "_lock", "_response", "queue_id", "topic")

    def __init__(self, topic: str, queue_id: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self._lock = threading.Lock()
        self._done: threading.Event | None = None
        self._callbacks: list[tuple[SendFuture, Callable[[SendFuture], object]]] = []
        self._response: pb.SendResponse | None = None
        self._error: BaseException | None = None

    @property
    def finished(self) -> bool:
        return self._response is not None or self._error is not None

    def finish(self, response: pb.SendResponse | None, error: BaseException | None) -> None:
        """Resolve every future of the batch (exactly one of the two is given)."""
        with self._lock:
            self._response, self._error = response, error
            callbacks, self._callbacks = self._callbacks, []
            done = self._done
        if done is not None:
            done.set()
        for future, callback in callbacks:
            try:
                callback(future)
            except Exception:  # as concurrent.futures does: a failing callback harms no other
                _log_failed_callback(callback)

    def wait(self, timeout: float | None) -> bool:
        with self._lock:
            if self.finished:
                return True
            if self._done is None:
                self._done = threading.Event()
            done = self._done
        return done.wait(timeout)

    def add_callback(self, future: SendFuture, callback: Callable[[SendFuture], object]) -> None:
        with self._lock:
            if not self.finished:
                self._callbacks.append((future, callback))
                return
        _call(callback, future)

    def error(self) -> BaseException | None:
        return self._error

    def result_at(self, index: int) -> SendResult:
        response = self._response
        assert response is not None, "result_at before the batch finished"
        return SendResult(
            topic=self.topic,
            queue_id=self.queue_id,
            queue_offset=response.queue_offsets[index],
            msg_id=response.msg_ids[index],
            commitlog_offset=response.commitlog_offsets[index],
            store_timestamp=response.store_timestamps[index],
        )


def _call(callback: Callable[[SendFuture], object], future: SendFuture) -> None:
    try:
        callback(future)
    except Exception:  # as concurrent.futures does: a failing callback harms no other
        _log_failed_callback(callback)


def _log_failed_callback(callback: Callable[[SendFuture], object]) -> None:
    """Called from an ``except`` block: logs the exception being handled."""
    import logging

    logging.getLogger(__name__).exception("send callback %r failed", callback)


class SendFuture:
    """The pending result of one ``Producer.send``."""

    __slots__ = ("_batch", "_index")

    def __init__(self, batch: BatchOutcome, index: int) -> None:
        self._batch = batch
        self._index = index

    def done(self) -> bool:
        return self._batch.finished

    def running(self) -> bool:
        return not self._batch.finished

    def cancel(self) -> bool:
        """A queued send cannot be taken back: always False."""
        return False

    def cancelled(self) -> bool:
        return False

    def result(self, timeout: float | None = None) -> SendResult:
        """Where the broker stored the message; raises what the send failed with, or
        ``TimeoutError`` if ``timeout`` seconds pass first."""
        if not self._batch.wait(timeout):
            raise TimeoutError(f"no answer from the broker within {timeout} s")
        error = self._batch.error()
        if error is not None:
            raise error
        return self._batch.result_at(self._index)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self._batch.wait(timeout):
            raise TimeoutError(f"no answer from the broker within {timeout} s")
        return self._batch.error()

    def add_done_callback(self, callback: Callable[[SendFuture], object]) -> None:
        """Call ``callback(future)`` once the send has a result (at once if it has)."""
        self._batch.add_callback(self, callback)

    def __repr__(self) -> str:
        state = "finished" if self._batch.finished else "pending"
        return f"<SendFuture {self._batch.topic}/{self._batch.queue_id} #{self._index} {state}>"
