"""`passes.conditions.vanishes`: its shortcut (a side nonzero with every symbol at 2 is not 0
everywhere) answers as SymPy's `is_zero` does."""

from __future__ import annotations

import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc.passes.conditions import vanishes
from shardc.passes.symbols import figure_symbol, size_symbol

X, Y, B = size_symbol("X"), size_symbol("Y"), size_symbol("B")
W, T = figure_symbol("W_ici"), figure_symbol("t_hop")
SIDES = [
    (X - 1) / (W * X),
    8 * B * sp.floor(X**2 / 4) / (W * X**2) + 4 * B * (Y - 1) / (W * Y),
    T * (X - 2),
    1 / (X - 2),
    sp.Max(B * (X - 1), B * (Y - 1)) / W,
    (X - 1) * (Y - 1) / W,
    sp.Integer(0),
    B * (X * Y - X - Y + 1) / W,
]


def _old(side: sp.Expr, sizes: dict[sp.Symbol, int]) -> bool:
    return side == 0 or bool(sizes and side.xreplace(sizes).is_zero)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(SIDES),
    st.dictionaries(st.sampled_from([X, Y]), st.integers(1, 5), max_size=2),
)
def test_vanishes_answers_as_is_zero(side: sp.Expr, sizes: dict[sp.Symbol, int]) -> None:
    assert vanishes(side, sizes) == _old(side, sizes)
