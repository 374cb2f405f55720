"""The one formatter of quantities with units (seconds, bytes, FLOPs) for reports, decisions and
tables."""

from __future__ import annotations


def fmt_value(v: float | None, unit: str) -> str:
    """Human units: seconds in s/ms/us/ns, bytes in B/kB/MB/GB (powers of 1000, as the book).

    >>> fmt_value(2.33e-05, "s"), fmt_value(8.4e6, "B"), fmt_value(None, "s")
    ('23.3 us', '8.4 MB', '-')
    """
    if v is None:
        return "-"
    if unit == "s":
        for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
            if abs(v) >= scale or scale == 1e-9:
                return f"{v / scale:.3g} {name}" if v else "0 s"
    if unit == "B":
        for scale, name in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B")):
            if abs(v) >= scale or scale == 1:
                return f"{v / scale:.3g} {name}"
    if unit == "flop":
        return f"{v:.3g}"
    return f"{v:.4g}"


__all__ = ["fmt_value"]
