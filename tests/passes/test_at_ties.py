"""Exact ties between plans break alike at a point and in a compile with the point's sizes bound:
a symbolic report's candidate times hold floats (`1.33333333333333*J` with no chip, where the
planning figures are W=1.0), and evaluating them from 15 printed digits instead of the double
made a tie at J=3 a win for another plan."""

from __future__ import annotations

import sympy as sp

import shardc
from shardc.passes.symbolic_plans import AtPoint, Candidate, evaluate, winners
from tests.driver.test_regions import assert_same

TIED = """mesh X=1, Y=3
dim I=3, J, K=3
A: bf16[I_X, J_Y]
B: bf16[J_X, K_Y]
C[I_XY, K] = A ·_J B
"""


def test_a_tie_at_a_point_breaks_as_the_compile_at_it():
    r = shardc.compile(TIED)
    assert_same(r.at(J=3), shardc.compile(TIED, set={"J": 3}))


def test_a_candidate_time_evaluates_from_its_double():
    J = sp.Symbol("J", positive=True, integer=True)
    third = 12 * J / sp.Float(9.0)  # 1.33333333333333*J as printed
    assert evaluate(third + 12, {"J": 3.0}) == 16.0
    tied = [Candidate(0, third + 12, J, 3), Candidate(1, 4 * J + 4, J, 2)]
    assert AtPoint({"J": 3.0}).choose(0, tied) == 1  # equal times: fewer collectives
    import numpy as np

    assert winners(tied, {"J": np.array([3.0])}).tolist() == [1]
