"""Numbers typed by users (`--set B=4M`, `plan --batch 4Mi`, `dim B=4Ki` in a program, sweep
grids): one parser, one place that says which values a size, a mesh axis, a repeat count or a
hardware figure may take.

A number is digits (grouped with single `_`: `8_192`), an optional fraction and exponent, and at
most one suffix:

- decimal, powers of 1000 as the book writes sizes: `k` = `K` = 10**3, `M` = 10**6,
  `G` = 10**9, `T` = 10**12 (`4M` is 4,000,000);
- binary, powers of 1024: `Ki` = 2**10, `Mi` = 2**20, `Gi` = 2**30, `Ti` = 2**40 (`4Mi` is
  4,194,304, the book's "4M token batch (1024 sequences of length 4096)").

Parsing goes through `decimal.Decimal`, never `float()` on the raw text alone, so a size of
twenty digits stays exact, `1.5Ki` is exactly 1536, and `1e400` is refused instead of silently
becoming infinity.

The checked conversions below are the one way a number reaches a report, whoever typed it (a
program, `--set`, a sweep grid, a chip file, a model card, a Python argument): `real` (any
number or its text, exactly; a TypeError for anything else), then `whole` (a size, a mesh axis,
a repeat count), `figure` (a hardware figure), `positive` (a point of a size's continuous
range, as sweeps and `Report.value` take it) or `finite` (a computed quantity about to be
shown). Each says which value failed, and where it came from, in its `what`.
"""

from __future__ import annotations

import math
import numbers
import re
import sys
from decimal import Decimal
from typing import Any

from shardc.hardware.schema import FIGURE_RANGE
from shardc.lang.quoting import clipped, quoted

DECIMAL_SUFFIX = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
"""`--set B=4M` is 4,000,000: SI prefixes, as the book writes sizes."""
BINARY_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
"""`--batch 4Mi` is 4 * 2**20 = 4,194,304: IEC prefixes, for counts the book means in binary."""
SUFFIX = {**BINARY_SUFFIX, **DECIMAL_SUFFIX}
"""Every suffix a number may end in, and its scale."""

MAX_INTEGER = 2**63 - 1
"""The largest size, mesh axis or repeat count accepted: costs multiply several of them, and a
product must still be a finite float."""
MIN_FIGURE, MAX_FIGURE = FIGURE_RANGE
"""The range of a hardware figure, from a chip file or `--set` alike (`shardc.hardware.schema`,
where chip files are read): a subnormal bandwidth made times infinite."""
MIN_POINT = sys.float_info.min
"""The smallest size point `positive` takes: a float's smallest normal number."""

SIZE_PATTERN = r"[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9]+)?(?:Ki|Mi|Gi|Ti|[kKMGT])?"
"""An unsigned number as a program writes a size (`4096`, `8_192`, `4Ki`, `1.5k`, `1e6`); the
grammar's SIZE terminal is this pattern (tests/lang/test_numbers.py checks they agree)."""
_NUMBER = re.compile(
    r"[+-]?(\d[\d_]*(\.[\d_]*)?|\.\d[\d_]*)([eE][+-]?\d+)?"
    r"(Ki|Mi|Gi|Ti|[kKMGT])?"
)
_HINT = "try 4096, 4_096, 1e6, 4M = 4*10^6 or 4Mi = 4*2^20"
MAX_NUMBER_CHARS = 400
"""The longest number text read: no size or figure needs more digits, and a million-digit
literal would otherwise overflow the decimal context."""


class NumberError(ValueError):
    """A user's number that cannot be used; the message says why, in the user's terms."""


def parse_decimal(text: str) -> Decimal:
    """The exact value of `text`: `4096`, `4_096`, `1e6`, `4M`, `4Mi`, `2.5e-6`.

    >>> parse_decimal("4M"), parse_decimal("4Mi"), parse_decimal("8_192"), parse_decimal("1.5k")
    (Decimal('4000000'), Decimal('4194304'), Decimal('8192'), Decimal('1500.0'))
    """
    t = text.strip()
    if len(t) > MAX_NUMBER_CHARS:
        kind = "number" if _NUMBER.fullmatch(t[:MAX_NUMBER_CHARS].rstrip("eE+-_.")) else "text"
        raise NumberError(
            f"{quoted(text)} is not a number: {len(t):,} characters of {kind}, "
            f"more than the {MAX_NUMBER_CHARS} any size or figure needs"
        )
    m = _NUMBER.fullmatch(t)
    if not m or "__" in t or t.endswith("_"):
        raise NumberError(f"{quoted(text)} is not a number ({_HINT})")
    t = t.replace("_", "")
    scale = 1
    if suffix := m.group(4):
        scale = SUFFIX[suffix]
        t = t[: -len(suffix)]
    mantissa, _, exponent = t.lower().partition("e")
    if exponent and abs(int(exponent)) > 400:
        raise NumberError(f"{quoted(text)} is too large or too small for a float")
    try:
        value = Decimal(t) * scale
    except ArithmeticError:  # InvalidOperation; Overflow past the context's exponent range
        raise NumberError(f"{quoted(text)} is not a number ({_HINT})") from None
    if value and abs(value.adjusted()) > 400:
        raise NumberError(f"{quoted(text)} is too large or too small for a float")
    return value


def parse_number(text: str) -> float:
    """A finite float; `inf`, `nan` and values beyond a float's range are refused.

    >>> parse_number("4M"), parse_number("8_192"), parse_number("1e-6")
    (4000000.0, 8192.0, 1e-06)
    """
    value = parse_decimal(text)
    out = float(value)
    if not math.isfinite(out):
        raise NumberError(f"{quoted(text)} is too large for a float")
    if out == 0 and value != 0:
        raise NumberError(f"{quoted(text)} is too small for a float")
    return out


def real(value: Any, what: str) -> Decimal:
    """`value` exactly, as a Decimal: an int, a float, a Decimal, a numpy number, or text as
    `parse_decimal` reads it (`"4M"`). `TypeError` naming `what` for any other type (a bool,
    None, a list); `NumberError` for text that is not a number, NaN or an infinity.

    >>> real("4Ki", "B"), real(2.5, "C")
    (Decimal('4096'), Decimal('2.5'))
    >>> real(True, "B")
    Traceback (most recent call last):
    ...
    TypeError: B must be a number, got bool True
    """
    if isinstance(value, str):
        try:
            return parse_decimal(value)
        except NumberError as exc:
            raise NumberError(f"{what}: {exc}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
        raise TypeError(f"{what} must be a number, got {type(value).__name__} {quoted(value)}")
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise NumberError(f"{what} must be a finite number, got {value}")
        return value
    if isinstance(value, numbers.Integral):
        return Decimal(int(value))
    try:
        f = float(value)
    except (OverflowError, ValueError, TypeError):
        raise NumberError(f"{what} must be a finite number, got {quoted(value)}") from None
    if not math.isfinite(f):
        raise NumberError(f"{what} must be a finite number, got {f}")
    return Decimal(repr(f))


def positive(value: Any, what: str) -> float:
    """`value` as a finite float from above 0 to `MAX_INTEGER`: a point of a size's range where
    a fraction is fine (a sweep grid's points, `Report.value(B=...)`), never zero or negative.

    >>> positive("1.5k", "B"), positive(0.5, "B")
    (1500.0, 0.5)
    >>> positive(-1, "B")
    Traceback (most recent call last):
    ...
    shardc.lang.numeric.NumberError: B must be positive, got -1
    """
    d = real(value, what)
    if d <= 0:
        raise NumberError(f"{what} must be positive, got {_plain(d)}")
    if d > MAX_INTEGER:
        raise NumberError(f"{what} = {_plain(d)} is larger than the limit 2**63 - 1")
    out = float(d)
    if out < MIN_POINT:
        raise NumberError(f"{what} = {_plain(d)} is too small (below {MIN_POINT:.3g})")
    return out


def finite(value: Any, what: str) -> float:
    """A computed quantity about to reach a report, as a float: finite, and not negative (no
    time, size, byte or FLOP count is). `NumberError` says which quantity overflowed.

    >>> finite(6 * 70e9 * 15e12, "training FLOPs")
    6.3e+24
    >>> finite(6 * 70e9 * 1e308, "training FLOPs")
    Traceback (most recent call last):
    ...
    shardc.lang.numeric.NumberError: training FLOPs overflows a float (inf; a float holds up to
    1.8e308)
    """
    try:
        out = float(value)
    except OverflowError:
        out = math.inf
    if math.isnan(out):
        raise NumberError(f"{what} has no value (nan)")
    if not math.isfinite(out):
        raise NumberError(f"{what} overflows a float ({out}; a float holds up to 1.8e308)")
    if out < 0:
        raise NumberError(f"{what} is negative ({out:g})")
    return out


def whole(value: Any, what: str) -> int:
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
    if isinstance(value, Decimal) and not value.is_finite():
        raise NumberError(f"{what} must be a positive whole number, got {value}")
    d = value if isinstance(value, Decimal) else real(value, what)
    if d <= 0 or d != d.to_integral_value():
        raise NumberError(f"{what} must be a positive whole number, got {_plain(d)}")
    n = int(d)
    if n > MAX_INTEGER:
        raise NumberError(f"{what} = {_short(n)} is larger than the limit 2**63 - 1")
    return n


def parse_whole(text: str, what: str) -> int:
    """`text` as a positive whole number for `what`: the one reading of a size, a mesh axis, a
    repeat count or a token count, on the command line (`plan --batch 4Mi`) and in a program
    (`dim B=4Mi`) alike.

    >>> parse_whole("4Mi", "--batch"), parse_whole("4M", "--batch"), parse_whole("1.5Ki", "B")
    (4194304, 4000000, 1536)
    """
    return whole(parse_decimal(text), what)


def figure(value: Any, what: str) -> float:
    """`value` as a positive, finite, normal float for a hardware figure `what`.

    >>> figure(Decimal("4.5e10"), "W_ici")
    45000000000.0
    """
    if not isinstance(value, float | int) or isinstance(value, bool):
        value = real(value, what)
    try:
        out = float(value)
    except OverflowError:  # an int past a float's range
        out = math.inf
    if not math.isfinite(out):
        raise NumberError(f"{what} must be a finite number, got {_plain(value)}")
    if out <= 0:
        raise NumberError(f"{what} must be positive, got {_plain(value)}")
    if out > MAX_FIGURE:
        raise NumberError(
            f"{what} = {_plain(value)} is too large (above {MAX_FIGURE:.3g}, "
            "ratios of two figures would overflow)"
        )
    if out < MIN_FIGURE:
        raise NumberError(
            f"{what} = {_plain(value)} is too small (below {MIN_FIGURE:.3g}, times would overflow)"
        )
    return out


def _plain(value: Decimal | float | int) -> str:
    if isinstance(value, Decimal):
        if not value.is_finite():
            return str(value)
        if value == value.to_integral_value() and abs(value) < 10**21:
            return str(int(value))
        return _short_decimal(value)
    return clipped(str(value))


def _short_decimal(d: Decimal) -> str:
    text = f"{d:g}" if abs(d.adjusted()) < 30 else f"{d:.6e}"
    return text


def _short(n: int) -> str:
    digits = str(n) if n < 10**30 else f"{Decimal(n):.6e}"
    return digits
