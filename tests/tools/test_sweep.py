"""`shardc sweep` (shardc.sweep, shardc.cli_sweep): grids, numbers equal to `Report.value`,
crossovers at the solved compute-bound thresholds, output shapes and usage errors."""

from __future__ import annotations

import doctest
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import shardc
import shardc.cli.app
import shardc.hardware
from shardc.testing.strategies import programs
from shardc.tools import sweep as sw
from shardc.tools.sweep import Grid, SweepError, parse_setting, parse_settings
from tests.driver.test_regions import FSDP

DP = "programs/mlp-dp-train.shard"
STRATEGIES = [
    DP,
    "programs/mlp-fsdp-train.shard",
    "programs/mlp-tp-train.shard",
    "programs/mlp-fsdp-tp-train.shard",
]


@pytest.fixture
def cli(monkeypatch, capsys, in_repo_root):
    """`shardc ...` with the sweep extension loaded (whether or not shardc.cli.app lists it yet)."""
    if "shardc.cli.sweep" not in shardc.cli.app.EXTENSIONS:
        monkeypatch.setattr(
            shardc.cli.app, "EXTENSIONS", (*shardc.cli.app.EXTENSIONS, "shardc.cli.sweep")
        )

    def run(*args: str) -> tuple[int, str, str]:
        code = shardc.cli.app.main(["sweep", *args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="module")
def dp():
    from tests.paths import ROOT

    return shardc.compile(ROOT / DP)


# ---- grids ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,expected",
    [
        ("B=4096", ("B", 4096.0)),
        ("B=4M", ("B", 4e6)),
        ("W_ici=1e11", ("W_ici", 1e11)),
        ("B=1e3:1e7:log40", ("B", Grid("B", 1e3, 1e7, 40, "log"))),
        ("F=1k:64k:lin9", ("F", Grid("F", 1e3, 64e3, 9, "lin"))),
        (" X = 2:16:lin15 ", ("X", Grid("X", 2, 16, 15, "lin"))),
    ],
)
def test_parse_setting(text, expected):
    assert parse_setting(text) == expected


def test_grid_values():
    log = Grid("B", 1e3, 1e7, 5, "log").values
    np.testing.assert_allclose(log, [1e3, 1e4, 1e5, 1e6, 1e7])
    np.testing.assert_allclose(Grid("F", 0, 10, 6, "lin").values, [0, 2, 4, 6, 8, 10])


@pytest.mark.parametrize(
    "text,message",
    [
        ("B", "NAME=VALUE"),
        ("B=lots", "not a number"),
        ("B=1e3:1e7", "START:STOP:linN"),
        ("B=1e3:1e7:geo40", "START:STOP:linN"),
        ("B=1e3:1e7:log1", "at least 2 points"),
        ("B=0:1e7:log40", "must be positive"),
        ("B=-1:1:lin5", "must be positive, got -1"),
        ("B=1:1e300:log5", "larger than the limit"),
        ("W_hbm=1e-300:1:log5", "too small"),
        ("B=5:5:lin3", "equal"),
        ("B=1e3:inf:lin3", "not a number"),
    ],
)
def test_bad_settings(text, message):
    with pytest.raises(SweepError, match=message):
        parse_setting(text)


def test_settings_split_and_limits():
    fixed, grids = parse_settings(["D=8192", "B=1:10:lin10"])
    assert fixed == {"D": 8192.0} and [g.name for g in grids] == ["B"]
    with pytest.raises(SweepError, match="nothing to sweep"):
        parse_settings(["D=8192"])
    with pytest.raises(SweepError, match="one or two grid axes"):
        parse_settings(["B=1:2:lin2", "D=1:2:lin2", "F=1:2:lin2"])
    with pytest.raises(SweepError, match="twice"):
        parse_settings(["B=1:2:lin2", "B=4"])


# ---- numbers -------------------------------------------------------------------------------
QUANTITIES = [
    "t_math_s",
    "t_hbm_s",
    "t_comms_s",
    "t_lower_s",
    "flops_per_device",
    "memory_per_device_bytes",
    "intensity",
    "flops_per_s",
    "t_math_s/t_comms_s",
    "2*B*D*F/C + t_hop",
]


def test_one_axis_equals_report_value(dp):
    grid = Grid("B", 1e3, 1e7, 9, "log")
    s = sw.sweep(dp, [grid], QUANTITIES)
    for k in (0, 3, 8):
        b = grid.values[k]
        for q in QUANTITIES:
            expected = dp.value(sw.quantity(dp, q), B=b)
            assert s.values[q][k] == pytest.approx(expected, rel=1e-12), (q, b)


def test_two_axes_equal_report_value(dp):
    grids = [Grid("B", 1e3, 1e7, 7, "log"), Grid("W_ici", 1e10, 1e12, 4, "log")]
    s = sw.sweep(dp, grids, ["t_comms_s", "t_lower_s", "bound"])
    assert s.values["t_comms_s"].shape == (7, 4) and s.bound.shape == (7, 4)
    for i, j in ((0, 0), (3, 2), (6, 3)):
        b, w = grids[0].values[i], grids[1].values[j]
        for q in ("t_comms_s", "t_lower_s"):
            assert s.values[q][i, j] == pytest.approx(dp.value(q, B=b, W_ici=w), rel=1e-12)
        times = {
            k: dp.value(t, B=b, W_ici=w)
            for k, t in (("compute", "t_math_s"), ("hbm", "t_hbm_s"), ("comms", "t_comms_s"))
        }
        assert s.bound[i, j] == max(times, key=times.get)


def test_a_quantity_independent_of_the_grid_is_broadcast(dp):
    s = sw.sweep(dp, [Grid("B", 1, 10, 4, "lin")], ["comm_bytes", "C/W_ici"])
    assert s.values["comm_bytes"].shape == (4,)
    np.testing.assert_allclose(s.values["C/W_ici"], dp.value("C/W_ici"))


def _threshold(report, condition: str, name: str) -> float:
    """Solve a condition `lhs > rhs` for one size with everything else bound (tests only)."""
    rel = next(c.relation for c in report.conditions if c.name == condition)
    env = report.environment()
    x = next(s for s in env if s.name == name)
    env.pop(x)
    real = sp.Symbol(name, positive=True)  # the size is an integer symbol; the root is not
    side = [e.subs(env).xreplace({x: real}) for e in (rel.lhs, rel.rhs)]
    return float(max(sp.solve(sp.Eq(*side), real)))


def test_crossover_at_the_solved_compute_bound_threshold(dp):
    s = sw.sweep(dp, [Grid("B", 1e3, 1e7, 40, "log")])
    found = [c for c in s.crossovers if (c.a, c.b) == ("t_math_s", "t_comms_s")]
    assert len(found) == 1 and found[0].larger_above == "t_math_s"
    # the condition drops the latency terms, which move DP's crossover by well under 1%
    assert found[0].at == pytest.approx(_threshold(dp, "compute-vs-comms", "B"), rel=0.01)
    at = found[0].at
    assert dp.value("t_math_s", B=at) == pytest.approx(dp.value("t_comms_s", B=at), rel=1e-9)


@pytest.mark.parametrize("path", STRATEGIES[:2] + STRATEGIES[3:])
def test_crossover_without_latency_is_the_condition(path, in_repo_root):
    r = shardc.compile(path, set={"t_hop": 1e-100})  # no latency (zero is not a chip figure)
    s = sw.sweep(r, [Grid("B", 1e3, 1e7, 40, "log")])
    found = [c.at for c in s.crossovers if (c.a, c.b) == ("t_math_s", "t_comms_s")]
    assert found == [pytest.approx(_threshold(r, "compute-vs-comms", "B"), rel=1e-9)]


def test_crossovers_per_column_on_two_axes(dp):
    grids = [Grid("B", 1e3, 1e7, 30, "log"), Grid("F", 8192, 65536, 3, "lin")]
    s = sw.sweep(dp, grids, ["t_math_s"])
    found = [c for c in s.crossovers if c.b == "t_comms_s"]
    assert [c.where["F"] for c in found] == pytest.approx(list(grids[1].values))
    for c in found:
        assert dp.value("t_math_s", B=c.at, F=c.where["F"]) == pytest.approx(
            dp.value("t_comms_s", B=c.at, F=c.where["F"]), rel=1e-9
        )


def test_descending_grid_finds_the_same_crossover(dp):
    up = sw.sweep(dp, [Grid("B", 1e3, 1e7, 20, "log")], ["t_math_s"]).crossovers
    down = sw.sweep(dp, [Grid("B", 1e7, 1e3, 20, "log")], ["t_math_s"]).crossovers
    assert [(c.a, c.b, c.larger_above) for c in up] == [(c.a, c.b, c.larger_above) for c in down]
    assert [c.at for c in up] == pytest.approx([c.at for c in down], rel=1e-9)


def test_doctests(in_repo_root):
    result = doctest.testmod(sw, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


# ---- the command ---------------------------------------------------------------------------
def test_table(cli):
    code, out, err = cli(DP, "--set", "B=1e3:1e7:log40")
    assert code == 0 and err == ""
    assert out.startswith(f"shardc sweep: {DP}")
    assert "T_math" in out and "T_comms" in out and "bound" in out and " ms" in out
    assert "crossovers" in out and "T_math = T_comms at B = " in out


def test_table_two_axes_is_compact(cli):
    code, out, _ = cli(
        DP, "--set", "B=1e3:1e7:log100", "--set", "F=1k:64k:lin50", "--y", "t_math_s"
    )
    assert code == 0
    assert "T_math (rows: B, columns: F)" in out and "of 100 x 50 points" in out


def test_json_shape(cli):
    code, out, _ = cli(
        DP,
        "--set",
        "B=1e3:1e7:log6",
        "--set",
        "F=4k:32k:lin3",
        "--y",
        "t_math_s",
        "--y",
        "t_math_s/t_comms_s",
        "--y",
        "bound",
        "--format",
        "json",
    )
    d = json.loads(out)
    assert code == 0
    assert {"grid", "quantities", "points", "seconds", "crossovers"} <= d.keys()
    assert d["points"] == 18 and set(d["grid"]) == {"B", "F"}
    assert list(d["quantities"]) == ["t_math_s", "t_math_s/t_comms_s", "bound"]
    assert all(len(v) == 18 for v in (*d["grid"].values(), *d["quantities"].values()))
    assert d["grid"]["B"][:3] == [1e3, 1e3, 1e3] and d["grid"]["F"][:3] == [4e3, 18e3, 32e3]
    assert set(d["quantities"]["bound"]) <= {"compute", "hbm", "comms"}
    assert isinstance(d["seconds"], float)


def test_json_of_several_programs_is_an_array(cli):
    code, out, _ = cli(*STRATEGIES[:2], "--set", "B=1e3:1e7:log4", "--format", "json")
    d = json.loads(out)
    assert code == 0 and [s["program"] for s in d] == STRATEGIES[:2]


def test_csv(cli):
    code, out, _ = cli(DP, "--set", "B=1e3:1e7:log5", "--y", "t_comms_s", "--format", "csv")
    lines = out.splitlines()
    # the DP step all-gathers activations below B = 5,736 and all-reduces gradients above
    assert code == 0 and lines[0] == "B,t_comms_s,plan" and len(lines) == 6
    assert float(lines[1].split(",")[0]) == 1e3
    assert [line.split(",")[-1] for line in lines[1:]] == ["B", "A", "A", "A", "A"]
    code, out, _ = cli(DP, "--set", "B=1e4:1e7:log5", "--y", "t_comms_s", "--format", "csv")
    assert code == 0 and out.splitlines()[0] == "B,t_comms_s"  # one plan: no column


@pytest.mark.parametrize(("model", "boundary"), [("exact", 7659.4), ("book", 7680)])
def test_each_point_has_the_plan_and_numbers_of_the_compile_at_it(model, boundary):
    """The issue's FSDP step: with B swept, points below the boundary (B = 7,659.4 exact,
    7,680 book) gather activations and points above gather weights, as compiling with B bound
    does; every number agrees."""
    r = shardc.compile(FSDP, model=model, set={"X": 16}, objective="statement")
    grid = Grid("B", 16 * 320, 16 * 640, 9, "lin")  # 5,120 .. 10,240 in steps of 640
    s = sw.sweep(r, [grid], ["t_math_s", "t_hbm_s", "t_comms_s", "t_lower_s"])
    assert [p.letter for p in s.plans] == ["A", "B"]
    (change,) = s.plan_changes
    assert (change.before, change.after) == ("B", "A") and change.at == pytest.approx(
        boundary, rel=1e-5
    )
    for k, b in enumerate(grid.values):
        numeric = shardc.compile(
            FSDP, model=model, set={"X": 16, "B": int(b)}, objective="statement"
        )
        plan = s.plans[int(s.plan[k])]
        assert plan.collectives == sw_collectives(numeric)
        for q in s.shown:
            assert s.values[q][k] == pytest.approx(numeric.value(q), rel=1e-9), (q, b)


def sw_collectives(r):
    """The collectives as a sweep's plan lists them."""
    from shardc.driver.region_totals import collectives

    return collectives(r)


def test_a_crossover_at_a_plan_change_says_so(cli):
    code, out, _ = cli(DP, "--set", "B=1e3:1e7:log9", "--objective", "statement")
    assert code == 0
    assert "plan B -> A at B = 5,736" in out
    assert "T_math = T_comms at B = 5,736   (the plan changes there; T_comms larger above)" in out
    assert "T_math = T_comms at B = 51,137   (T_math larger above)" in out


def test_a_declared_size_is_swept_with_its_plans_but_not_from_python_without_free():
    """The CLI compiles the swept sizes symbolic; from Python, `compile(free=[...])` does."""
    bound = sw.sweep(
        shardc.compile(DP, objective="statement"), [Grid("B", 1e3, 1e7, 5, "log")], ["t_comms_s"]
    )
    assert not bound.plans and "the program's values" in bound.notes[0]
    free = sw.sweep(
        shardc.compile(DP, free=["B"], objective="statement"),
        [Grid("B", 1e3, 1e7, 5, "log")],
        ["t_comms_s"],
    )
    assert len(free.plans) == 2 and free.plan.tolist() == [1, 0, 0, 0, 0]


def test_hardware_symbols_can_be_swept_and_fixed(cli):
    code, out, _ = cli(
        DP,
        "--set",
        "W_ici=1e10:1e12:log3",
        "--set",
        "B=64k",
        "--y",
        "t_comms_s",
        "--format",
        "json",
    )
    d = json.loads(out)
    assert code == 0 and d["fixed"]["B"] == 64e3
    assert d["quantities"]["t_comms_s"][0] > d["quantities"]["t_comms_s"][-1]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--set", "Q=1:10:lin3"], "--set names 'Q', which is not a dimension"),
        (["--set", "B=1:10:lin3", "--set", "Z=3"], "--set names 'Z'"),
        (["--set", "B=1:10:cubic3"], "bad grid '1:10:cubic3' for B"),
        (["--set", "B=1:10:lin3", "--set", "D=1:2:lin2", "--plot", "x.png"], "one grid axis"),
        (["--set", "B=1:10:lin3", "--label", "a", "--label", "b"], "--label given 2 times"),
    ],
)
def test_usage_errors_exit_2_with_one_line(cli, args, message):
    code, out, err = cli(DP, *args)
    assert code == 2 and out == ""
    assert err.startswith("shardc: error: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "y, message, column",
    [
        ("t_math_s +", "unexpected end; expected a name", 10),
        ("t_math_s*Q", "unknown name 'Q' (known: ", 9),
        ("t_math_s/0", "division by zero", 8),
        ("frobnicate(t_math_s)", "unknown function 'frobnicate'", 0),
        ("t_math_s.__class__", "unexpected '.' (no attribute access)", 8),
    ],
)
def test_a_bad_y_formula_is_a_usage_error_with_a_caret(cli, y, message, column):
    code, out, err = cli(DP, "--set", "B=1:10:lin3", "--y", y)
    assert code == 2 and out == ""
    first, text, caret = err.splitlines()
    assert first.startswith(f"shardc: error: --y {y!r}: ") and message in first
    assert text == f"  {y}" and caret == "  " + " " * column + "^"


def test_a_bad_y_formula_is_refused_before_the_compile(cli, monkeypatch):
    import shardc.driver.api

    def compile_(*args, **kwargs):
        raise AssertionError("compiled before reading --y")

    monkeypatch.setattr(shardc.driver.api, "run_pipeline", compile_)
    for y in ("t_math_s +", "t_math_s/0", "frobnicate(t_math_s)", "t_math_s > 1"):
        code, out, err = cli(DP, "--set", "B=1:10:lin3", "--y", y)
        assert code == 2 and out == "" and err.startswith(f"shardc: error: --y {y!r}: "), err


_Y_WORDS = "t_math_s t_comms_s intensity B C Q 0 2 1.5 Max( sqrt( log( frobnicate( .x"
_Y_TOKENS = st.sampled_from([*_Y_WORDS.split(), *"+-*/()>, ", "**"])


@settings(max_examples=200)
@given(st.lists(_Y_TOKENS, min_size=1, max_size=8).map("".join))
def test_what_is_refused_before_the_compile_is_refused_after_it(dp, text):
    """`check_quantity` (before the compile) refuses only what `quantity` (over the report)
    refuses, with the same message."""
    try:
        sw.check_quantity(text)
    except SweepError as before:
        with pytest.raises(SweepError) as after:
            sw.quantity(dp, text)
        assert str(after.value) == str(before)


def test_a_y_formula_that_divides_by_zero_on_the_grid_names_y(cli):
    code, out, err = cli(DP, "--set", "B=1:9:lin3", "--y", "t_math_s/(B - 5)")
    assert code == 2 and "--y 't_math_s/(B - 5)' is not a finite number at B = 5" in err


def test_a_grid_past_the_point_limit_is_refused_before_evaluating(cli):
    from shardc.lang.input_limits import MAX_SWEEP_POINTS

    code, _, err = cli(DP, "--set", f"B=1:1e8:lin{MAX_SWEEP_POINTS + 1}")
    assert code == 2 and "--set B" in err
    code, _, err = cli(DP, "--set", "B=1:1e8:lin4000", "--set", "X=1:1e4:lin4000")
    assert code == 2 and "--set: the grids B (4,000) x X (4,000)" in err


def test_a_quantity_left_symbolic_says_which_symbols(cli):
    code, _, err = cli("programs/two-chip.shard", "--set", "B=1:1e4:log5")
    assert code == 2 and "no value for D, F" in err


def test_program_errors_are_diagnostics(cli, tmp_path):
    bad = tmp_path / "bad.shard"
    bad.write_text("mesh X=2\ndim I=4, J=4\nA: bf16[I_X, J_X]\n")
    code, out, err = cli(str(bad), "--set", "I=1:4:lin4")
    assert code == 1 and out == "" and "error[S002]" in err and "^" in err


def test_plot_without_matplotlib(cli, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, out, err = cli(DP, "--set", "B=1e3:1e7:log4", "--plot", str(tmp_path / "p.png"))
    assert code == 2 and out == ""
    assert err == "shardc: error: --plot needs matplotlib: pip install 'shardc[plot]'\n"
    assert not (tmp_path / "p.png").exists()


# The lines carry each program's plan changes (FSDP + TP's among them); the roofline draws
# several programs' points alike, and without FSDP + TP (half the sweep's 19 s of CPU) it still
# draws three.
@pytest.mark.parametrize(
    ("kind", "programs"),
    [("lines", STRATEGIES), ("roofline", STRATEGIES[:3])],
    ids=["lines", "roofline"],
)
def test_plots_are_written(cli, tmp_path, kind, programs):
    pytest.importorskip("matplotlib")
    target = tmp_path / f"{kind}.png"
    code, _, err = cli(*programs, "--set", "B=1e3:1e7:log12", "--plot", str(target), "--kind", kind)
    assert code == 0 and f"wrote {target}" in err
    assert target.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "hw, grid, code", [("tpu-v5e", "X=1:1024:log5", "H020"), ("h100", "X=1:1e12:log5", "S015")]
)
def test_a_swept_mesh_is_held_to_the_machines_a_compile_accepts(cli, tmp_path, hw, grid, code):
    prog = tmp_path / "m.shard"
    prog.write_text(
        "mesh X\ndim B=65536, D=1024, F=4096\nA: bf16[B_X, D]\nW: bf16[D, F]\n"
        "C[B_X, F] = A ·_D W\n",
        encoding="utf-8",
    )
    status, out, err = cli(str(prog), "--hw", hw, "--set", grid)
    assert status == 2 and out == "" and f"error[{code}]" in err and "--set" in err
    assert cli(str(prog), "--hw", hw, "--set", "X=1:256:log5")[0] == 0


def test_a_plot_never_overwrites_the_programs_own_chip_file(cli, tmp_path):
    """`hardware "./mine.toml"` inside the program: --plot refuses that file as it refuses the
    program itself (the chip is known only once the program is read)."""
    pytest.importorskip("matplotlib")
    chip = (
        Path(shardc.hardware.load("tpu-v5e").path)
        .read_text(encoding="utf-8")
        .replace('name = "tpu-v5e"', 'name = "mine"')
    )
    (tmp_path / "mine.toml").write_text(chip, encoding="utf-8")
    prog = tmp_path / "p.shard"
    prog.write_text(
        'hardware "./mine.toml"\nmesh X=4\ndim B, D=1024, F=4096\n'
        "A: bf16[B_X, D]\nW: bf16[D, F]\nC[B_X, F] = A ·_D W\n",
        encoding="utf-8",
    )
    code, _, err = cli(str(prog), "--set", "B=1e3:1e5:log4", "--plot", str(tmp_path / "mine.toml"))
    assert code == 2 and "refusing to overwrite" in err, err
    assert (tmp_path / "mine.toml").read_text(encoding="utf-8") == chip


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    prog=programs(symbolic=True),
    hw=st.sampled_from(["tpu-v5e", "h100"]),
    model=st.sampled_from(["exact", "book"]),
    pick=st.integers(0, 3),
    step=st.integers(1, 4096),
)
def test_a_sweep_is_the_compile_at_each_point(prog, hw, model, pick, step):
    """Over generated programs: sweeping one symbolic size (whole multiples of its shard count)
    gives, at every point, the collectives and numbers of compiling with the size bound."""
    text, sizes = prog
    assume(sizes)
    var = sorted(sizes)[pick % len(sizes)]
    unit = sizes[var]
    bound = {d: v for d, v in sizes.items() if d != var}
    try:
        r = shardc.compile(text, hw=hw, model=model, set=bound, objective="statement")
    except shardc.CompileError as exc:  # a mesh the chip cannot hold (H016): not this property
        assume(not all(d.code.startswith("H") for d in exc.diagnostics))
        raise
    grid = Grid(var, unit, unit * (1 + 4 * step), 5, "lin")
    s = sw.sweep(r, [grid], ["t_math_s", "t_hbm_s", "t_comms_s"])
    for k, v in enumerate(grid.values):
        numeric = shardc.compile(
            text, hw=hw, model=model, set={**bound, var: int(round(v))}, objective="statement"
        )
        if s.plans:
            assert s.plans[int(s.plan[k])].collectives == sw_collectives(numeric)
        for q in s.shown:
            assert s.values[q][k] == pytest.approx(numeric.value(q), rel=1e-9, abs=1e-300), q


@pytest.mark.parametrize(
    "past, words",
    [
        ("regions", "more than 16 regions"),
        ("statements", "more than 0 statements to lower to find the regions"),
        ("seconds", "more than 0 s of CPU time to find the regions"),
    ],
)
def test_past_the_cap_the_sweep_names_the_limit_hit(monkeypatch, past, words):
    """Where the plans across the grid are too many to find (the regions, the statements to
    lower, or the CPU net), the note names the limit hit, as the report's label does
    (`render.writer.past_text`)."""
    import functools

    import shardc.lang.input_limits as limits
    from shardc.driver import region_totals
    from shardc.passes import symbolic_plans

    r = shardc.compile(FSDP, set={"X": 16}, objective="statement")
    real = symbolic_plans.variants
    if past == "regions":  # the FSDP step's two regions past a cap of one
        monkeypatch.setattr(symbolic_plans, "variants", functools.partial(real, cap=1))
    elif past == "statements":  # past a budget of no statements at all
        monkeypatch.setattr(limits, "REGIONS_STATEMENTS", 0)
        monkeypatch.setattr(region_totals, "REGIONS_STATEMENTS", 0)
    else:  # past a CPU net of no time at all
        monkeypatch.setattr(limits, "REGIONS_NET_SECONDS", 0.0)
    s = sw.sweep(r, [Grid("B", 1e3, 1e6, 7, "log")], ["t_comms_s"])
    assert s.notes[0] == f"{words} across the grid: collectives as chosen at typical sizes"
    # the whole-number points (1e3, 1e4, 1e5, 1e6) are each the compile there
    # (`sweep_points`): at B = 1,000 it moves activations, above it gathers weights
    assert s.plan.tolist() == [1, 0, 0, 0, 0, 0, 0] and len(s.plans) == 2
