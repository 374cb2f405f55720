"""Point-to-point sends: what `Send_{X: 0->3, Y: 0->3}(A)` and `Send_{P: +1}(A)` say.

The point form copies the block of one device (the `from` coordinates) to another (the `to`
coordinates); the shift form sends every device's block k steps further along each axis named,
cyclically (a pipeline's activations, jax.lax.ppermute). Axes not named are the same on both
ends. This module holds the subscript's syntax: parsing, printing and the per-axis entries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from shardc.lang.source import NO_SPAN, Span

SEND_NOTE = (
    "a Send names, for each mesh axis it moves along, either the coordinates of the "
    "sending and the receiving device (`Send_{X: 0->3, Y: 0->3}`) or a signed shift "
    "that every device applies (`Send_{P: +1}`, `Send_{P: -1}`)"
)
"""The rule quoted under every malformed subscript (C011)."""

_POINT = re.compile(r"([A-Za-z][A-Za-z0-9]*)\s*:\s*([0-9]+)\s*->\s*([0-9]+)")
_SHIFT = re.compile(r"([A-Za-z][A-Za-z0-9]*)\s*:\s*([+-])\s*([0-9]+)")
_UNSIGNED = re.compile(r"([A-Za-z][A-Za-z0-9]*)\s*:\s*([0-9]+)")


@dataclass(frozen=True, slots=True)
class SendAxis:
    """One entry of a Send's subscript: `X: 0->3` (`src`, `dst`) or `P: +1` (`shift`)."""

    axis: str
    shift: int | None = None
    src: int | None = None
    dst: int | None = None
    span: Span = field(default=NO_SPAN, compare=False, repr=False)

    @property
    def is_shift(self) -> bool:
        return self.shift is not None

    def text(self) -> str:
        """The entry as a program writes it.

        >>> SendAxis("X", src=0, dst=3).text(), SendAxis("P", shift=-1).text()
        ('X: 0->3', 'P: -1')
        """
        if self.shift is not None:
            return f"{self.axis}: {self.shift:+d}"
        return f"{self.axis}: {self.src}->{self.dst}"

    def reversed(self) -> SendAxis:
        """The entry that sends the other way (a shift's gradient: -k for +k)."""
        if self.shift is not None:
            return SendAxis(self.axis, shift=-self.shift, span=self.span)
        return SendAxis(self.axis, src=self.dst, dst=self.src, span=self.span)


def format_send(moves: tuple[SendAxis, ...]) -> str:
    """`Send_{X: 0->3, Y: 0->3}`: the subscripted name of a Send.

    >>> format_send((SendAxis("X", src=0, dst=3), SendAxis("Y", src=0, dst=3)))
    'Send_{X: 0->3, Y: 0->3}'
    """
    return "Send_{" + ", ".join(m.text() for m in moves) + "}"


def is_shift(moves: tuple[SendAxis, ...]) -> bool:
    """Whether a (validated, single-form) Send is the shift form."""
    return bool(moves) and moves[0].is_shift


@dataclass(frozen=True, slots=True)
class SendSyntaxError:
    """A malformed entry: what to say, and where in the token (column offset and width)."""

    message: str
    label: str
    offset: int
    width: int


def parse_send(token: str) -> tuple[SendAxis, ...] | SendSyntaxError:
    """The entries of a `Send_{...}` token, with their offsets into the token as spans.

    Spans are relative: line 0 and columns counted from the token's start (0-based); the parser
    shifts them to the token's position.

    >>> [m.text() for m in parse_send("Send_{X: 0->3, Y: +1}")]
    ['X: 0->3', 'Y: +1']
    >>> parse_send("Send_X").label
    'expected `X: FROM->TO` or `X: +K`'
    """
    head, sep, sub = token.partition("_")
    start = len(head) + len(sep)
    if sub.startswith("{") and sub.endswith("}"):
        inner, base = sub[1:-1], start + 1
    else:
        inner, base = sub, start
    out: list[SendAxis] = []
    pos = 0
    for piece in inner.split(","):
        lead = len(piece) - len(piece.lstrip())
        text = piece.strip()
        offset, width = base + pos + lead, max(len(text), 1)
        pos += len(piece) + 1
        span = Span(0, offset, 0, offset + width)
        if m := _POINT.fullmatch(text):
            out.append(SendAxis(m[1], src=int(m[2]), dst=int(m[3]), span=span))
        elif m := _SHIFT.fullmatch(text):
            k = int(m[3])
            out.append(SendAxis(m[1], shift=-k if m[2] == "-" else k, span=span))
        elif m := _UNSIGNED.fullmatch(text):
            return SendSyntaxError(
                f"Send entry {text!r} has no sign: is it a shift or a coordinate?",
                f"write `{m[1]}: +{m[2]}` to shift by {m[2]}, or `{m[1]}: FROM->{m[2]}`",
                offset,
                width,
            )
        else:
            name = re.match(r"[A-Za-z][A-Za-z0-9]*", text)
            axis = name[0] if name else "X"
            what = f"Send entry {text!r}" if text else "an empty entry in the Send subscript"
            return SendSyntaxError(
                f"{what} is neither `AXIS: FROM->TO` nor `AXIS: +K`",
                f"expected `{axis}: FROM->TO` or `{axis}: +K`",
                offset,
                width,
            )
    return tuple(out)
