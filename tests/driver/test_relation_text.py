"""A region's bound in words (`shardc.driver.decision_regions.relation_text`): its roofline Max
terms tidied once per process and printed through the memoized text printer give the text a
fresh `replaced` and `str` give."""

from __future__ import annotations

import sympy as sp
from hypothesis import given, settings

from shardc.driver import decision_regions
from shardc.passes.symbolic_plans import cheaper, replaced, roofline
from tests.passes.test_symbolic_fast_paths import same, times


def _tidied_afresh(e: sp.Basic) -> sp.Basic:
    return replaced(e, {f: decision_regions._tidy(f) for f in e.atoms(sp.Float)})


@settings(max_examples=60, deadline=None)
@given(times, times)
def test_a_bound_with_its_max_terms_tidied_once_is_the_bound_tidied_afresh(a, b):
    rel = cheaper(a, b)
    if isinstance(rel, bool):
        return
    for _ in range(2):  # the second time from the table
        tidy = decision_regions._tidy_numbers(rel)
        assert same(tidy, _tidied_afresh(rel))
        assert decision_regions.text(tidy) == str(tidy)


def test_a_bound_with_roofline_terms_reads_as_before():
    B, D = sp.symbols("B D", positive=True, integer=True)
    a = sp.Float(1.5) * B * D + roofline(B * D / sp.Float(4.0), 2 * D + sp.Float(3.0))
    rel = cheaper(a, 3 * B + roofline(B * D / 8, sp.Float(0.1) * D))
    want = "B*D + Max(0.166667*B*D, 1.33333*D + 2) < 2*B + Max(0.0666667*D, 0.0833333*B*D)"
    assert decision_regions.relation_text(rel) == want
