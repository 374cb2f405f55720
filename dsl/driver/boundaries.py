"""Region boundaries as formulas: where one plan of a choice stops beating another, solved for a
size in the sizes and the chip's symbols (`B > 2*D*F*(X - 1)/(...)`), with its exact value at
the report's sizes and the chip's own decimal figures (`Report.regions`, `--format json`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sympy as sp

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.passes.symbolic_plans import Candidate


@dataclass(frozen=True, slots=True)
class Boundary:
    """One bound of a region: `relation` over the free sizes with exact numbers (the chip's
    figures as the rationals of their decimals); where it is linear in a free size, `size`
    `op` `formula` solves it in the sizes and the chip's symbols, and `value` is the formula at
    the report's sizes and figures (an exact rational, or a formula in the other free sizes)."""

    relation: sp.Basic
    size: str | None = None
    op: str | None = None
    formula: sp.Expr | None = None
    value: sp.Expr | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"relation": str(self.relation)}
        if self.formula is not None and self.value is not None:
            out.update(size=self.size, op=self.op, formula=str(self.formula), exact=str(self.value))
            out["value"] = float(self.value) if self.value.is_number else None
        return out

    def text(self) -> str | None:
        """`B > 2*D*F*(X - 1)/(...) = 7659.4`; None without a formula."""
        if self.formula is None or self.value is None:
            return None
        tail = f"{float(self.value):.6g}" if self.value.is_number else str(self.value)
        return f"{self.size} {self.op} {self.formula} = {tail}"


def free_sizes(r: Report) -> list[str]:
    """The sizes the report leaves symbolic (declared without a value, not bound)."""
    return [n for n, v in r.program.dims_and_mesh.items() if v is None and n not in r.bindings]


def exact_figures(r: Report) -> dict[sp.Symbol, sp.Expr]:
    """The report's numbers (sizes, chip figures, `--set`) as exact rationals: each figure the
    rational of its shortest decimal (`4.5e10` is 45000000000, `1e-6` is 1/1000000)."""
    return {s: sp.Rational(repr(float(v))) for s, v in r.environment().items()}


def _same(formula: sp.Expr, numeric: sp.Expr, env: dict[str, float], free: list[str]) -> bool:
    """Whether `formula` at `env` is `numeric` (the lowering's float formula over the free
    sizes), at three points of the free sizes."""
    from shardc.passes.symbolic_plans import evaluate

    for scale in (3.0, 1024.0, 1.0e6):
        point = {**env, **{n: scale * (k + 2) for k, n in enumerate(free)}}
        a, b = evaluate(formula, point), evaluate(numeric, point)
        if a is None or b is None or abs(a - b) > 1e-9 * max(abs(a), abs(b), 1e-300):
            return False
    return True


def boundary(r: Report, rel: sp.Basic, sides: tuple[Candidate, Candidate] | None) -> Boundary:
    """Where `sides[0]` is cheaper than `sides[1]` (the bound `rel` of a region), solved; the
    relation alone (`passes.symbolic_plans.exact`) where the formulas divide by zero at the
    sizes."""
    from shardc.passes.symbolic_plans import exact

    try:
        return _boundary(r, rel, sides)
    except (ZeroDivisionError, OverflowError, ValueError):
        return Boundary(exact(rel))


def _boundary(r: Report, rel: sp.Basic, sides: tuple[Candidate, Candidate] | None) -> Boundary:
    from shardc.passes.sizes import known_sizes
    from shardc.passes.symbolic_plans import cheaper, exact, replaced, symbolic_time

    fallback = Boundary(exact(rel))
    if sides is None:
        return fallback
    me, other = sides
    free = free_sizes(r)
    env = {s.name: v for s, v in r.environment().items()}
    known = {
        n: int(v) for n, v in known_sizes((*r.program.dims, *r.program.mesh), r.bindings).items()
    }
    pair = None
    for sizes in (None, known):  # every size a symbol, else the known ones as numbers
        a, b = symbolic_time(me, sizes), symbolic_time(other, sizes)
        if a is None or b is None:
            return fallback
        if _same(a, me.time, env, free) and _same(b, other.time, env, free):
            pair = (a, b)
            break
    if pair is None:
        return fallback
    figures = exact_figures(r)
    a, b = pair
    # A float the cost model folded in itself (a rate computed in doubles) becomes the
    # rational of its shortest decimal, as `exact` writes it.
    a, b = exact(a), exact(b)
    rel_exact = cheaper(sp.expand(replaced(a, figures)), sp.expand(replaced(b, figures)))
    if not isinstance(rel_exact, sp.core.relational.Relational):
        return fallback
    diff = sp.expand(b - a)  # > 0 where `me` is cheaper
    if diff.has(sp.Max):
        diff = _resolved(diff, rel_exact, figures)
        if diff is None:
            return Boundary(rel_exact)
    for name in sorted(free):
        x = next((s for s in diff.free_symbols if s.name == name), None)
        if x is None or not diff.is_polynomial(x):
            continue
        poly = sp.Poly(diff, x)
        if poly.degree() != 1:
            continue
        slope, rest = poly.all_coeffs()
        sign = sp.expand(slope.xreplace(figures))
        positive = sign.is_positive
        if sign.is_zero is not False or (positive is None and sign.is_negative is None):
            continue
        num, den = sp.fraction(sp.cancel(sp.together(-rest / slope)))
        formula = sp.factor(num) / sp.factor(den)
        value = sp.cancel(formula.xreplace(figures))
        if value.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
            continue
        return Boundary(rel_exact, name, ">" if positive else "<", formula, value)
    return Boundary(rel_exact)


def _resolved(diff: sp.Expr, rel: sp.Basic, figures: dict[sp.Symbol, sp.Expr]) -> sp.Expr | None:
    """`diff` with each Max (a product's roofline time: the larger of its math and its HBM
    traffic) replaced by the argument it takes at the boundary, where `rel` is one free size
    against a number (`passes.symbolic_plans.cheaper` solves such a relation); None otherwise."""
    if not isinstance(rel, sp.core.relational.Relational):
        return None
    size, number = sorted(rel.args, key=lambda e: not e.free_symbols)
    if not isinstance(size, sp.Symbol) or number.free_symbols:
        return None
    at = {**figures, **{s: number for s in diff.free_symbols if s.name == size.name}}
    out = {}
    for m in diff.atoms(sp.Max):
        values = [a.xreplace(at) for a in m.args]
        if not all(v.is_number for v in values):
            return None
        out[m] = m.args[max(range(len(values)), key=lambda k: float(values[k]))]
    return sp.expand(diff.xreplace(out))


def boundaries(r: Report, variant: Any) -> tuple[Boundary, ...]:
    """Each bound of a region (`passes.symbolic_plans.Variant`) solved (`boundary`; kept on the
    variant by `solve_all`)."""
    if variant.solved is not None:
        return variant.solved
    sides = (
        variant.sides
        if len(variant.sides) == len(variant.bounds)
        else (None,) * len(variant.bounds)
    )
    return tuple(boundary(r, rel, s) for rel, s in zip(variant.bounds, sides, strict=True))


def solve_all(r: Report, found: tuple[Any, ...]) -> tuple[Any, ...]:
    """The variants with their bounds solved, once (`Variant.solved`)."""
    import dataclasses

    return tuple(dataclasses.replace(v, solved=boundaries(r, v)) for v in found)


def condition(r: Report, variant: Any) -> sp.Basic:
    """A region's condition with exact numbers (`Boundary.relation`s joined)."""
    rels = [b.relation for b in boundaries(r, variant)]
    return sp.And(*rels) if rels else sp.true


__all__ = [
    "Boundary",
    "boundaries",
    "boundary",
    "condition",
    "exact_figures",
    "free_sizes",
    "solve_all",
]
