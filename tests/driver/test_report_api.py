"""The Python API of a report: names are checked, formulas come back as SymPy, `at` evaluates
the same formulas with more bindings, and agrees with compiling with those bindings."""

from __future__ import annotations

import math

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import shardc
from tests.paths import ROOT

# Every layout is given, so no plan choice depends on the sizes: the symbolic report and the
# numeric compile run the same ops.
FIXED = """mesh X=4, Y=2
dim B, D, F
hardware tpu-v5e
In: bf16[B_X, D]
W: bf16[D, F_Y]
Out[B_X, F_Y] = In ·_D W
Z[B, F_Y] = AllGather_X(Out)
"""


@pytest.fixture(scope="module")
def report():
    return shardc.compile(FIXED)


def test_a_total_by_name_is_its_formula(report):
    assert report.formula("t_math_s") == report.totals["t_math_s"]
    assert isinstance(report.formula("t_comms_s"), sp.Expr)


def test_a_formula_may_name_totals_and_sizes(report):
    ratio = report.formula("t_math_s / t_comms_s")
    assert ratio == report.totals["t_math_s"] / report.totals["t_comms_s"]
    B = sp.Symbol("B", positive=True, integer=True)
    assert report.formula("2*B") == 2 * B


@pytest.mark.parametrize("text", ["t_mth_s", "2*Q", "t_math_s / W_icy"])
def test_an_unknown_quantity_is_an_error_naming_it(report, text):
    bad = text.split("/")[-1].strip().lstrip("2*")
    with pytest.raises(KeyError, match=repr(bad)):
        report.value(text)
    with pytest.raises(KeyError, match=repr(bad)):
        report.formula(text)


def test_an_unknown_binding_is_an_error_naming_it(report):
    with pytest.raises(KeyError, match="'b'"):
        report.value("t_math_s", b=4096)
    with pytest.raises(KeyError, match="'b'"):
        report.at(b=4096)


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf])
def test_a_binding_must_be_positive_and_finite(report, bad):
    with pytest.raises(ValueError, match="^B (must|=)"):
        report.value("t_math_s", B=bad)


def test_a_size_bound_by_at_must_be_whole(report):
    with pytest.raises(ValueError, match="whole"):
        report.at(B=1.5)


def test_at_leaves_the_report_as_it_was(report):
    before = dict(report.totals)
    r = report.at(B=8192, D=4096, F=16384)
    assert report.value("t_math_s") is None
    assert report.totals == before
    for key in ("t_math_s", "t_lower_s", "comm_bytes"):
        assert r.value(key) == report.value(key, B=8192, D=4096, F=16384), key


def test_value_with_bindings_reuses_one_compiled_function(report):
    """B, D and F are every size the report leaves free: each point is read from the compile
    there (kept per point, tests/driver/test_points.py), and the report's own compiled
    functions do not grow with the points."""
    report.value("t_comms_s", B=1024, D=1024, F=1024)
    n = len(report._functions)
    for b in range(2048, 2048 + 50):
        report.value("t_comms_s", B=b, D=1024, F=1024)
    assert len(report._functions) == n


sizes = st.integers(1, 1 << 16).map(lambda k: 8 * k)


@settings(max_examples=40, deadline=None)
@given(b=sizes, d=sizes, f=sizes)
def test_symbolic_at_a_point_equals_compiling_at_it(report, b, d, f):
    """No choice depends on a size here: the symbolic formulas at (B, D, F) are the numbers a
    compile with B, D and F bound gives."""
    point = {"B": b, "D": d, "F": f}
    numeric = shardc.compile(FIXED, set=point)
    symbolic = report.at(**point)
    assert [c.op for c in numeric.ops] == [c.op for c in symbolic.ops]
    for c_num, c_sym in zip(numeric.ops, symbolic.ops, strict=True):
        assert numeric.value(c_num.comm_bytes) == symbolic.value(c_sym.comm_bytes)
    for name in report.totals:
        want, got = numeric.value(name), symbolic.value(name)
        assert want == pytest.approx(got, rel=1e-9, abs=0), name


@pytest.mark.parametrize("bad", [1.5, 2**63, 1e300])
def test_a_size_bound_by_at_is_in_the_domain_of_set(report, bad):
    with pytest.raises(ValueError, match="whole number from 1 to 2\\*\\*63 - 1"):
        report.at(B=bad)


def test_utilization_is_model_flops_over_the_step():
    """MFU counts each einsum once over the mesh; HFU every FLOP a device runs, recomputation
    included; both against the scheduled step and the chip's bf16 peak."""

    import shardc as api

    path = ROOT / "programs" / "mlp-fsdp-train.shard"
    r = api.compile(path)
    u = r.utilization()
    step, peak = r.scheduled_step(), r.chip.flops_for("bf16")[0]
    einsums = sum(r.value(c.flops * c.count) for c in r.ops if c.kind == "einsum")
    assert u["model_flops"] == einsums
    assert u["mfu"] == pytest.approx(einsums / (16 * peak * step))
    assert u["hfu"] == pytest.approx(r.value("flops_per_device") / (peak * step))
    block = api.compile(path, remat="block").utilization()
    # Remat lowers MFU (a longer step, the same model FLOPs); HFU counts the recomputation.
    assert block["mfu"] < u["mfu"] < u["hfu"] and block["mfu"] < block["hfu"]
    assert api.compile(path, hw=None).utilization() is not None  # the program's own chip


def test_notebook_views():
    """repr is one line; _repr_html_ shows the summary with LaTeX formulas, the training memory
    and the ops (collapsible); the DataFrames need pandas and say so without it."""
    import sys

    path = ROOT / "programs" / "mlp-fsdp-train.shard"
    r = shardc.compile(path)
    assert len(repr(r)) < 200 and "tpu-v5p" in repr(r) and "\n" not in repr(r)
    h = r._repr_html_()
    assert "<table>" in h and "\\(\\frac{12 B D F}{C X}\\)" in h
    assert "memory per device, training step" in h and f"<summary>{len(r.ops)} ops" in h
    saved = sys.modules.get("pandas")
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        with pytest.raises(ImportError, match="pandas"):
            r.ops_frame()
    finally:
        if saved is None:
            del sys.modules["pandas"]
        else:
            sys.modules["pandas"] = saved


def test_data_frames():
    pd = pytest.importorskip("pandas")

    r = shardc.compile(ROOT / "programs" / "mlp-fsdp-train.shard")
    ops, arrays = r.ops_frame(), r.arrays_frame()
    assert isinstance(ops, pd.DataFrame) and len(ops) == len(r.ops)
    assert ops["time_s"].sum() > 0 and set(arrays.index) >= {"W_in", "W_out"}
