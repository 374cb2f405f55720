"""Numbers typed by users (`--set B=4M`, `--devices 64`, sweep grids): one parser, one place
that says which values a size, a mesh axis, a repeat count or a hardware figure may take.

Parsing goes through `decimal.Decimal`, never `float()` on the raw text alone, so a size of
twenty digits stays exact and `1e400` is refused instead of silently becoming infinity.
"""

from __future__ import annotations

import math
import re
import sys
from decimal import Decimal, InvalidOperation

DECIMAL_SUFFIX = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
"""`--set B=4M` is 4,000,000: SI prefixes, as the book writes sizes."""

MAX_INTEGER = 2**63 - 1
"""The largest size, mesh axis or repeat count accepted: costs multiply several of them, and a
product must still be a finite float."""
MIN_FIGURE = sys.float_info.min
"""The smallest positive hardware figure accepted: a subnormal bandwidth makes times infinite."""

_NUMBER = re.compile(r"[+-]?(\d[\d_]*(\.[\d_]*)?|\.\d[\d_]*)([eE][+-]?\d+)?[kKMGT]?")


class NumberError(ValueError):
    """A user's number that cannot be used; the message says why, in the user's terms."""


def parse_decimal(text: str) -> Decimal:
    """The exact value of `text`: `4096`, `4_096`, `1e6`, `4M`, `2.5e-6`.

    >>> parse_decimal("4M"), parse_decimal("8_192"), parse_decimal("1.5k")
    (Decimal('4000000'), Decimal('8192'), Decimal('1500.0'))
    """
    t = text.strip()
    if not _NUMBER.fullmatch(t) or "__" in t or t.endswith("_"):
        raise NumberError(f"{text!r} is not a number (try 4096, 4_096, 1e6 or 4M)")
    t = t.replace("_", "")
    scale = 1
    if t[-1] in DECIMAL_SUFFIX:
        scale = DECIMAL_SUFFIX[t[-1]]
        t = t[:-1]
    mantissa, _, exponent = t.lower().partition("e")
    if exponent and abs(int(exponent)) > 400:
        raise NumberError(f"{text!r} is too large or too small for a float")
    try:
        return Decimal(t) * scale
    except InvalidOperation:
        raise NumberError(f"{text!r} is not a number (try 4096, 4_096, 1e6 or 4M)") from None


def parse_number(text: str) -> float:
    """A finite float; `inf`, `nan` and values beyond a float's range are refused.

    >>> parse_number("4M"), parse_number("8_192"), parse_number("1e-6")
    (4000000.0, 8192.0, 1e-06)
    """
    value = parse_decimal(text)
    out = float(value)
    if not math.isfinite(out):
        raise NumberError(f"{text!r} is too large for a float")
    if out == 0 and value != 0:
        raise NumberError(f"{text!r} is too small for a float")
    return out


def whole(value: Decimal | float | int, what: str) -> int:
    """`value` as a positive whole number for `what` (a size, a mesh axis, a repeat count).

    >>> whole(Decimal("4096"), "B")
    4096
    >>> whole(0.5, "B")
    Traceback (most recent call last):
    ...
    shardc.lang.numeric.NumberError: B must be a positive whole number, got 0.5
    """
    if isinstance(value, float) and not math.isfinite(value):
        raise NumberError(f"{what} must be a positive whole number, got {value}")
    d = value if isinstance(value, Decimal) else Decimal(value)
    if d <= 0 or d != d.to_integral_value():
        raise NumberError(f"{what} must be a positive whole number, got {_plain(d)}")
    n = int(d)
    if n > MAX_INTEGER:
        raise NumberError(f"{what} = {_short(n)} is larger than the limit 2**63 - 1")
    return n


def figure(value: Decimal | float | int, what: str) -> float:
    """`value` as a positive, finite, normal float for a hardware figure `what`.

    >>> figure(Decimal("4.5e10"), "W_ici")
    45000000000.0
    """
    out = float(value)
    if not math.isfinite(out):
        raise NumberError(f"{what} must be a finite number, got {_plain(value)}")
    if out <= 0:
        raise NumberError(f"{what} must be positive, got {_plain(value)}")
    if out < MIN_FIGURE:
        raise NumberError(f"{what} = {_plain(value)} is too small (below {MIN_FIGURE:.3g}, "
                          "times would overflow)")
    return out


def _plain(value) -> str:
    if isinstance(value, Decimal):
        if value == value.to_integral_value() and abs(value) < 10**21:
            return str(int(value))
        return _short_decimal(value)
    return str(value)


def _short_decimal(d: Decimal) -> str:
    text = f"{d:g}" if abs(d.adjusted()) < 30 else f"{d:.6e}"
    return text


def _short(n: int) -> str:
    digits = str(n) if n < 10**30 else f"{Decimal(n):.6e}"
    return digits
