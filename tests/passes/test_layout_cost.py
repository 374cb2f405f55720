"""A device's block: its elements over numbers (the planners) and over SymPy sizes (the
reports) are the same count."""

from __future__ import annotations

import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc.lang.layout import DimSharding, Layout
from shardc.passes.layout_cost import local_elements

AXES = ("X", "Y", "Z")
DIMS = ("I", "J", "K")


@st.composite
def blocks(draw):
    """A layout of up to three dims over up to three axes, the sizes of both, and the names
    left symbolic."""
    dims = DIMS[: draw(st.integers(1, len(DIMS)))]
    axes = list(draw(st.permutations(AXES)))[: draw(st.integers(0, len(AXES)))]
    owner = {a: draw(st.sampled_from(dims)) for a in axes}
    layout = Layout(tuple(DimSharding(d, tuple(a for a in axes if owner[a] == d)) for d in dims))
    sizes = {a: draw(st.sampled_from([1, 2, 3, 4, 8])) for a in axes}
    for d in dims:
        split = 1
        for a in layout.axes_of(d):
            split *= sizes[a]
        sizes[d] = split * draw(st.integers(1, 64))
    free = draw(st.sets(st.sampled_from(sorted(sizes))))
    return layout, sizes, free


@settings(max_examples=200, deadline=None)
@given(blocks())
def test_a_block_has_its_elements_with_sizes_as_numbers_or_as_symbols(case):
    layout, sizes, free = case
    symbols = {n: sp.Symbol(n, positive=True, integer=True) for n in sizes}
    number = local_elements(layout, sizes.__getitem__)
    formula = local_elements(layout, lambda n: symbols[n] if n in free else sizes[n])
    assert not isinstance(number, sp.Basic)
    assert isinstance(formula, sp.Basic) == bool(free & {*layout.dim_names, *layout.sharding_axes})
    whole = 1
    for d in layout.dim_names:
        whole *= sizes[d]
    for a in layout.sharding_axes:
        whole //= sizes[a]
    assert number == whole
    assert float(sp.sympify(formula).xreplace({symbols[n]: sizes[n] for n in free})) == whole
