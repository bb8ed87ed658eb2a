"""How ``rmq consume`` writes a message: the ``--format`` names and ``--format-string``.

Every renderer turns one message into the bytes written for it, separator included.
"""

from __future__ import annotations

import base64
import json
import textwrap
from collections.abc import Callable
from typing import Protocol

from rmq._rmqcore import ReceivedMessage

Render = Callable[[ReceivedMessage], bytes]

# Characters a terminal acts on instead of showing: the C0 controls but tab and newline,
# DEL, and the C1 controls (U+0080 to U+009F; some terminals take U+009B as an escape).
_CONTROLS = [*range(0x20), 0x7F, *range(0x80, 0xA0)]
_VISIBLE = {code: f"\\x{code:02x}" for code in _CONTROLS if code not in (0x09, 0x0A)}


def body_text(body: bytes) -> str:
    """The body as text a terminal shows safely: UTF-8, with U+FFFD for bytes that are
    not, and control characters (but tab and newline) written as ``\\xNN``."""
    return body.decode("utf-8", errors="replace").translate(_VISIBLE)


def as_json(message: ReceivedMessage, *, always_base64: bool = False) -> str:
    """One JSON object: the body as ``body`` when it is valid UTF-8 (and not
    ``always_base64``), else as ``body_base64``."""
    record: dict[str, object] = {
        "topic": message.topic,
        "queue_id": message.queue_id,
        "queue_offset": message.queue_offset,
        "msg_id": message.msg_id,
        "tags": message.tags,
        "keys": list(message.keys),
        "properties": message.properties,
        "store_timestamp": message.store_timestamp,
        "born_timestamp": message.born_timestamp,
    }
    text = None if always_base64 else _utf8_or_none(message.body)
    if text is None:
        record["body_base64"] = base64.b64encode(message.body).decode()
    else:
        record["body"] = text
    return json.dumps(record)


def _utf8_or_none(body: bytes) -> str | None:
    try:
        return body.decode()
    except UnicodeDecodeError:
        return None


def _raw(message: ReceivedMessage) -> bytes:
    return message.body + b"\n"


def _text(message: ReceivedMessage) -> bytes:
    return body_text(message.body).encode() + b"\n"


def _json(message: ReceivedMessage) -> bytes:
    return as_json(message).encode() + b"\n"


def _json_base64(message: ReceivedMessage) -> bytes:
    return as_json(message, always_base64=True).encode() + b"\n"


# name: (renderer, what it writes)
FORMATS: dict[str, tuple[Render, str]] = {
    "raw": (_raw, "the body's bytes as stored, then a newline (for pipes and files)"),
    "text": (
        _text,
        "the body as UTF-8 text, then a newline: bytes that are not UTF-8 show as U+FFFD, "
        "control characters but tab and newline as \\xNN, so a terminal stays sane",
    ),
    "json": (
        _json,
        "one JSON object per line: topic, queue_id, queue_offset, msg_id, tags, keys, "
        "properties, store_timestamp, born_timestamp, and the body as text in body when it "
        "is valid UTF-8, else in base64 in body_base64",
    ),
    "json-base64": (_json_base64, "json, with the body always in base64 in body_base64"),
}
# Earlier names, still accepted.
OLD_NAMES = {"body": "raw"}


class _Terminal(Protocol):
    def isatty(self) -> bool: ...


def default_format(stdout: _Terminal) -> str:
    """``text`` when stdout is a terminal, ``raw`` when it is a pipe or a file."""
    return "text" if stdout.isatty() else "raw"


def renderer(name: str) -> Render:
    return FORMATS[OLD_NAMES.get(name, name)][0]


def _utf8(text: str) -> bytes:
    return text.encode()


# --format-string placeholders: name: (value as bytes, what it is)
PLACEHOLDERS: dict[str, tuple[Render, str]] = {
    "topic": (lambda m: _utf8(m.topic), "topic"),
    "queue_id": (lambda m: b"%d" % m.queue_id, "queue id"),
    "queue_offset": (lambda m: b"%d" % m.queue_offset, "offset in its queue"),
    "msg_id": (lambda m: _utf8(m.msg_id), "msgId"),
    "tags": (lambda m: _utf8(m.tags or ""), "tags (empty when none)"),
    "keys": (lambda m: _utf8(" ".join(m.keys)), "keys, separated by spaces"),
    "properties": (
        lambda m: _utf8(json.dumps(m.properties, sort_keys=True)),
        "properties as a JSON object",
    ),
    "store_timestamp": (lambda m: b"%d" % m.store_timestamp, "store time, ms since 1970"),
    "born_timestamp": (lambda m: b"%d" % m.born_timestamp, "time the producer made it, ms"),
    "body_size": (lambda m: b"%d" % len(m.body), "body length in bytes"),
    "body": (lambda m: m.body, "the body's bytes as stored"),
    "body_text": (lambda m: _utf8(body_text(m.body)), "the body as --format text shows it"),
    "body_base64": (lambda m: base64.b64encode(m.body), "the body in base64"),
}
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\"}


class FormatError(ValueError):
    """A --format-string that cannot be used; the message says where and why."""


class FormatString:
    """A ``--format-string`` template: text with ``{placeholder}`` fields, ``{{`` and
    ``}}`` for braces and backslash escapes (``\\n \\t \\r \\0 \\\\``); nothing is added
    after it, so a template usually ends with ``\\n``."""

    def __init__(self, template: str) -> None:
        self.template = template
        self._parts: list[bytes | Render] = []
        literal: list[str] = []

        def end_literal() -> None:
            if literal:
                # surrogateescape: bytes of the command line that are not UTF-8 come back.
                self._parts.append("".join(literal).encode("utf-8", "surrogateescape"))
                literal.clear()

        position = 0
        while position < len(template):
            char = template[position]
            pair = template[position : position + 2]
            if char == "\\":
                if len(pair) < 2 or pair[1] not in ESCAPES:
                    what = f"unknown escape {pair}" if len(pair) == 2 else "a lone \\ ends it"
                    known = " ".join("\\" + escape for escape in ESCAPES)
                    raise FormatError(f"{what} (position {position}); escapes: {known}")
                literal.append(ESCAPES[pair[1]])
                position += 2
            elif pair in ("{{", "}}"):
                literal.append(char)
                position += 2
            elif char == "{":
                end = template.find("}", position)
                if end < 0:
                    raise FormatError(
                        f"'{{' at position {position} is not closed (write {{{{ for a brace)"
                    )
                name = template[position + 1 : end]
                if name not in PLACEHOLDERS:
                    known = " ".join(f"{{{known}}}" for known in PLACEHOLDERS)
                    raise FormatError(f"unknown placeholder {{{name}}}; known: {known}")
                end_literal()
                self._parts.append(PLACEHOLDERS[name][0])
                position = end + 1
            elif char == "}":
                raise FormatError(
                    f"'}}' at position {position} closes nothing (write }}}} for a brace)"
                )
            else:
                literal.append(char)
                position += 1
        end_literal()

    def __call__(self, message: ReceivedMessage) -> bytes:
        return b"".join(part if isinstance(part, bytes) else part(message) for part in self._parts)


def help_text(width: int = 88) -> str:
    """The formats and placeholders, for ``rmq consume --help``."""

    def entry(name: str, what: str, column: int) -> str:
        return textwrap.fill(
            what,
            width,
            initial_indent=f"  {name}".ljust(column),
            subsequent_indent=" " * column,
            break_on_hyphens=False,
        )

    def paragraph(text: str) -> str:
        return textwrap.fill(
            text, width, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False
        )

    lines = ["output formats (--format NAME):"]
    lines += [entry(name, what, 15) for name, (_, what) in FORMATS.items()]
    lines += [
        paragraph(
            "Without --format and --format-string: text when stdout is a terminal, raw when "
            "it is a pipe or a file. body is the old name of raw."
        ),
        "",
        textwrap.fill(
            "--format-string TEMPLATE (instead of --format; like kcat -f) writes TEMPLATE "
            "for each message with its placeholders filled in, and nothing after it: end "
            "TEMPLATE with \\n for one line per message. Placeholders:",
            width,
            break_on_hyphens=False,
        ),
    ]
    lines += [entry(f"{{{name}}}", what, 20) for name, (_, what) in PLACEHOLDERS.items()]
    lines += [
        paragraph(
            "Escapes: \\n newline, \\t tab, \\r carriage return, \\0 NUL, \\\\ backslash; "
            "{{ and }} are braces. An unknown placeholder or escape is an error."
        ),
        "  Example: --format-string '{queue_id}:{queue_offset} {tags} {body_text}\\n'",
    ]
    return "\n".join(lines)
