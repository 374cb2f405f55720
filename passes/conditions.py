"""Turn `a > b` between cost expressions into the book's form: program quantity > hardware ratio.

`T_math > T_comms` for the two-chip example becomes `D/(2*X) > C/W_ici` (the roofline chapter): the
ratio of the two sides is split into factors that hold only hardware symbols and the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import sympy as sp

from shardc.passes.memo import LESS_THAN, SEPARATE, memoized

CANCEL_MAX_SYMBOLS = 16
"""`cancel` is a multivariate gcd, exponential in the symbols: a chain of 25 symbolic einsums
(27 sizes) took minutes. Past this many program symbols the ratio is only put over a common
denominator; the condition is the same, written less compactly."""


def _separate_key(
    lhs: sp.Expr, rhs: sp.Expr, is_hw: Callable[[sp.Symbol], bool]
) -> tuple[sp.Expr, sp.Expr, frozenset[sp.Symbol]]:
    hw = frozenset(s for e in (lhs, rhs) for s in getattr(e, "free_symbols", ()) if is_hw(s))
    return (lhs, rhs, hw)


def vanishes(side: sp.Expr, sizes: Mapping[sp.Symbol, int]) -> bool:
    """Whether a condition's side is 0 at the known `sizes` (the InfiniBand part of a
    collective whose X is 1): `a > side` then has no `program > hardware` form, since its
    ratio divides by zero (SymPy's `zoo`), and the caller states no condition.

    >>> X, W = sp.symbols("X W", positive=True)
    >>> vanishes((X - 1) / (W * X), {X: 1}), vanishes((X - 1) / (W * X), {X: 2})
    (True, False)
    """
    if side == 0:
        return True
    if not sizes:
        return False
    at = side.xreplace(sizes)
    # Not 0 at a point the symbols allow: then not 0 for all values, which `is_zero` (an
    # assumption query, milliseconds on a training step's comms) could only confirm.
    return not _nonzero_at_two(at) and bool(at.is_zero)


_TWO = sp.Integer(2)


def _nonzero_at_two(e: sp.Expr) -> bool:
    """`e` is a nonzero number with every symbol at 2, a value each symbol's assumptions allow
    (sizes are positive integers, chip figures positive): so `e` is not 0 everywhere.

    >>> X, W = sp.symbols("X W", positive=True)
    >>> _nonzero_at_two((X - 1) / W), _nonzero_at_two(X - 2), _nonzero_at_two(1 / (X - 2))
    (True, False, False)
    """
    free = e.free_symbols
    for s in free:
        for fact, holds in s.assumptions0.items():
            if getattr(_TWO, f"is_{fact}") != holds:
                return False
    v = e.xreplace(dict.fromkeys(free, _TWO))
    return isinstance(v, sp.Rational) and v != 0


@memoized(SEPARATE, _separate_key)
def separate(lhs: sp.Expr, rhs: sp.Expr, is_hw: Callable[[sp.Symbol], bool]) -> sp.Rel:
    """`lhs > rhs` rewritten as `program-part > hardware-part` where the ratio allows it."""
    ratio = sp.together(lhs / rhs)
    if sum(not is_hw(s) for s in ratio.free_symbols) <= CANCEL_MAX_SYMBOLS:
        ratio = sp.cancel(ratio)
    ratio = sp.factor_terms(ratio)
    prog: list[sp.Expr] = []
    hw: list[sp.Expr] = []
    for f in sp.Mul.make_args(ratio):
        syms = f.free_symbols
        if syms and all(is_hw(s) for s in syms):
            hw.append(f)
        elif any(is_hw(s) for s in syms):
            return sp.StrictGreaterThan(sp.factor_terms(lhs), sp.factor_terms(rhs), evaluate=False)
        else:
            prog.append(f)
    p = sp.Mul(*prog)
    h = sp.Mul(*hw)
    if not hw:
        return sp.StrictGreaterThan(p, sp.Integer(1), evaluate=False)
    return sp.StrictGreaterThan(p, sp.factor_terms(1 / h), evaluate=False)


@memoized(LESS_THAN, lambda a, b: (a, b))
def less_than(a: sp.Expr, b: sp.Expr) -> sp.Rel | bool:
    """`a < b` with common positive factors cancelled; True/False when decided.

    >>> I, J, K = sp.symbols("I J K", positive=True)
    >>> less_than(I * (J + K), K * (I + J))
    I < K
    """
    num, den = sp.fraction(sp.cancel(sp.together(a / b)))
    diff = sp.factor(sp.expand(num - den))
    if diff.is_positive or diff.is_zero:
        return False
    if diff.is_negative:
        return True
    factors = sp.Mul.make_args(diff)
    keep = [f for f in factors if not f.is_positive]
    sign = 1
    for f in factors:
        if f.is_negative:
            sign = -sign
    core = sp.Mul(*[f for f in keep if not f.is_negative]) * sign
    pos = [t for t in sp.Add.make_args(sp.expand(core)) if t.could_extract_minus_sign() is False]
    neg = [-t for t in sp.Add.make_args(sp.expand(core)) if t.could_extract_minus_sign()]
    if pos and neg:
        lhs, rhs = sp.Add(*pos), sp.Add(*neg)
        # Sizes are positive integers: N*J < 1 can never hold.
        if rhs.is_number and rhs <= 1 and lhs.is_integer and lhs.is_positive:
            return False
        return sp.StrictLessThan(lhs, rhs, evaluate=False)
    return sp.StrictLessThan(core, 0, evaluate=False)
