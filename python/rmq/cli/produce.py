"""``rmq produce``: send messages from stdin, or generated load, with a progress bar."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Iterator

from tqdm import tqdm

from rmq.client import Producer, SendBatchFuture, SendFuture
from rmq.client.batch_limits import within_batch_limits
from rmq.client.connect import add_connection_arguments, client_from_args
from rmq.errors import RmqError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "produce",
        help="send messages from stdin or generated load",
        description="Send messages to TOPIC through the broker. Without --count, each line "
        "of stdin is one message body (without its newline). With --count N, sends N "
        "generated messages of --size bytes, a batch of up to --batch-messages and "
        "--batch-bytes per request. Prints a progress bar and a summary (msgs/s, MB/s) on "
        "stderr; exits 1 if any message was not stored.",
    )
    parser.add_argument("topic")
    parser.add_argument("--count", type=int, help="send this many generated messages")
    parser.add_argument(
        "--size", type=int, default=100, help="body size of generated messages (default: 100)"
    )
    parser.add_argument("--tags", help="tag of every message")
    parser.add_argument(
        "--keys", action="store_true", help="give each message the key KEY-PREFIX<index>"
    )
    parser.add_argument("--key-prefix", default="key-", help="prefix of --keys (default: key-)")
    parser.add_argument(
        "--sharding-key",
        help="send every message to the queue this key maps to (keeps their order)",
    )
    parser.add_argument(
        "--batch-messages", type=int, default=2048, help="messages per batch (default: 2048)"
    )
    parser.add_argument(
        "--batch-bytes", type=int, default=1 << 20, help="bytes per batch (default: 1 MiB)"
    )
    parser.add_argument(
        "--linger-ms", type=float, default=5.0, help="wait for a batch to fill (default: 5)"
    )
    parser.add_argument(
        "--buffer-bytes",
        type=int,
        default=1 << 20,
        help="bytes sent and not yet answered before sending waits; bounds latency "
        "(default: 1 MiB)",
    )
    parser.add_argument(
        "--buffer-messages",
        type=int,
        default=2048,
        help="messages sent and not yet answered before sending waits (default: 2048)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_connection_arguments(parser)
    parser.set_defaults(func=run)


def _generated(count: int, size: int) -> Iterator[bytes]:
    filler = os.urandom(max(size, 16))
    for index in range(count):
        prefix = index.to_bytes(8, "big")
        yield (prefix + filler)[:size] if size >= 8 else prefix[-size:] if size else b""


def _stdin_lines() -> Iterator[bytes]:
    for line in sys.stdin.buffer:
        yield line.rstrip(b"\n")


class _Tally:
    """Results as they come back from the producer's threads: the progress bar and the
    failures, under one lock."""

    def __init__(self, bar: tqdm) -> None:  # type: ignore[type-arg]
        self.bar = bar
        self.failures: list[BaseException] = []
        self.failed = 0
        self.lock = threading.Lock()

    def one(self, future: SendFuture) -> None:
        self.settle(future.exception(), 1)

    def batch(self, future: SendBatchFuture) -> None:
        self.settle(future.exception(), len(future))

    def settle(self, error: BaseException | None, count: int) -> None:
        with self.lock:
            if error is not None:
                self.failures.append(error)
                self.failed += count
            self.bar.update(count)


def _send_each(producer: Producer, args: argparse.Namespace, tally: _Tally) -> tuple[int, int]:
    """Stdin, a line at a time: each line leaves within ``--linger-ms`` of being read, so
    a slow pipe is never held back waiting for a batch to fill."""
    count = sent_bytes = 0
    for body in _stdin_lines():
        key = [f"{args.key_prefix}{count}"] if args.keys else None
        future = producer.send(
            args.topic, body, tags=args.tags, keys=key, sharding_key=args.sharding_key
        )
        future.add_done_callback(tally.one)
        sent_bytes += len(body)
        count += 1
    return count, sent_bytes


def _send_generated(producer: Producer, args: argparse.Namespace, tally: _Tally) -> tuple[int, int]:
    """Generated load, a whole batch per call (``send_batch``): one crossing into the
    producer's core and one future per batch rather than per message."""
    count = sent_bytes = 0
    bodies = _generated(args.count, args.size)
    for batch in within_batch_limits(bodies, len, args.batch_messages, args.batch_bytes):
        keys = [f"{args.key_prefix}{count + i}" for i in range(len(batch))] if args.keys else None
        future = producer.send_batch(
            args.topic, batch, tags=args.tags, keys=keys, sharding_key=args.sharding_key
        )
        future.add_done_callback(tally.batch)
        sent_bytes += sum(map(len, batch))
        count += len(batch)
    return count, sent_bytes


def run(args: argparse.Namespace) -> int:
    if args.count is not None and args.size + Producer.MESSAGE_OVERHEAD > args.batch_bytes:
        print(
            f"rmq produce: a message of --size {args.size} counts "
            f"{args.size + Producer.MESSAGE_OVERHEAD} bytes against --batch-bytes "
            f"{args.batch_bytes}; raise --batch-bytes",
            file=sys.stderr,
        )
        return 2
    bar = tqdm(
        total=args.count, unit="msg", unit_scale=True, disable=args.no_progress, file=sys.stderr
    )
    tally = _Tally(bar)
    send = _send_generated if args.count is not None else _send_each
    started = time.monotonic()
    try:
        with client_from_args(args) as client:
            producer = client.producer(
                batch_max_messages=args.batch_messages,
                batch_max_bytes=args.batch_bytes,
                linger_ms=args.linger_ms,
                max_buffered_bytes=args.buffer_bytes,
                max_buffered_messages=args.buffer_messages,
            )
            try:
                count, sent_bytes = send(producer, args, tally)
            finally:
                producer.close()
    except RmqError as error:
        bar.close()
        print(f"rmq produce: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        bar.close()
        print("rmq produce: interrupted", file=sys.stderr)
        return 130
    bar.close()
    elapsed = max(time.monotonic() - started, 1e-9)
    stored = count - tally.failed
    print(
        f"stored {stored} of {count} messages ({sent_bytes / 1e6:.1f} MB body) in "
        f"{elapsed:.2f} s: {stored / elapsed:,.0f} msgs/s, {sent_bytes / 1e6 / elapsed:.1f} MB/s",
        file=sys.stderr,
    )
    if tally.failures:
        print(f"first failure: {tally.failures[0]}", file=sys.stderr)
        return 1
    return 0
