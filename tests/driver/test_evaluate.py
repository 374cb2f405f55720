"""The formula walk (shardc.driver.evaluate) gives what `lambdify` with the code printer gives,
to the last bit and the same type, for random formulas and for every formula of programs/."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import shardc
from shardc.driver.evaluate import UNSUPPORTED, evaluate
from shardc.driver.formulas import code_printer

SYMS = sp.symbols("B D F X Y W_ici t_hop")
ENV_VALUES = st.lists(
    st.one_of(
        st.sampled_from([1.0, 2.0, 4096.0, 1e-9, 2.5e17, 1e300]), st.floats(1e-3, 1e7)
    ),  # odd mantissas: rounding shows
    min_size=len(SYMS),
    max_size=len(SYMS),
)
LEAVES = st.one_of(
    st.sampled_from(SYMS),
    st.integers(-7, 2**70).map(sp.Integer),
    st.fractions(max_denominator=12).map(sp.Rational),
    st.floats(1e-12, 1e12).map(sp.Float),
)


def _safe(build):
    """`build`, or its first operand where SymPy refuses the node (Max of zoo)."""

    def make(t):
        try:
            return build(t)
        except (ValueError, TypeError):
            return t[0]

    return make


def _extend(children):
    two = st.tuples(children, children)
    return st.one_of(
        two.map(lambda t: t[0] + t[1]),
        two.map(lambda t: t[0] - t[1]),
        two.map(lambda t: t[0] * t[1]),
        two.map(lambda t: t[0] / t[1]),
        # sums and products of several terms: where the order of the additions shows
        st.lists(children, min_size=3, max_size=6).map(lambda xs: sp.Add(*xs)),
        st.lists(children, min_size=3, max_size=6).map(lambda xs: sp.Mul(*xs)),
        st.tuples(
            children,
            st.sampled_from([-2, -1, sp.Rational(-1, 2), sp.Rational(1, 2), 2, sp.Rational(3, 2)]),
        ).map(_safe(lambda t: t[0] ** t[1])),
        two.map(_safe(lambda t: sp.Max(*t))),
        two.map(_safe(lambda t: sp.Min(*t))),
        children.map(lambda c: _safe(lambda t: sp.ceiling(t[0]))((c,))),
        st.tuples(children, children, children).map(
            _safe(lambda t: sp.Piecewise((t[0], t[1] > t[2]), (t[2], True)))
        ),
    )


FORMULAS = st.recursive(LEAVES, _extend, max_leaves=12)


def _reference(e: sp.Basic, env: dict) -> object:
    args = sorted(e.free_symbols, key=lambda s: s.name)
    try:
        return sp.lambdify(args, e, modules="math", printer=code_printer())(*[env[a] for a in args])
    except ZeroDivisionError:
        return None


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b and type(a) is type(b)


@settings(max_examples=150, deadline=None)
@given(FORMULAS, ENV_VALUES)
def test_the_walk_is_lambdify_to_the_last_bit(e, values):
    env = dict(zip(SYMS, values, strict=True))
    try:
        ref = _reference(e, env)
    except (OverflowError, ValueError, TypeError):  # 1e300**2, sqrt(-1), a complex power
        return
    try:
        (got,) = evaluate([e], env)
    except (OverflowError, ValueError, TypeError):
        pytest.fail(f"the walk raised where lambdify gave {ref!r} for {e}")
    # A node the walk does not know (ITE, from nested Piecewise conditions) goes to lambdify;
    # the programs' formulas below must all walk.
    assert got is UNSUPPORTED or _same(got, ref), (e, got, ref)


@pytest.mark.parametrize("path", sorted(Path("programs").glob("*.shard")), ids=lambda p: p.stem)
def test_every_formula_of_a_program_walks_to_lambdifys_number(path, in_repo_root):
    r = shardc.compile(str(path))
    env = r.environment()
    fields = (
        "time",
        "flops_per_device",
        "hbm_bytes",
        "comm_bytes",
        "t_math",
        "t_hbm",
        "t_bandwidth",
        "t_latency",
    )
    candidates = [*r.totals.values(), *(getattr(op, f) for op in r.ops for f in fields)]
    formulas = [f for f in candidates if isinstance(f, sp.Basic) and f.free_symbols <= env.keys()]
    assert formulas
    for e, got in zip(formulas, evaluate(formulas, env), strict=True):
        assert _same(got, _reference(e, env)), e


def test_an_unknown_function_is_left_to_lambdify():
    x = sp.Symbol("x")
    assert evaluate([sp.gamma(x), x + 1], {x: 3.0}) == [UNSUPPORTED, 4.0]


def test_division_by_zero_is_none_for_that_formula_only():
    x, y = sp.symbols("x y")
    assert evaluate([x / y, x + y], {x: 1.0, y: 0.0}) == [None, 1.0]


def test_a_sum_adds_its_terms_in_the_printed_order():
    """SymPy keeps `3 + x + x**2*y` as (1/3, x, x**2*y) but prints (and lambdify adds) the terms
    highest degree first; at these values the two orders round differently, so a walk in the
    args' order would not reproduce the report's numbers."""
    x, y = sp.symbols("x y")
    e = x**2 * y + x + sp.Rational(1, 3)
    env = {x: 0.30689956139328145, y: 0.09992497928518063}
    in_args_order = (1 / 3 + env[x]) + env[x] ** 2 * env[y]
    (got,) = evaluate([e], env)
    assert got == _reference(e, env) != in_args_order
