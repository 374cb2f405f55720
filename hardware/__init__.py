"""Chip specs for the cost model: shipped `*.toml` chip files and a loader returning `Chip`s.

Imports only the standard library, so `shardc` starts fast. See docs/hardware.md.
"""

from __future__ import annotations

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
