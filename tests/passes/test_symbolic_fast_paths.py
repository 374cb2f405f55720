"""The shortcuts that keep a symbolic report's regions fast give exactly what the slow path
gives: `expanded` is `sp.expand`, and `cheaper` with it and its table of scaled Max terms is
`cheaper` with `sp.expand`, each Max scaled afresh."""

from __future__ import annotations

import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import shardc.passes.symbolic_plans as plans
from shardc.passes.symbolic_plans import cheaper, expanded, roofline

SIZES = sp.symbols("B D F", positive=True, integer=True)

coefficients = st.one_of(
    st.floats(1e-18, 1e6, allow_nan=False, allow_infinity=False).map(sp.Float),
    st.fractions(min_value=-1000, max_value=1000, max_denominator=64).map(sp.Rational),
    st.integers(-5, 5).map(sp.Integer),
)
monomials = st.builds(
    lambda c, powers: c * sp.Mul(*[s**k for s, k in zip(SIZES, powers, strict=True)]),
    coefficients,
    st.tuples(*[st.integers(-1, 2)] * 3),
)
sums = st.lists(monomials, min_size=1, max_size=5).map(lambda ts: sp.Add(*ts))
anything = st.one_of(
    sums,
    st.builds(lambda c, s: c * s, coefficients, sums),
    st.builds(lambda s, t: s * t, sums, sums),  # not expanded: the slow path
    st.builds(lambda s: s**2, sums),
)
positive = st.lists(
    st.builds(
        lambda c, powers: abs(c) * sp.Mul(*[s**k for s, k in zip(SIZES, powers, strict=True)]),
        coefficients.filter(lambda c: c != 0),
        st.tuples(*[st.integers(0, 1)] * 3),
    ),
    min_size=1,
    max_size=4,
).map(lambda ts: sp.Add(*ts))
times = st.builds(
    lambda comm, math, traffic, k: comm + (roofline(math, traffic) if k else 0),
    positive,
    positive,
    positive,
    st.booleans(),
)


def same(a: sp.Basic, b: sp.Basic) -> bool:
    """Equal as trees and in print (a Float's precision included)."""
    return a == b and sp.srepr(a) == sp.srepr(b) and str(a) == str(b)


@settings(max_examples=200, deadline=None)
@given(anything)
def test_expanded_is_sympys_expand(e):
    assert same(expanded(e), sp.expand(e))


@settings(max_examples=60, deadline=None)
@given(times, times)
def test_cheaper_is_the_same_relation_as_with_sympys_expand(a, b):
    fast, again = cheaper(a, b), cheaper(a, b)  # the second with each scaled Max from the table
    original = plans.expanded, plans._scaled
    # the slow path, as before the shortcuts: SymPy's expand, each Max scaled afresh
    plans.expanded, plans._scaled = sp.expand, plans._scaled.__wrapped__
    try:
        slow = cheaper(a, b)
    finally:
        plans.expanded, plans._scaled = original
    if isinstance(fast, bool):
        assert fast is slow and again is slow
    else:
        assert same(fast, slow) and same(again, slow)


@settings(max_examples=100, deadline=None)
@given(times, st.tuples(*[st.integers(1, 1 << 20)] * 3), st.integers(0, 3))
def test_a_candidates_formulas_evaluate_as_sympy_substitutes(t, values, missing):
    """A `Candidate` keeps one object per formula (`shared`): the same object for an equal
    formula built again, equal to it and printed the same; and `evaluate` gives the formula's
    value with the sizes substituted, or None where a size it holds has no value."""
    sp.core.cache.clear_cache()  # SymPy would hand back its cached object
    rebuilt = t.func(*t.args) if t.args else t
    assert rebuilt == t
    a = plans.Candidate(0, t, rebuilt, 0)
    b = plans.Candidate(1, rebuilt, t, 0)
    assert a.time is b.time and a.flops is b.flops and same(a.time, t)
    point = {s.name: float(v) for s, v in zip(SIZES, values, strict=True)}
    gone = SIZES[missing].name if missing < len(SIZES) else None
    if gone is not None:
        del point[gone]
    got = plans.evaluate(a.time, point)
    if gone is not None and SIZES[missing] in t.free_symbols:
        assert got is None
    else:
        want = float(t.subs({s: point[s.name] for s in SIZES if s.name in point}))
        assert got is not None and abs(got - want) <= 1e-9 * abs(want)
