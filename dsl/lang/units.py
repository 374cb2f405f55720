"""The one formatter of quantities with units (seconds, bytes, FLOPs) for reports, decisions and
tables."""

from __future__ import annotations

import math


def fmt_value(v: float | None, unit: str) -> str:
    """Human units: seconds in s/ms/us/ns, bytes in B/kB/MB/GB (powers of 1000, as the book).

    The unit is chosen after rounding to three figures, so 0.9995 s is `1 s`, not `1e+03 ms`.

    >>> fmt_value(2.33e-05, "s"), fmt_value(8.4e6, "B"), fmt_value(None, "s")
    ('23.3 us', '8.4 MB', '-')
    >>> fmt_value(0.9995, "s"), fmt_value(999.6e6, "B")
    ('1 s', '1 GB')
    """
    if v is None:
        return "-"
    if unit in ("s", "B"):
        r = float(f"{v:.3g}")  # the printed figures; their magnitude picks the unit
        scales: tuple[tuple[float, str], ...] = (
            ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))
            if unit == "s"
            else ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B"))
        )
        for scale, name in scales:
            if abs(r) >= scale or scale == scales[-1][0]:
                return f"{r / scale:.3g} {name}" if v or unit == "B" else "0 s"
    if unit == "flop":
        return f"{v:.3g}"
    return f"{v:.4g}"


def fmt_sig(v: float | None, digits: int = 3, missing: str = "-") -> str:
    """A bare number to `digits` significant figures (`missing` for None), as tables print.

    >>> fmt_sig(40843.2), fmt_sig(40843.2, 4), fmt_sig(None, missing="?")
    ('4.08e+04', '4.084e+04', '?')
    """
    return missing if v is None else f"{v:.{digits}g}"


def fmt_sci(v: float | None, digits: int = 1, missing: str = "-") -> str:
    """Scientific notation with `digits` decimals, `inf` for an unbounded value.

    >>> fmt_sci(2.1e28), fmt_sci(float("inf")), fmt_sci(None)
    ('2.1e+28', 'inf', '-')
    """
    if v is None:
        return missing
    if math.isinf(v):
        return "inf"
    return f"{v:.{digits}e}"


def fmt_grid(v: float) -> str:
    """Grid values of a sweep: `61,367` between 100 and 1e7, else three significant figures.

    >>> fmt_grid(61367.4), fmt_grid(0.5), fmt_grid(3e9)
    ('61,367', '0.5', '3e+09')
    """
    return f"{v:,.0f}" if 100 <= abs(v) < 1e7 else f"{v:.3g}"


def fmt_size(s: int | None) -> str:
    """A dim or axis size as diagnostics name it: the number, or `symbolic`.

    >>> fmt_size(4096), fmt_size(None)
    ('4096', 'symbolic')
    """
    return "symbolic" if s is None else str(s)


__all__ = ["fmt_grid", "fmt_sci", "fmt_sig", "fmt_size", "fmt_value"]
