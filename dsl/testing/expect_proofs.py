"""Deciding an expectation exactly, region by region: in each region of the symbolic sizes
(`Report.regions`) its two sides are formulas, and SymPy shows their difference zero, positive
or non-negative for every positive size (`decided`), or over the box of sizes the `where`
bounds give by interval arithmetic (`inside`, SymPy's `AccumBounds`); a region the box
excludes is left out (`excluded`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import sympy as sp

from shardc.lang.expect import Collectives, Expectation, Name, Num
from shardc.testing.expect_terms import collectives_fail, to_sympy

if TYPE_CHECKING:
    from shardc.driver.report import Report

DIM_RANGE = (1, 2**40)
AXIS_RANGE = (1, 1024)
"""Where the sample draws a symbolic dim and a symbolic mesh axis (a `where` narrows them)."""


# ---- exactly, region by region ---------------------------------------------------------------
def decided(op: str, a: sp.Expr, b: sp.Expr) -> bool | None:
    """Whether `a op b` holds for every positive value of its symbols (None: undecided)."""
    d = a - b
    try:
        zero = sp.expand(d) == 0 or sp.cancel(d) == 0
    except (TypeError, ValueError, sp.PolynomialError):
        zero = False
    if op == "==":
        return True if zero else None
    if op == "!=":
        return None if zero else (True if d.is_zero is False else None)
    if zero:
        return op in ("<=", ">=")
    sign = {">": d.is_positive, ">=": d.is_nonnegative, "<": d.is_negative, "<=": d.is_nonpositive}[
        op
    ]
    return True if sign else None


def enclosure(expr: sp.Expr, box: Mapping[sp.Symbol, tuple[Any, Any]]) -> tuple[Any, Any] | None:
    """Bounds on `expr` over the box of sizes (interval arithmetic: `AccumBounds`, which
    encloses the true range); None where SymPy cannot bound it (floor, Max of intervals)."""
    from sympy.calculus.accumulationbounds import AccumBounds

    try:
        v = expr.xreplace(
            {
                s: AccumBounds(sp.Integer(lo), sp.oo if hi == math.inf else sp.Integer(hi))
                for s, (lo, hi) in box.items()
                if s in expr.free_symbols
            }
        )
        if isinstance(v, AccumBounds):
            return v.min, v.max
        if v.is_number and v.is_extended_real:
            return v, v
    except (TypeError, ValueError, ArithmeticError, AttributeError):
        return None
    return None


def inside(op: str, d: sp.Expr, box: Mapping[sp.Symbol, tuple[Any, Any]]) -> bool:
    """Whether `d op 0` holds over the whole box, by its enclosure."""
    bounds = enclosure(d, box) if box else None
    if bounds is None:
        return False
    lo, hi = bounds
    try:
        return bool(
            {"<": hi < 0, "<=": hi <= 0, ">": lo > 0, ">=": lo >= 0, "!=": lo > 0 or hi < 0}.get(
                op, False
            )
        )
    except TypeError:  # a comparison SymPy leaves undecided
        return False


def numbers(report: Report) -> dict[sp.Symbol, sp.Expr]:
    return {s: sp.Rational(v) for s, v in report.environment().items()}


def excluded(
    report: Report, bounds: Sequence[sp.Basic], box: Mapping[sp.Symbol, tuple[Any, Any]]
) -> bool:
    """Whether a region lies outside the box of the `where` bounds: one of its bounds is
    false at every point of the box."""
    env = numbers(report)
    flip = {
        sp.StrictLessThan: ">=",
        sp.LessThan: ">",
        sp.StrictGreaterThan: "<=",
        sp.GreaterThan: "<",
    }
    for b in bounds:
        op = flip.get(type(b))
        if op is not None and inside(op, (b.lhs - b.rhs).xreplace(env), box):
            return True
    return False


def proven(
    report: Report, e: Expectation, box: Mapping[sp.Symbol, tuple[Any, Any]] | None = None
) -> bool:
    """Whether `e` holds at every size of `report` (one region), by SymPy: for every positive
    value of the sizes, or over the `box` of them the `where` bounds give (interval
    arithmetic). The numbers the report has (chip figures, bound sizes) are put in first."""
    if isinstance(e.claim, Collectives):
        return collectives_fail(report, e, e.claim) is None
    env = numbers(report)
    exprs = [to_sympy(n, report).xreplace(env) for n in e.claim.operands]
    return all(
        decided(op, exprs[i], exprs[i + 1]) or inside(op, exprs[i] - exprs[i + 1], box or {})
        for i, op in enumerate(e.claim.ops)
    )


def regions_of(report: Report) -> list[tuple[Report, tuple[sp.Basic, ...]]] | None:
    """The reports of the regions with the bounds that hold there (one report, no bounds,
    where plans hold at every size), None where there are too many to list."""
    regions = report.regions()
    if regions is None:
        return None
    return [(v.result, tuple(v.bounds)) for v in regions] if regions else [(report, ())]


def bound_holds(report: Report, bound: sp.Basic, point: Mapping[str, int]) -> bool:
    """Whether a region's bound (`D*F < 0.33*B*D + 2*B*F`) holds at `point`."""
    a = report.value(bound.lhs, **point)
    b = report.value(bound.rhs, **point)
    if a is None or b is None:
        raise ValueError("no number")
    return bool(
        {
            sp.StrictLessThan: a < b,
            sp.StrictGreaterThan: a > b,
            sp.LessThan: a <= b,
            sp.GreaterThan: a >= b,
        }.get(type(bound), False)
    )


def where_bounds(
    e: Expectation, names: Sequence[str], mesh: Sequence[str], whole: bool = False
) -> dict[str, list[Any]]:
    """Each free size's range: the sample's defaults (`whole`: 1 to infinity), narrowed by
    `where` terms `B >= 4096`."""
    out: dict[str, list[Any]] = {
        n: [1, math.inf] if whole else list(AXIS_RANGE if n in mesh else DIM_RANGE) for n in names
    }
    for w in e.where:
        for i, op in enumerate(w.ops):
            a, b = w.operands[i], w.operands[i + 1]
            if isinstance(a, Num) and isinstance(b, Name):
                a, b = b, a
                op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
            if not (isinstance(a, Name) and isinstance(b, Num) and a.name in out):
                continue
            v = float(b.value)
            lo, hi = out[a.name]
            if op in (">", ">="):
                lo = max(lo, math.floor(v) + 1 if op == ">" or v != int(v) else int(v))
            elif op in ("<", "<="):
                hi = min(hi, math.ceil(v) - 1 if op == "<" or v != int(v) else int(v))
            elif op == "==" and v == int(v):
                lo, hi = int(v), int(v)
            out[a.name] = [lo, max(lo, hi)]
    return out


__all__ = [
    "AXIS_RANGE",
    "DIM_RANGE",
    "bound_holds",
    "decided",
    "enclosure",
    "excluded",
    "inside",
    "numbers",
    "proven",
    "regions_of",
    "where_bounds",
]
