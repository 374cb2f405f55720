"""The optimality oracle (`shardc.testing.oracle`): no hand-written plan of a contraction costs less
than the compiler's own under its model and objective."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardc.testing.oracle import Problem, cheaper_hand, layouts

EXAMPLES = int(os.environ.get("SHARDC_ORACLE_EXAMPLES", "200"))

ISSUE = Problem("mesh X=4, Y=2\ndim I=1024, J=512, K=2048\nhardware tpu-v5e\n"
                "A: f32[I_X, J]\nB: f32[J, K_X]\n", ("X", "Y"), ("I", "J"), ("J", "K"), "J",
                {"I": ("X",), "K": ()})


def test_no_hand_plan_beats_the_issues_program():
    """Every hand plan of `C[I_X, K] = A ·_J B` on a v5e 4x2 (784 of them: reshards to any
    layout, slices then AllGathers over any run of axes) costs at least the compiler's."""
    assert cheaper_hand(ISSUE) is None


@st.composite
def problems(draw):
    n = draw(st.sampled_from([2, 2, 3]))
    axes = ("X", "Y", "Z")[:n]
    sizes = draw(st.sampled_from([(2, 2), (4, 2), (2, 4), (4, 4)] if n == 2
                                 else [(2, 2, 2), (4, 2, 2), (2, 2, 4)]))
    devices = 1
    for s in sizes:
        devices *= s
    dims = {d: devices * draw(st.sampled_from([1, 4, 16, 64])) for d in "IJK"}
    dtype = draw(st.sampled_from(["bf16", "f32"]))
    a = draw(st.sampled_from(list(layouts(("I", "J"), axes))))
    b = draw(st.sampled_from(list(layouts(("J", "K"), axes))))
    out = draw(st.sampled_from(list(layouts(("I", "K"), axes))))
    hw = draw(st.sampled_from(["tpu-v5e", "tpu-v5p", "h100"]))
    from shardc.testing.oracle import text_of

    head = (f"mesh {', '.join(f'{x}={s}' for x, s in zip(axes, sizes, strict=True))}\n"
            f"dim {', '.join(f'{d}={v}' for d, v in dims.items())}\nhardware {hw}\n"
            f"{text_of('A', a).replace('A[', f'A: {dtype}[')}\n"
            f"{text_of('B', b).replace('B[', f'B: {dtype}[')}\n")
    return Problem(head, axes, ("I", "J"), ("J", "K"), "J", out), draw(st.randoms())


def check(problem: Problem, rnd) -> None:
    """A sample of the problem's hand plans (all of them would take minutes per program)."""
    hands = list(problem.hands())
    found = cheaper_hand(problem, rnd.sample(hands, min(6, len(hands))))
    assert found is None, found


LATENCY = Problem("mesh X=2, Y=2\ndim I=4, J=4, K=4\nhardware h100\nA: bf16[I_XY, J]\n"
                  "B: bf16[J_XY, K]\n", ("X", "Y"), ("I", "J"), ("J", "K"), "J",
                  {"I": ("X", "Y"), "K": ()})


@pytest.mark.xfail(strict=True, reason="a known miss the property found: at latency-bound "
                   "sizes AllGather_Y(B) then the product costs 2.0 us, the compiler's plan 3.0")
def test_the_latency_bound_miss_the_oracle_found():
    hand = ("B0[J_XY, K] = B\nB0gJ1[J_X, K] = AllGather_Y(B0)\n"
            "C[I_XY, K] = A ·_J B0gJ1\n")
    assert cheaper_hand(LATENCY, [LATENCY.head + hand]) is None


# Not in CI yet: it finds misses the search still has (the example above).
@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problems())
def test_no_sampled_hand_plan_beats_the_compiler(drawn):
    problem, rnd = drawn
    check(problem, rnd)


@pytest.mark.slow
@settings(max_examples=5_000, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problems())
def test_no_sampled_hand_plan_beats_the_compiler_5000(drawn):
    problem, rnd = drawn
    check(problem, rnd)
