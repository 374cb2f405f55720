"""A threshold that `derive` solves is the crossover that bisection over numeric compiles finds.

For a generated program with one size left free (the others bound), `derive --solve-for` gives,
for each of the report's conditions, the intervals of that size where it holds, region by region
(`tools.derive_by_region.solve_by_region`). Compiling with the size bound to whole multiples of
its shard count, the condition must hold exactly inside those intervals: at sample sizes, and
at the crossover bisection finds between two samples that disagree, which must sit on a solved
threshold."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import (
    HealthCheck,
    Phase,
    assume,
    currently_in_test_context,
    example,
    given,
    settings,
)
from hypothesis import strategies as st

import shardc
from shardc.testing.strategies import programs
from shardc.tools.derive_by_region import solve_by_region

EXAMPLES = int(os.environ.get("SHARDC_THRESHOLD_EXAMPLES", "150"))
"""150 in CI (about a minute of CPU: the draws grow, so 300 cost three times as much), 10,000
under `-m slow`."""
TOP = 1 << 10
"""Sizes tried: 1 .. TOP times the size's unit (a multiple of its shard count)."""


def derive_name(report_name: str, model: str) -> str:
    """The name `derive` gives a report condition (the whole step's comms condition is its
    accounting's `compute-bound` in the exact model)."""
    if report_name != "compute-vs-comms":
        return report_name
    return "compute-bound" if model == "exact" else "step-compute-vs-comms"


STRATEGY = dict(
    prog=programs(symbolic=True),
    hw=st.sampled_from(["tpu-v5e", "tpu-v5p", "h100"]),
    model=st.sampled_from(["exact", "book"]),
    pick=st.integers(0, 3),
    others=st.lists(st.integers(1, 64), min_size=4, max_size=4),
    samples=st.lists(st.integers(1, TOP), min_size=3, max_size=3),
)


def given_that(condition: object) -> None:
    """`assume` inside the property; a pinned case (the plain tests below) must meet the
    condition instead (Hypothesis deprecates `assume` outside a property)."""
    if currently_in_test_context():
        assume(condition)
    else:
        assert condition


def check_thresholds(prog, hw, model, pick, others, samples):
    text, sizes = prog
    given_that(sizes)
    var = sorted(sizes)[pick % len(sizes)]
    unit = sizes[var]
    bound = {d: s * k for (d, s), k in zip(sorted(sizes.items()), others, strict=False) if d != var}
    try:
        report = shardc.compile(text, hw=hw, model=model, set=bound)
    except shardc.CompileError as exc:  # a mesh the chip cannot hold (H016): not this property
        given_that(not all(d.code.startswith("H") for d in exc.diagnostics))
        raise
    solved = solve_by_region(report, var, solve=False)  # the intervals; not the closed forms
    given_that(solved is not None)  # more regions than the cap: the report says so
    numeric: dict[int, dict[str, bool | None]] = {}

    def holds(k: int) -> dict[str, bool | None]:
        if k not in numeric:
            r = shardc.compile(text, hw=hw, model=model, set={**bound, var: unit * k})
            numeric[k] = {derive_name(c.name, model): r.holds(c.relation) for c in r.conditions}
        return numeric[k]

    for name in holds(1):
        if name not in solved["holds"]:
            continue
        pieces = [p["interval"] for p in solved["holds"][name]]
        edges = sorted({e for lo, hi in pieces for e in (lo, hi)})

        def near_edge(n: float, edges: list[float] = edges) -> bool:
            return any(math.isclose(n, e, rel_tol=1e-6) for e in edges)

        def inside(n: float, pieces: list = pieces) -> bool:
            return any(lo <= n <= hi for lo, hi in pieces)

        ks = sorted({1, TOP, *samples})
        for k in ks:
            got = holds(k).get(name)  # None also where the plan there has no such condition
            if got is not None and not near_edge(unit * k):
                assert inside(unit * k) == got, (name, var, unit * k, pieces)
        for a, b in zip(ks, ks[1:], strict=False):
            at_a, at_b = holds(a).get(name), holds(b).get(name)
            if at_a is None or at_b is None or at_a == at_b:
                continue
            lo, hi = a, b  # bisection over numeric compiles: holds(lo) != holds(hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if holds(mid).get(name) == holds(lo).get(name) else (lo, mid)
            crossing = [e for e in edges if unit * lo * (1 - 1e-9) <= e <= unit * hi * (1 + 1e-9)]
            assert crossing, (name, var, unit * lo, unit * hi, pieces)


# A plan change on the way (I >= 230 runs no collective): the plan there has no
# compute-vs-comms condition, so there is nothing to compare
@example(
    prog=(
        "mesh X=2, Y=3, Z=2\ndim I, J, K, L\nA: bf16[L_ZY, I, J]\nB: bf16[L_ZY, J, K]\n"
        "C = A ·_J B\n",
        {"L": 12, "I": 12, "J": 24, "K": 12},
    ),
    hw="tpu-v5e",
    model="exact",
    pick=0,
    others=[1, 58, 59, 58],
    samples=[1, 1, 1],
)
# Found in CI: with X=1 a condition's communication side is 0, so its ratio divides by zero
# (SymPy's zoo); derive treats it as unbounded and Report.value as having no number.
@example(
    prog=(
        "mesh X=1, Y=2, Z=4\ndim I=8, J=8, K=8, L\nA: bf16[I_XYZ, J]\n"
        "B: bf16[J_XYZ, K]\nC = A ·_J B\n",
        {"L": 8},
    ),
    hw="h100",
    model="exact",
    pick=0,
    others=[1, 1, 1, 1],
    samples=[1, 1, 1],
)
# and a relation whose side is one bound size (X), which substitutes to a plain float
@example(
    prog=(
        "mesh X=2, Y=1, Z=2\ndim I=4, J, K=4, L=4\nA: bf16[I_XYZ, J]\n"
        "B: bf16[J_XYZ, K]\nC[I_ZX, K_Y] = A ·_J B\n",
        {"J": 4},
    ),
    hw="h100",
    model="exact",
    pick=0,
    others=[1, 1, 1, 1],
    samples=[1, 1, 1],
)
@settings(
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # failing draws are not shrunk
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
@given(**STRATEGY)
def test_solved_thresholds_are_the_crossovers_of_numeric_compiles(
    prog, hw, model, pick, others, samples
):
    check_thresholds(prog, hw, model, pick, others, samples)


@pytest.mark.slow
@settings(
    max_examples=10_000,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
@given(**STRATEGY)
def test_solved_thresholds_are_the_crossovers_of_numeric_compiles_10000(
    prog, hw, model, pick, others, samples
):
    check_thresholds(prog, hw, model, pick, others, samples)


def test_a_reduction_tied_in_latency_is_planned_as_at_typical_sizes():
    """A CI draw: A holds partial sums over Y (`{U_Y}`) and is gathered over X for the
    product. With I = 6 the reshard is latency bound: AllReduce_Y + AllGather_X (the fixed
    order) and ReduceScatter_Y + AllGather_XY take five hops each. The report with K free
    prices A's reshard at typical sizes (the second, fewer bytes) and solves compute-vs-comms,
    stated in bandwidth terms, to `K*X/(X*Y + 2*Y - 3) > C/W_ici` (K >= 9850 on a 2x3 v5e);
    the compile at K = 12288 kept the fixed order, whose condition `K*X/(2*(X*Y + Y - 2))`
    holds only from K = 15323. The reshard search now keeps the plan with fewer bytes among
    plans of equal time (passes/reshard_search.py)."""
    check_thresholds(
        (
            "mesh X=2, Y=3\ndim I, J=12, K, L=6\nA: bf16[I, J_X]{U_Y}\nB: bf16[J, K_Y]\n"
            "C = A ·_J B\n",
            {"I": 6, "K": 12},
        ),
        hw="tpu-v5e",
        model="book",
        pick=1,
        others=[1, 1, 1, 1],
        samples=[1, 512, 1000],
    )


def test_no_condition_divides_by_an_axis_of_one():
    """On an h100 mesh whose X (InfiniBand) is 1, every collective's InfiniBand part is 0 (its
    X - 1): neither the report nor `derive` states compute against InfiniBand, whose ratio
    would divide by zero (SymPy's `zoo`, which made the solver's comparison raise). With X = 2
    both do."""
    import sympy as sp

    text = (
        "mesh X={x}, Y=2, Z=4\ndim I=16, J=16, K=8, L\nA: bf16[I_XYZ, J]\n"
        "B: bf16[J_XYZ, K]\nC = A ·_J B\n"
    )
    for x, ib in ((1, False), (2, True)):
        r = shardc.compile(text.format(x=x), hw="h100", model="exact")
        names = {c.name for c in r.conditions}
        # with X = 1 the one level left is NVLink, stated as compute against comms
        assert ("compute-vs-ib" in names) == ib
        assert ("compute-vs-nvlink" if ib else "compute-vs-comms") in names
        assert not any(c.relation.has(sp.zoo, sp.nan) for c in r.conditions)
        solved = solve_by_region(r, "L", solve=False)
        assert solved is not None and ("compute-bound-ib" in solved["holds"]) == ib


def test_a_copy_a_compile_plans_from_is_a_candidate_of_the_report():
    """An explore draw (seed 7): the compile with K bound plans dW1 = In ·_I dTmp from the
    copy of In the forward pass gathered, sliced to [I, J_X] (`contract.cached_operands`);
    the report with K free listed only the plans of In as it is, multiplied In[I, J] and
    sliced dW1 after for 22 <= K < 1399910 (the same step time, comms bound, more backward
    FLOPs), and solved backward-compute-vs-comms to K >= 1570 where the compiles cross at
    2040 < K < 2044. The report now lists the plans from each copy beside the operand's own
    (`contract.copy_sources`) and its regions split where a compile takes the copy."""
    check_thresholds(
        (
            "mesh X=4\ndim I=8, J=4, K, L=8\nIn: bf16[I_X, J]\nparam W1: bf16[J_X, K]\n"
            "param W2: bf16[K, J]\nTmp = In ·_J W1\nOut[I, J_X] = gelu(Tmp) ·_K W2\nbackward\n",
            {"K": 4},
        ),
        hw="tpu-v5p",
        model="exact",
        pick=0,
        others=[4, 43, 48, 14],
        samples=[4, 43, 48],
    )


def test_a_replicated_operand_read_from_hbm_moves_the_threshold():
    """A CI draw: with I bound the compile ranks C's plans by the local product's roofline
    time, and A, replicated and read whole, is HBM bound (about 9 us at I = 18432), so it
    slices A over Y and AllReduces C; the report with I free ranked by communication and math
    alone and gathered B at every I. Both now rank by the roofline time, in the report a Max
    of math and HBM traffic that the regions split on (`passes.lower.contract`)."""
    check_thresholds(
        (
            "mesh X=3, Y=3, Z=1\ndim I, J, K=9, L=9\nA: bf16[I, J]\nB: bf16[J_Y, K_X]\n"
            "C = A ·_J B\nD[I, K_X] = C\nE = gelu(D) * D\n",
            {"J": 9, "I": 18},
        ),
        hw="tpu-v5e",
        model="exact",
        pick=2,
        others=[6, 23, 33, 57],
        samples=[229, 28, 506],
    )


def test_an_option_the_hbm_time_brings_within_reach_is_searched_at_every_point():
    """An explore draw (seed 1): the FFN's backward dIn product has two options within
    `passes.objective.NEAR` of its cheapest where the product's HBM time counts, one where it
    does not. The report with J free counted it only where every size was declared, solved
    backward-compute-vs-comms to J >= 2186, and the compiles cross at 1528 < J < 1532."""
    check_thresholds(
        (
            "mesh X=4\ndim I=4, J, K, L\nIn: bf16[I_X, J]\nparam W1: bf16[J, K]\n"
            "param W2: bf16[K_X, J]\nTmp[I, K] = In ·_J W1\nOut[I, J] = gelu(Tmp) ·_K W2\n"
            "backward\n",
            {"J": 4, "K": 4, "L": 4},
        ),
        hw="tpu-v5p",
        model="exact",
        pick=3,
        others=[1, 1, 1, 1],
        samples=[300, 500, 1000],
    )
