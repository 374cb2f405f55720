"""`Layout.reordered` (shardc.lang.layout): the one spelling of a layout over other dims or
another order, which the planner's reorders use (they were written out by hand six times, and
dropped or swapped the unreduced axes each its own way)."""

from __future__ import annotations

import doctest

import shardc.lang.layout
from shardc.lang.layout import DimSharding, Layout


def test_reordered_keeps_the_unreduced_axes():
    lay = Layout.of({"I": ("X",), "J": ("Y",)}, {"Z"})
    assert lay.reordered(("J", "I")) == Layout(
        (DimSharding("J", ("Y",)), DimSharding("I", ("X",))), frozenset({"Z"})
    )
    assert lay.reordered(("I",)).dim_names == ("I",)  # a broadcast operand's dims
    # another array's partial sums where given, none with an empty set
    assert lay.reordered(("I", "J"), frozenset({"X"})).unreduced == {"X"}
    assert not lay.reordered(("I", "J"), frozenset()).unreduced


def test_doctests():
    assert doctest.testmod(shardc.lang.layout, raise_on_error=False).failed == 0
