"""Where each plan of a decision is the product's own cheapest, in words: the regions of the
sizes (`passes.symbolic_plans`), their bounds solved for a size, each region's plan.
"""

from __future__ import annotations

import sympy as sp

from shardc.driver.formulas import text
from shardc.passes.ir import Decision
from shardc.passes.lower.explain import describe_steps
from shardc.passes.memo import DECISION_REGIONS, RELATION_TEXT, TIDY_MAX, memoized
from shardc.passes.symbolic_plans import Region, RegionFinder, replaced

_FINDER = RegionFinder()


def regions(d: Decision) -> tuple[Region, ...]:
    """Where each plan is the product's own cheapest (passes/symbolic_plans.py; the whole program's
    objective may run another there, `driver.objective`), largest share of the sample first;
    empty when one plan wins everywhere sampled."""
    if not d.candidates:
        return ()
    hit = DECISION_REGIONS.get(d.candidates)
    if hit is None:
        hit = DECISION_REGIONS[d.candidates] = _FINDER.regions(d.candidates)
    return hit


def candidate_text(d: Decision, order: int) -> str:
    """The plan of candidate `order` in words."""
    c = next(c for c in d.candidates if c.order == order)
    return describe_steps(*c.steps, d.lhs, d.rhs, d.target)


@memoized(RELATION_TEXT, lambda rel: rel)
def relation_text(rel: sp.Basic) -> str:
    """A region's bound, solved for its size where it is linear in one (`B > 7659.4`).

    >>> B = sp.Symbol("B", positive=True)
    >>> relation_text(1.0 < 0.000130558518568810 * B), relation_text(B**2 < 3)
    ('B > 7659.4', 'B**2 < 3')
    """
    if isinstance(rel, sp.core.relational.Relational) and len(rel.free_symbols) == 1:
        (x,) = rel.free_symbols
        diff = sp.expand(rel.gts - rel.lts)  # > 0 where the relation holds
        poly = sp.Poly(diff, x) if diff.is_polynomial(x) else None
        if poly is not None and poly.degree() == 1:
            a, b = (float(c) for c in poly.all_coeffs())
            bound = -b / a
            op = ">" if a > 0 else "<"
            if isinstance(rel, (sp.GreaterThan, sp.LessThan)):
                op += "="
            return f"{x} {op} {bound:.6g}"
    return text(_tidy_numbers(rel))


def _tidy_numbers(e: sp.Basic) -> sp.Basic:
    """Floats from the chip's figures as small fractions where they are (`0.5` -> `1/2`),
    otherwise to six significant figures.

    >>> B = sp.Symbol("B", positive=True)
    >>> _tidy_numbers(1.0 * B < 0.000114213197969543 * B**2 + 0.5 * B)
    B < 0.000114213*B**2 + B/2
    """
    swap: dict[sp.Basic, sp.Basic] = {f: _tidy(f) for f in e.atoms(sp.Float)}
    # A roofline Max (`passes.symbolic_plans.roofline`) comes back in many bounds: each is
    # rebuilt once (`replaced` would take it apart again in every bound).
    swap.update({m: _tidy_max(m, frozenset(m.atoms(sp.Float))) for m in e.atoms(sp.Max)})
    return replaced(e, swap)


def _tidy(f: sp.Float) -> sp.Basic:
    eighths = float(f) * 8
    return (
        sp.Rational(round(eighths), 8)
        if abs(eighths) >= 1 and abs(eighths - round(eighths)) < 1e-9
        else sp.Float(float(f"{float(f):.6g}"), 6)
    )


@memoized(TIDY_MAX, lambda m, floats: (m, floats))
def _tidy_max(m: sp.Basic, floats: frozenset[sp.Float]) -> sp.Basic:
    """`_tidy_numbers` of a Max, its `floats` in the key (SymPy versions before 1.13 call a
    Float equal to the Rational of its value)."""
    return replaced(m, {f: _tidy(f) for f in floats})


def region_text(r: Region) -> str:
    """`B > 7659.4 and D < 2*F`, or `everywhere`."""
    return " and ".join(relation_text(b) for b in r.bounds) or "everywhere else"


__all__ = ["candidate_text", "region_text", "regions", "relation_text"]
