"""A sweep's whole-number points are the compile with their sizes bound (`shardc.tools.
sweep_points`), under the default objective: the Python API and the command line, for
T_lower, T_upper, T_comms and comm bytes, also where the compile there runs a plan the regions'
formulas lack."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import shardc
import shardc.cli.app
from shardc.driver import points
from shardc.testing import generate
from shardc.tools import sweep as sw
from shardc.tools import sweep_points
from shardc.tools.sweep_grid import Grid

EXAMPLES = int(os.environ.get("SHARDC_SWEEP_POINTS_EXAMPLES", "12"))
CHECKED = ("t_lower_s", "t_upper_s", "t_comms_s", "comm_bytes")

GATHER = "mesh X=2, Y=2\ndim I, J=32, K=256\nhardware tpu-v5e\nA: f32[I_X, J, K]\nR[I, J, K] = A\n"
"""A draw of the property: the report's formulas (I free) slice A onto the idle Y and gather
over XY; a compile with I bound gathers over X alone while I is small (at I = 4, T_lower
2.46 us against the formulas' 3.09 us)."""


def _sweep_matches_compile(text: str, hw: str, var: str, fixed: dict, grid: Grid) -> None:
    r = shardc.compile(text, hw=hw, set=fixed)
    with pytest.MonkeyPatch.context() as patch:  # the time budget is its own test's
        patch.setattr(sweep_points, "SECONDS", math.inf)
        s = sw.sweep(r, [grid], list(CHECKED))
    for k, v in enumerate(grid.values):
        at = {**fixed, var: int(round(v))}
        try:
            numeric = shardc.compile(text, hw=hw, set=at)
        except shardc.CompileError:  # a point a compile refuses: the formulas, as `value`
            continue
        for q in CHECKED:
            assert s.values[q][k] == pytest.approx(numeric.value(q), rel=1e-9, abs=0), (q, at)
        if s.plans:
            from shardc.driver.region_totals import collectives

            assert s.plans[int(s.plan[k])].collectives == collectives(numeric), at


def test_a_point_whose_compile_runs_another_plan_is_the_compile():
    """Before, the sweep printed the formulas' 3.09 us at I = 4, where the compile gives
    2.46 us; now each point is the compile's, and the table names both plans."""
    r = shardc.compile(GATHER)
    s = sw.sweep(r, [Grid("I", 4, 40, 10, "lin")], list(CHECKED))
    numeric = shardc.compile(GATHER, set={"I": 4})
    assert s.values["t_lower_s"][0] == numeric.value("t_lower_s") < 3.0e-6
    assert [p.collectives for p in s.plans] == ["AllGather_XY(A)", "AllGather_X(A)"]
    assert s.plan.tolist()[:2] == [1, 1] and s.plan.tolist()[-1] == 0
    assert any("differ from the regions' formulas" in n for n in s.notes)
    (change,) = s.plan_changes
    assert (change.before, change.after) == ("B", "A")
    _sweep_matches_compile(GATHER, "tpu-v5e", "I", {}, Grid("I", 4, 40, 10, "lin"))


def test_the_command_line_prints_the_compile_at_each_point(monkeypatch, capsys, tmp_path):
    if "shardc.cli.sweep" not in shardc.cli.app.EXTENSIONS:
        monkeypatch.setattr(
            shardc.cli.app, "EXTENSIONS", (*shardc.cli.app.EXTENSIONS, "shardc.cli.sweep")
        )
    prog = tmp_path / "gather.shard"
    prog.write_text(GATHER.replace("dim I,", "dim I=8,"), encoding="utf-8")
    ys = [a for q in CHECKED for a in ("--y", q)]
    code = shardc.cli.app.main(
        ["sweep", str(prog), "--set", "I=4:40:lin10", *ys, "--format", "json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    for k, i in enumerate(doc["grid"]["I"]):
        numeric = shardc.compile(GATHER, set={"I": int(round(i))})
        for q in CHECKED:
            got = doc["quantities"][q][k]
            assert got == pytest.approx(numeric.value(q), rel=1e-9), (q, i)
    assert doc["plan"][0] == "B" and doc["plans"][1]["collectives"] == "AllGather_X(A)"


def test_only_whole_points_binding_every_free_size_are_compiled():
    two = shardc.compile(GATHER.replace("K=256", "K"))  # I and K free
    assert sweep_points.whole_points(two, [Grid("I", 4, 40, 10, "lin")]) == []
    r = shardc.compile(GATHER)
    got = sweep_points.whole_points(r, [Grid("I", 1e3, 1e6, 7, "log")])
    assert [p["I"] for _, p in got] == [1000, 10000, 100000, 1000000]  # 3162.3 is not whole
    assert [flat for flat, _ in got] == [0, 2, 4, 6]
    bound = shardc.compile(GATHER.replace("dim I,", "dim I=8,"))  # nothing free
    assert sweep_points.whole_points(bound, [Grid("I", 4, 40, 10, "lin")]) == []


def test_past_the_cap_every_point_takes_the_formulas_and_says_so(monkeypatch):
    monkeypatch.setattr(sweep_points, "MAX_COMPILED", 3)
    r = shardc.compile(GATHER)
    s = sw.sweep(r, [Grid("I", 4, 40, 10, "lin")], ["t_lower_s"])
    assert s.values["t_lower_s"][0] == pytest.approx(r.value(r.formula("t_lower_s"), I=4))
    assert any("10 whole-number points to compile, more than the 3 a" in n for n in s.notes)


def test_past_the_time_budget_every_point_takes_the_formulas_and_says_so(monkeypatch):
    monkeypatch.setattr(sweep_points, "SECONDS", 0.0)
    r = shardc.compile(GATHER)
    s = sw.sweep(r, [Grid("I", 4, 40, 10, "lin")], ["t_lower_s"])
    assert s.values["t_lower_s"][0] == pytest.approx(r.value(r.formula("t_lower_s"), I=4))
    assert any("past the 0 s of CPU time a sweep spends" in n for n in s.notes), s.notes


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    text=generate.programs(symbolic=True, max_statements=2),
    hw=st.sampled_from(["tpu-v5e", "h100"]),
    pick=st.integers(0, 3),
    scale=st.sampled_from([1, 3, 64]),
    step=st.sampled_from([1, 7, 300]),
)
@example(
    text=GATHER.replace("dim I, J=32, K=256", "dim I, J=32, K"),
    hw="tpu-v5e",
    pick=0,
    scale=64,
    step=1,
)
def test_a_sweep_at_each_point_is_the_compile_there(text, hw, pick, scale, step):
    """For generated symbolic programs, sweeping one free size (the others bound, every value
    a multiple of the device count) under the default objective gives at every point the
    compile with those sizes bound: T_lower, T_upper, T_comms and comm bytes."""
    try:
        r = shardc.compile(text, hw=hw)
    except shardc.CompileError as exc:  # a mesh the chip cannot hold (H016): not this property
        assume(not all(d.code.startswith("H") for d in exc.diagnostics))
        raise
    free = sorted(points.free_sizes(r))
    assume(free)
    var = free[pick % len(free)]
    devices = math.prod(int(n) for _, n in r.program.mesh)
    fixed = {d: devices * scale for d in free if d != var}
    grid = Grid(var, devices, devices * (1 + 3 * step), 4, "lin")
    assert np.allclose(grid.values / devices, np.round(grid.values / devices))
    _sweep_matches_compile(text, hw, var, fixed, grid)
