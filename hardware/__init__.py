"""Chip specs for the cost model: shipped `*.toml` chip files and a loader returning `Chip`s.

Imports only the standard library, so `shardc` starts fast. See docs/hardware.md. The loader
(`chip`: TOML, package data, did-you-mean) is imported on first use: a compile that names no
chip reads only `levels` and `schema`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shardc.hardware.chip import (
        FALLBACKS,
        PRECISIONS,
        Chip,
        FlopsTable,
        HardwareError,
        Rate,
        available,
        describe,
        load,
        load_calibration,
        summary_line,
    )
    from shardc.hardware.schema import DTYPES, RATES

__all__ = [
    "DTYPES",
    "FALLBACKS",
    "PRECISIONS",
    "RATES",
    "Chip",
    "FlopsTable",
    "HardwareError",
    "Rate",
    "available",
    "describe",
    "load",
    "load_calibration",
    "summary_line",
]

_HOME = {
    "DTYPES": "schema",
    "RATES": "schema",
    **dict.fromkeys(
        (
            "FALLBACKS",
            "PRECISIONS",
            "Rate",
            "Chip",
            "FlopsTable",
            "HardwareError",
            "available",
            "describe",
            "load",
            "load_calibration",
            "summary_line",
        ),
        "chip",
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
