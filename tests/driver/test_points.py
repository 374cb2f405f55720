"""`value` at a point (`shardc.driver.points`): a total's name or a formula's text evaluated
where `bindings` give every free size a number is the compile with those sizes bound, also where
no plan is chosen at symbolic sizes (a compile with every size bound plans as the program
declaring them does, `passes.lower.walk.as_declared`, with rules the symbolic report lacks)."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import shardc
from shardc.driver import caches, points
from shardc.driver.objective import varies
from shardc.testing import generate

EXAMPLES = int(os.environ.get("SHARDC_POINT_VALUE_EXAMPLES", "50"))

COPIES = (
    "mesh X=4, Y=2\ndim I=8, J=12, K\nhardware tpu-v5e\nA: bf16[I_Y, J_X, K]\n"
    "B[I_X, J_Y, K] = A\nC = B + A[I_X, J_Y, K]\n"
)
"""A draw of the at-a-point property (K free): the report's formulas gather A over Y and
AllToAll it over X; the compile with K bound (as declared) runs an AllToAll, a permute and an
AllToAll, 849,600 bytes against the formulas' 1,132,800."""

SHOWN = ("comm_bytes", "flops", "t_comms_s", "t_lower_s", "t_upper_s")


def test_a_total_at_the_last_free_size_is_the_compiles():
    r = shardc.compile(COPIES)
    assert not varies(r)  # no plan chosen at symbolic sizes: `value` used to keep the formulas
    numeric = shardc.compile(COPIES, set={"K": 11800})
    assert numeric.value("comm_bytes") == 849_600
    for name in SHOWN:
        assert r.value(name, K=11800) == numeric.value(name), name
        assert r.at(K=11800).value(name) == numeric.value(name), name
    # a formula's text over totals is read at the point's plans too
    assert r.value("comm_bytes / flops", K=11800) == pytest.approx(
        numeric.value("comm_bytes") / numeric.value("flops"), rel=1e-12
    )
    # an expression is evaluated as given: the report's own formula
    formula = r.formula("comm_bytes")
    assert r.value(formula, K=11800) == 1_132_800


FIXED = "mesh X=4\ndim B, D\nhardware tpu-v5e\nIn: bf16[B_X, D]\nOut[B, D] = AllGather_X(In)\n"


def test_where_the_compile_refuses_the_point_value_is_ats():
    """B=6 over 4 shards: the compile there refuses (S004); `value` and `at` both keep the
    report's plans, evaluated at the point (as a grid of sizes expects)."""
    r = shardc.compile(FIXED)
    with pytest.raises(shardc.CompileError, match="S004"):
        shardc.compile(FIXED, set={"B": 6, "D": 8})
    there = r.at(B=6, D=8)
    for name in SHOWN:
        assert r.value(name, B=6, D=8) == there.value(name), name
    assert there.value("comm_bytes") == r.value(r.formula("comm_bytes"), B=6, D=8) == 96


def test_a_point_is_compiled_once_and_the_last_points_are_kept():
    """`value` of each total at one point compiles the point once; a loop over many points
    holds at most `caches.POINTS` reports."""
    r = shardc.compile(COPIES)
    first = r.at(K=64)
    for name in SHOWN:
        r.value(name, K=64)
    assert r.at(K=64) is first
    for k in range(1, caches.POINTS + 8):
        r.value("comm_bytes", K=k)
    assert len(r.memo.points) <= caches.POINTS


def test_a_partial_binding_keeps_the_formulas():
    """With a size still free, a report whose plans do not depend on the sizes evaluates its
    own formulas (one compiled function for every point), as the compile binding only those
    sizes plans."""
    r = shardc.compile(COPIES.replace("dim I=8, J=12, K", "dim I, J, K"))
    assert not varies(r)
    r.value("flops / I", J=12, K=1)
    n = len(r.memo.functions)
    for k in range(2, 40):
        assert r.value("flops / I", J=12, K=k) == r.value(r.formula("flops / I"), J=12, K=k)
    assert len(r.memo.functions) == n and not r.memo.points


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    text=generate.programs(symbolic=True, max_statements=3),
    hw=st.sampled_from(["tpu-v5e", "h100"]),
    scale=st.sampled_from([1, 3, 64, 1475]),
)
@example(text=COPIES.replace("dim I=8, J=12", "dim I=8, J=8"), hw="tpu-v5e", scale=1475)
def test_a_total_at_a_fully_bound_point_is_the_compile_there(text, hw, scale):
    """The default report (no flags), `value` of a total with every free size bound (each a
    multiple of the device count, so every sharding divides it), equals the compile with those
    sizes bound."""
    try:
        r = shardc.compile(text, hw=hw)
    except shardc.CompileError as exc:  # a mesh the chip cannot hold (H016): not this property
        assume(not all(d.code.startswith("H") for d in exc.diagnostics))
        raise
    free = points.free_sizes(r)
    assume(free)
    devices = math.prod(int(n) for _, n in r.program.mesh)
    point = {d: devices * scale for d in sorted(free)}
    numeric = shardc.compile(text, hw=hw, set=point)
    for name in SHOWN:
        want, got = numeric.value(name), r.value(name, **point)
        assert got == pytest.approx(want, rel=1e-9, abs=0), (name, point)
