"""``rmq consume``: read a topic with a consumer group and write messages to stdout."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import textwrap
import time

from rmq._rmqcore import ReceivedMessage
from rmq.cli.output_format import (
    FORMATS,
    OLD_NAMES,
    FormatError,
    FormatString,
    Render,
    default_format,
    help_text,
    renderer,
)
from rmq.client.connect import add_connection_arguments, client_from_args
from rmq.client.consumer import Consumer
from rmq.errors import RmqError


def _format_string(text: str) -> FormatString:
    try:
        return FormatString(text)
    except FormatError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "consume",
        help="read messages of a topic to stdout",
        description=textwrap.fill(
            "Consume TOPIC as consumer group --group from every queue, writing each "
            "message to stdout, and commit the group's offsets after each write (at least "
            "once: a restarted consumer resumes after the last committed message). Runs "
            "until --count messages, --idle-timeout seconds without messages, or Ctrl-C. "
            "Warnings and errors (such as a damaged record the consumer skipped) go to "
            "stderr, and at the end a line says how many damaged records were skipped.",
            88,
            break_on_hyphens=False,
        ),
        epilog=help_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topic")
    parser.add_argument("--group", required=True, help="consumer group name")
    parser.add_argument("--count", type=int, help="stop after this many messages")
    parser.add_argument(
        "--idle-timeout", type=float, help="stop after this many seconds without a message"
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument(
        "--format",
        choices=[*FORMATS, *OLD_NAMES],
        metavar="{" + ",".join(FORMATS) + "}",
        help="how each message is written (see below; default: text on a terminal, raw "
        "into a pipe or a file)",
    )
    output.add_argument(
        "--format-string",
        type=_format_string,
        metavar="TEMPLATE",
        help="write TEMPLATE for each message, e.g. '{queue_id}:{queue_offset} {body}\\n' "
        "(placeholders below)",
    )
    parser.add_argument(
        "--from",
        dest="start",
        choices=["earliest", "latest"],
        default="earliest",
        help="where a group without committed offsets starts (default: earliest)",
    )
    parser.add_argument("--tags", nargs="+", help="only messages with one of these tags")
    parser.add_argument("--no-commit", action="store_true", help="do not commit offsets")
    add_connection_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Only here, in the command: the client's warnings and errors (a damaged record
    # skipped, an offset reset) reach the user on stderr.
    logging.basicConfig(
        level=logging.WARNING, format="rmq consume: %(levelname)s %(name)s: %(message)s"
    )
    render = args.format_string or renderer(args.format or default_format(sys.stdout))
    consumer: Consumer | None = None
    try:
        with client_from_args(args) as client:
            consumer = client.consumer(args.group, args.topic, start=args.start, tags=args.tags)
            try:
                seen = _consume(args, consumer, render)
            finally:
                consumer.close()
    except RmqError as error:
        print(f"rmq consume: {error}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        # The reader went away (| head): not an error; nothing more can be written.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    else:
        print(f"consumed {seen} messages", file=sys.stderr)
        code = 0
    _report_skipped(consumer)
    return code


def _consume(args: argparse.Namespace, consumer: Consumer, render: Render) -> int:
    """Write messages until --count or --idle-timeout; returns how many were written."""
    out = sys.stdout.buffer
    seen = 0
    last_message = time.monotonic()
    while args.count is None or seen < args.count:
        messages = consumer.poll(timeout=1.0)
        if not messages:
            idle = time.monotonic() - last_message
            if args.idle_timeout is not None and idle >= args.idle_timeout:
                break
            continue
        last_message = time.monotonic()
        if args.count is not None:
            messages = messages[: args.count - seen]
        out.write(b"".join(render(message) for message in messages))
        out.flush()
        seen += len(messages)
        if not args.no_commit:
            _commit_through(consumer, messages)
    return seen


def _report_skipped(consumer: Consumer | None) -> None:
    """One line when the consumer skipped damaged records (their errors were logged)."""
    skipped = getattr(consumer, "corrupt_skipped", 0) or 0
    if skipped:
        records = "record" if skipped == 1 else "records"
        print(
            f"rmq consume: skipped {skipped} damaged {records} that could not be read "
            "(see the errors above)",
            file=sys.stderr,
        )


def _commit_through(consumer: Consumer, messages: list[ReceivedMessage]) -> None:
    """Commit exactly the messages written (a --count cut may leave some unwritten)."""
    last: dict[int, int] = {}
    for message in messages:
        last[message.queue_id] = message.queue_offset + 1
    positions = consumer.positions()
    for queue_id, offset in last.items():
        if positions.get(queue_id) != offset:
            consumer.seek(queue_id, offset)
    consumer.commit()
