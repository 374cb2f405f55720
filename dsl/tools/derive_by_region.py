"""`derive --solve-for` over the regions of a program whose plans depend on the sizes: each
region's program (`Report.regions`) is derived on its own, each condition solved there, and the
answer is the union of intervals of the solved size, each piece with the region it comes from.

The regions' bounds are relations over the symbolic sizes; with every other size bound (by the
program or `--set`), each bound is a function of the one size solved for, and its interval is
found numerically: a scan over 1 .. 2**48 on a log grid, each crossing refined by bisection.
"""

from __future__ import annotations

import math
from typing import Any

import sympy as sp

from shardc.tools.derive import derive, value
from shardc.tools.derive_solve import solve_for

TOP = 2.0**48
SCAN = 2000


def _holds_fn(rel: sp.Basic, var: sp.Symbol, env: dict[sp.Symbol, float]):
    """rel as a function of `var` alone (None when another symbol has no value)."""
    if rel is sp.true or rel is True:
        return lambda x: True
    if rel is sp.false or rel is False:
        return lambda x: False
    free = rel.free_symbols - {var}
    if not free <= env.keys():
        return None
    sub = {s: env[s] for s in free}
    compare = _COMPARE.get(type(rel))
    if compare is not None:
        # Side by side: a side can divide by zero at these sizes (a cost that is 0 there: a
        # mesh axis of one device moves nothing), and the ratio over it is unbounded. Costs
        # are not negative, so such a side is +infinity.
        left, right = (_side(_expr(e.xreplace(sub)), var) for e in (rel.lhs, rel.rhs))
        return lambda x: compare(left(x), right(x))
    bound = rel.xreplace(sub)
    fn = sp.lambdify([var], bound, modules="math")

    def holds(x: float) -> bool:
        try:
            return bool(fn(x))
        except (ZeroDivisionError, OverflowError):
            return False

    return holds


_COMPARE = {
    sp.StrictGreaterThan: lambda a, b: a > b,
    sp.GreaterThan: lambda a, b: a >= b,
    sp.StrictLessThan: lambda a, b: a < b,
    sp.LessThan: lambda a, b: a <= b,
}


def _expr(e: Any) -> sp.Expr:
    """A side after substitution: a bare bound size comes back as a Python float."""
    return e if isinstance(e, sp.Basic) else sp.Float(e)


def _side(e: sp.Expr, var: sp.Symbol):
    """One side of a relation as a function of `var`: +infinity where it divides by zero."""
    if e.has(sp.zoo, sp.nan, sp.oo):
        return lambda x: math.inf
    f = sp.lambdify([var], e, modules="math")

    def side(x: float) -> float:
        try:
            return float(f(x))
        except (ZeroDivisionError, OverflowError):
            return math.inf

    return side


def intervals(
    rel: sp.Basic, var: sp.Symbol, env: dict[sp.Symbol, float], lo: float = 1.0, hi: float = TOP
) -> list[tuple[float, float]] | None:
    """Where `rel` holds for `var` in [lo, hi] (the others at `env`), as closed intervals;
    None when a symbol other than `var` has no value."""
    holds = _holds_fn(rel, var, env)
    if holds is None:
        return None
    xs = [lo * (hi / lo) ** (k / (SCAN - 1)) for k in range(SCAN)] if hi > lo else [lo]
    # A region narrower than the grid's step (1.7%) would fall between two points: the
    # relation's own numbers, and the float just below each, are scanned too.
    marks = {
        m for n in _numbers(rel, env) if lo < n < hi for m in (n, math.nextafter(n, -math.inf))
    }
    xs = sorted(set(xs) | marks)
    states = [holds(x) for x in xs]
    out: list[tuple[float, float]] = []
    start = xs[0] if states[0] else None
    for (a, sa), (b, sb) in zip(
        zip(xs, states, strict=True), zip(xs[1:], states[1:], strict=True), strict=False
    ):
        if sa == sb:
            continue
        edge = _bisect(holds, a, b, sa)
        if sb:
            start = edge
        elif start is not None:
            out.append((start, edge))
            start = None
    if start is not None:
        out.append((start, xs[-1]))
    return out


def _numbers(rel: sp.Basic, env: dict[sp.Symbol, float]) -> list[float]:
    """The finite numbers in `rel` once the other sizes take their values (a region's bound
    such as `B >= 7491` gives 7491)."""
    if not isinstance(rel, sp.Basic):
        return []
    values = {s: env[s] for s in rel.free_symbols if s in env}
    relations = [rel] if isinstance(rel, sp.Rel) else rel.atoms(sp.Rel)
    out = []
    for r in relations:
        for side in r.args:  # each side alone: a comparison with `zoo` in it would not build
            for n in _expr(side.xreplace(values)).atoms(sp.Number):
                if n.is_finite:
                    out.append(float(n))
    return out


def _bisect(holds, a: float, b: float, at_a: bool) -> float:
    for _ in range(200):
        mid = math.sqrt(a * b) if a > 0 else (a + b) / 2
        if mid in (a, b):
            break
        if holds(mid) == at_a:
            a = mid
        else:
            b = mid
    return b


def _intersect(
    a: list[tuple[float, float]], b: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    out = []
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo, hi = max(lo1, lo2), min(hi1, hi2)
            if lo < hi:
                out.append((lo, hi))
    return out


def union(
    pieces: list[tuple[float, float]] | list[list[float]], rel_gap: float = 1e-9
) -> list[tuple[float, float]]:
    """The union of intervals, sorted, with pieces that overlap or touch (regions meet at a
    bisected boundary, each side within a few ulps of it) joined.

    >>> union([(40800.0, TOP), (1.0, 5736.1)])
    [(1.0, 5736.1), (40800.0, 281474976710656.0)]
    >>> union([(7680.0, TOP), (242.9, 7679.999999999992)])
    [(242.9, 281474976710656.0)]
    """
    out: list[tuple[float, float]] = []
    for lo, hi in sorted((float(a), float(b)) for a, b in pieces):
        if out and lo <= out[-1][1] * (1 + rel_gap):
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def interval_text(var: str, lo: float, hi: float) -> str:
    """`B > 7680`, `B < 7680`, `7680 < B < 40800`, or `every B`.

    >>> interval_text("B", 7680.0, TOP), interval_text("B", 1.0, 7680.0)
    ('B > 7680', 'B < 7680')
    """
    low, high = lo > 1.0 + 1e-9, hi < TOP * (1 - 1e-9)
    if low and high:
        return f"{lo:.6g} < {var} < {hi:.6g}"
    if low:
        return f"{var} > {lo:.6g}"
    if high:
        return f"{var} < {hi:.6g}"
    return f"every {var}"


def solve_by_region(
    report, var: str, overlaps=("sum", "max"), derived=None, *, solve: bool = True
) -> dict[str, Any] | None:
    """Per region: its condition, the interval of `var` it covers, and each condition solved
    there with the intervals where it holds; and per condition name, the union over regions.
    A report whose plans do not depend on the sizes is one region (`derived`, its derivation,
    saves deriving it again); `solve=False` leaves out the closed forms (`solved` is None),
    keeping the intervals, as do the regions reached past REGIONS_SECONDS of CPU time beyond
    finding the regions. None when there are too many regions or `var` is not one size."""
    import time

    from shardc.driver.region_totals import condition_text
    from shardc.lang.input_limits import REGIONS_SECONDS
    from shardc.passes.symbolic_plans import Variant

    regions = report.regions()
    if regions is None or var not in report.names():
        return None
    if not regions:
        regions = (Variant((), (), 1.0, report),)
    sym = report.names()[var]
    env = {s: v for s, v in report.environment().items() if s != sym}
    out_regions = []
    union: dict[str, list[dict[str, Any]]] = {}
    start = time.process_time()
    for v in regions:
        # Past the budget the regions still come, with their intervals but no closed forms.
        solve_here = solve and time.process_time() - start <= REGIONS_SECONDS
        span = intervals(v.condition, sym, env)
        if span is None:
            return None
        label = (
            " or ".join(interval_text(var, lo, hi) for lo, hi in span)
            if span
            else condition_text(v)
        )
        d = (
            derived
            if derived is not None and v.result is report
            else derive(v.result, v.result.program.backward_line, overlaps=overlaps)
        )
        conds = []
        for c in d.conditions:
            s = solve_for(c.relation, var) if solve_here else None
            holds = intervals(c.relation, sym, env)
            pieces = _intersect(holds, span) if holds is not None else []
            entry = {
                "name": c.name,
                "expr": str(c.relation),
                "solved": None
                if s is None
                else {"var": s.var, "rel": s.rel, "expr": str(s.expr), "value": value(d, s.expr)},
                "intervals": [[lo, hi] for lo, hi in pieces],
            }
            conds.append(entry)
            union.setdefault(c.name, []).extend(
                {"region": label, "interval": [lo, hi]} for lo, hi in pieces
            )
        out_regions.append(
            {
                "condition": label,
                "relation": str(v.condition),
                "share_of_sample": round(v.share, 4),
                "intervals": [[lo, hi] for lo, hi in span],
                "conditions": conds,
            }
        )
    return {"var": var, "regions": out_regions, "holds": union}


__all__ = ["TOP", "interval_text", "intervals", "solve_by_region", "union"]
