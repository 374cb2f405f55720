"""Numbers for many SymPy formulas at once, computed by walking them.

A report's formulas share most of their terms, and a plan evaluates a different set of formulas
for every candidate: `sympy.lambdify` prints and compiles Python source for each set, which was
most of the evaluation (0.34 s of a LLaMA-3 70B plan). The walk does the float operations the
source `lambdify(..., modules="math", printer=code_printer())` would run, in the same order (a
sum's terms as the printer orders them, a product's numerator then its denominator, `1/x` for
`x**-1`), so the numbers are the same to the last bit; each shared subterm is computed once per
call.

A formula with a node the walk does not know (or with a symbol the environment lacks) comes back
as `UNSUPPORTED`; the caller uses `lambdify` for it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import sympy as sp
from sympy.core.mul import _keep_coeff

from shardc.driver.formulas import code_printer
from shardc.passes.memo import EVALUATE_RECIPES

UNSUPPORTED: Any = object()
"""What `evaluate` returns for a formula it cannot walk."""


class _Unsupported(Exception):
    pass


_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    sp.StrictLessThan: operator.lt,
    sp.LessThan: operator.le,
    sp.StrictGreaterThan: operator.gt,
    sp.GreaterThan: operator.ge,
    sp.Equality: operator.eq,
    sp.Unequality: operator.ne,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    sp.ceiling: math.ceil,
    sp.floor: math.floor,
    sp.log: math.log,
    sp.exp: math.exp,
    sp.Abs: abs,
}


def evaluate(exprs: Iterable[sp.Basic], env: Mapping[sp.Symbol, float]) -> list[Any]:
    """Each formula's value under `env`, as the `lambdify` of it would return it; None where it
    divides by zero (or a Piecewise has no branch that holds), UNSUPPORTED where the walk
    cannot compute it. Other arithmetic errors (an overflow) propagate, as from `lambdify`."""
    memo: dict[sp.Basic, Any] = {}

    def walk(e: sp.Basic) -> Any:
        try:
            return memo[e]
        except KeyError:
            pass
        v = memo[e] = _compute(_recipe(e), walk, env)
        return v

    out: list[Any] = []
    for e in exprs:
        try:
            out.append(walk(e))
        except ZeroDivisionError:
            out.append(None)
        except _Unsupported:
            out.append(UNSUPPORTED)
    return out


def _recipe(e: sp.Basic) -> tuple:
    """How `e` is computed (its children in the printer's order), once per process."""
    hit = EVALUATE_RECIPES.get(e)
    if hit is None:
        hit = EVALUATE_RECIPES[e] = _make_recipe(e)
    return hit


def _make_recipe(e: sp.Basic) -> tuple:
    """The operation at `e` and its operands, in the order the code printer writes them."""
    if e.is_Symbol:
        return ("symbol", e)
    if e.is_Integer:
        return ("number", int(e))
    if e.is_Rational:
        return ("ratio", int(e.p), int(e.q))  # printed `p/q`: a true division
    if e.is_Float:  # the source holds the printed digits (15 of them), not the exact double
        return ("number", float(code_printer().doprint(e)))
    if e.is_NumberSymbol:
        return ("number", float(e))
    if e is sp.nan or e is sp.zoo:  # printed `nan`
        return ("number", math.nan)
    if e is sp.oo or e is sp.S.NegativeInfinity:
        return ("number", math.inf if e is sp.oo else -math.inf)
    if e is sp.true or e is sp.false:
        return ("number", bool(e))
    t = type(e)
    if t is sp.Add:
        return ("add", tuple(e.as_ordered_terms()))
    if t is sp.Mul:
        return _mul_recipe(e)
    if t is sp.Pow:
        return _pow_recipe(e)
    if t is sp.Max or t is sp.Min:
        return ("max" if t is sp.Max else "min", e.args)
    if t in _UNARY:
        return ("unary", _UNARY[t], e.args[0])
    if t is sp.Piecewise:
        return ("piecewise", tuple((a.expr, a.cond) for a in e.args))
    if t in _COMPARE:
        return ("compare", _COMPARE[t], e.args[0], e.args[1])
    if t is sp.And or t is sp.Or:
        return ("and" if t is sp.And else "or", e.args)
    if t is sp.Not:
        return ("not", e.args[0])
    return ("unsupported",)


def _mul_recipe(e: sp.Mul) -> tuple:
    """`CodePrinter._print_Mul`: the sign taken off the coefficient, the factors in printed
    order, those with a negative rational exponent in the denominator."""
    c, rest = e.as_coeff_Mul()
    negative = c < 0
    if negative:
        e = _keep_coeff(-c, rest)
    factors = e.as_ordered_factors() if isinstance(e, sp.Mul) else (e,)
    num: list[sp.Basic] = []
    den: list[sp.Basic] = []
    for item in factors:
        if item.is_commutative and item.is_Pow and item.exp.is_Rational and item.exp.is_negative:
            den.append(sp.Pow(item.base, -item.exp, evaluate=item.exp == -1))
        else:
            num.append(item)
    return ("mul", negative, tuple(num) or (sp.S.One,), tuple(den))


def _pow_recipe(e: sp.Pow) -> tuple:
    """`PythonCodePrinter._print_Pow`: `math.sqrt` for a half, `1/...` for -1/2 and -1."""
    base, exp = e.args
    if exp == sp.S.Half:
        return ("sqrt", base)
    if e.is_commutative and -exp == sp.S.Half:
        return ("inverse-sqrt", base)
    if e.is_commutative and exp == -1:
        return ("inverse", base)
    return ("pow", base, exp)


def _compute(r: tuple, walk: Callable[[sp.Basic], Any], env: Mapping[sp.Symbol, float]) -> Any:
    kind = r[0]
    if kind == "symbol":
        try:
            return env[r[1]]
        except KeyError:
            raise _Unsupported from None
    if kind == "number":
        return r[1]
    if kind == "add":
        terms = r[1]
        v = walk(terms[0])
        for t in terms[1:]:
            v = v + walk(t)  # `a - b` in the source: the same float as a + (-b)
        return v
    if kind == "mul":
        _, negative, num, den = r
        v = walk(num[0])
        for f in num[1:]:
            v = v * walk(f)
        if den:
            d = walk(den[0])
            for f in den[1:]:
                d = d * walk(f)
            v = v / d
        return -v if negative else v
    if kind == "ratio":
        return r[1] / r[2]
    if kind == "sqrt":
        return math.sqrt(walk(r[1]))
    if kind == "inverse-sqrt":
        return 1 / math.sqrt(walk(r[1]))
    if kind == "inverse":
        return 1 / walk(r[1])
    if kind == "pow":
        return walk(r[1]) ** walk(r[2])
    if kind == "max":
        return max(walk(a) for a in r[1])
    if kind == "min":
        return min(walk(a) for a in r[1])
    if kind == "unary":
        return r[1](walk(r[2]))
    if kind == "piecewise":
        for value, cond in r[1]:
            if walk(cond):
                return walk(value)
        raise ZeroDivisionError  # no branch holds: lambdify's source returns None
    if kind == "compare":
        return r[1](walk(r[2]), walk(r[3]))
    if kind == "and":
        return all(walk(c) for c in r[1])
    if kind == "or":
        return any(walk(c) for c in r[1])
    if kind == "not":
        return not walk(r[1])
    raise _Unsupported


__all__ = ["UNSUPPORTED", "evaluate"]
