"""The Language Server Protocol's framing for any bytes at all: `Content-Length` headers, a
blank line, then a JSON body. A body over `MAX_MESSAGE_BYTES` is read past without being kept,
so the next frame (a `shutdown`, say) is still found; a body that is not JSON, nests too deep
or holds a number too long to be an id becomes a `ParseError` instead of an exception.

pygls' own reader (`pygls.io_.run_async`) reads a body of any length into memory and converts
the header's digits with `int()` outside its error handling (a 5,000-digit length ends the
server); `shardc lsp` reads frames here and hands pygls parsed messages.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, BinaryIO

from shardc.lang.input_limits import MAX_SOURCE_BYTES

MAX_MESSAGE_BYTES = 2 * MAX_SOURCE_BYTES + 65536
"""One message's body: twice the source limit, room for a document at the limit with its JSON
escapes."""
MAX_HEADER_LINE = 8192
"""A header line is read up to this many bytes; the rest of a longer one is read as another."""
MAX_NUMBER_DIGITS = 20
"""An integer in a message with more digits than this (an LSP integer has at most 10) is kept
as a `LongNumber`, never converted: Python refuses to convert 4,300 digits or more."""
_CHUNK = 1 << 16
_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([^\r\n]*)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Oversize:
    """A frame whose body (`length` bytes) was over `MAX_MESSAGE_BYTES` and was skipped."""

    length: int


@dataclass(frozen=True, slots=True)
class ParseError:
    """A body that is not a JSON message; `reason` says why (for the -32700 error)."""

    reason: str


@dataclass(frozen=True, slots=True)
class LongNumber:
    """An integer literal too long to be an LSP integer (its first digits, for messages)."""

    head: str


def read_frame(stream: BinaryIO) -> bytes | Oversize | None:
    """The next frame's body, `Oversize` for one past the cap, None at the end of the stream.

    Headers are read line by line; the `Content-Length` header is found anywhere in a line
    (case-insensitively), so garbage before it does not lose the frame. A header block with no
    usable length (missing, not digits, more digits than any real length) is dropped and
    reading goes on with the next line.
    """
    length: int | None = None
    while True:
        line = stream.readline(MAX_HEADER_LINE)
        if not line:
            return None
        if not line.strip():
            if length is None:
                continue
            break
        found = _LENGTH.findall(line)
        if found:
            digits = found[-1].strip()
            length = int(digits) if digits.isdigit() and len(digits) <= 15 else None
    assert length is not None
    if length > MAX_MESSAGE_BYTES:
        left = length
        while left > 0:
            got = stream.read(min(left, _CHUNK))
            if not got:
                return None
            left -= len(got)
        return Oversize(length)
    body = stream.read(length)
    if len(body) < length:
        return None
    return body


class FdReader:
    """`readline(limit)` and `read(n)` straight from a file descriptor, so that the reader
    thread holds no lock of `sys.stdin` when the interpreter ends."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buf = fd, bytearray()

    def _fill(self, want: int) -> bool:
        chunk = os.read(self.fd, max(want, 1 << 16))
        self.buf += chunk
        return bool(chunk)

    def readline(self, limit: int) -> bytes:
        while self.buf.find(b"\n", 0, limit) < 0 and len(self.buf) < limit and self._fill(0):
            pass
        end = self.buf.find(b"\n", 0, limit)
        n = min(limit, len(self.buf)) if end < 0 else end + 1
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def read(self, n: int) -> bytes:
        while len(self.buf) < n and self._fill(n - len(self.buf)):
            pass
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


def _int(text: str) -> int | LongNumber:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        return LongNumber(text[:24])
    return int(text)


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode(body: bytes) -> Any:
    """The JSON value of a body, or `ParseError`: never an exception. Nesting deeper than the
    interpreter's recursion limit, invalid UTF-8, NaN/Infinity and any other malformed JSON are
    parse errors; long integers become `LongNumber`s.

    >>> decode(b'{"id": 1}')
    {'id': 1}
    >>> decode(b"[" * 100000)
    ParseError(reason='nested too deeply')
    """
    try:
        text = body.decode("utf-8")
        return json.loads(text, parse_int=_int, parse_constant=_constant)
    except RecursionError:
        return ParseError("nested too deeply")
    except UnicodeDecodeError:
        return ParseError("the body is not UTF-8")
    except (ValueError, TypeError) as exc:
        return ParseError(f"not JSON: {str(exc)[:120]}")


def encode(message: dict[str, Any]) -> bytes:
    """One frame holding `message` (ASCII JSON, so its length in bytes is its length)."""
    body = json.dumps(message, ensure_ascii=True).encode("ascii")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


__all__ = [
    "MAX_MESSAGE_BYTES",
    "FdReader",
    "LongNumber",
    "Oversize",
    "ParseError",
    "decode",
    "encode",
    "read_frame",
]
