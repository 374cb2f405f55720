"""The dtypes a program may use, in one place: names, bytes per element, promotion rank, and the
names XLA gives them. Chips list their FLOP/s under the same names (`shardc.hardware.schema`,
the lowest layer that needs them, holds the list; this module adds what the language knows)."""

from __future__ import annotations

from shardc.hardware.schema import DTYPES as NAMES

BYTES: dict[str, float] = {
    "f32": 4.0,
    "bf16": 2.0,
    "f16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}
"""Bytes per element of each dtype, keyed in the order of `NAMES`."""

RANK: dict[str, int] = {"int4": 0, "int8": 1, "fp8": 2, "f16": 3, "bf16": 4, "f32": 5}
"""Promotion order: an elementwise op of two dtypes yields the higher-ranked one."""

XLA_NAME: dict[str, str] = {
    "f32": "f32",
    "bf16": "bf16",
    "f16": "f16",
    "fp8": "f8e4m3fn",
    "int8": "s8",
    "int4": "s4",
}
"""The HLO element type each dtype lowers to (`fp8` is e4m3)."""

FROM_XLA: dict[str, str] = {v: k for k, v in XLA_NAME.items()}
"""The dtype an HLO element type came from (only the types shardc lowers to)."""

assert tuple(BYTES) == NAMES and set(RANK) == set(NAMES) == set(XLA_NAME), "one table per fact"


def promote(a: str, b: str) -> str:
    """The dtype of an elementwise op on `a` and `b`.

    >>> promote("bf16", "f32"), promote("int8", "fp8")
    ('f32', 'fp8')
    """
    return a if RANK[a] >= RANK[b] else b


def nbytes(dtype: str) -> float:
    """Bytes per element of `dtype`.

    >>> nbytes("bf16"), nbytes("int4")
    (2.0, 0.5)
    """
    return BYTES[dtype]


__all__ = ["BYTES", "FROM_XLA", "NAMES", "RANK", "XLA_NAME", "nbytes", "promote"]
