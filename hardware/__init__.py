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
        Chip,
        FlopsTable,
        HardwareError,
        available,
        describe,
        load,
        summary_line,
    )
    from shardc.hardware.schema import DTYPES

__all__ = [
    "DTYPES",
    "FALLBACKS",
    "Chip",
    "FlopsTable",
    "HardwareError",
    "available",
    "describe",
    "load",
    "summary_line",
]

_HOME = {"DTYPES": "schema", **dict.fromkeys(
    ("FALLBACKS", "Chip", "FlopsTable", "HardwareError", "available", "describe", "load",
     "summary_line"), "chip")}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
