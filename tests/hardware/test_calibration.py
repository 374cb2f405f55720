"""Calibration files (hardware.calibration), the expected time they give (T_expected), the fit
(shardc.tools.calibrate.fit) and `shardc calibrate`."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys

import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shardc
from shardc import hardware
from shardc.cli.app import main
from shardc.hardware.calibration import (
    MAX_ROWS,
    Calibration,
    ClockFit,
    Row,
    calibration_toml,
    read_calibration_toml,
)
from shardc.testing.strategies import programs
from shardc.tools.calibrate.fit import fit, predict
from tests.paths import ROOT

MATMUL = "dim M=512, K=8192, N=8192\nA: bf16[M, K]\nW: bf16[K, N]\nC = A ·_K W\n"
GOOD = """chip = "h200"
[matmul]
efficiency = 0.5
[hbm]
efficiency = 0.8
[call]
launch_s = 1e-5
dispatch_s = 3e-5
[provenance]
kind = "published"
source = "a vendor page"
"""


def _bad(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


HOSTILE = {
    "efficiency zero": (_bad("efficiency = 0.5", "efficiency = 0"), ":3:", "(0, 1]"),
    "efficiency above one": (_bad("efficiency = 0.8", "efficiency = 1.5"), ":5:", "(0, 1]"),
    "negative floor": (_bad("launch_s = 1e-5", "launch_s = -1e-5"), ":7:", "launch_s"),
    "nan": (_bad("efficiency = 0.5", "efficiency = nan"), ":3:", "finite"),
    "inf floor": (_bad("dispatch_s = 3e-5", "dispatch_s = inf"), ":8:", "finite"),
    "string": (_bad("efficiency = 0.5", 'efficiency = "high"'), ":3:", "number"),
    "unknown key": (_bad("launch_s", "lunch_s"), ":7:", "did you mean 'launch_s'"),
    "unknown table": (GOOD + "[extra]\nx = 1\n", "", "unknown field 'extra'"),
    "missing table": (GOOD.replace("[hbm]\nefficiency = 0.8\n", ""), "", "missing table [hbm]"),
    "no source": (_bad('source = "a vendor page"', 'date = "2026"'), ":10:", "[provenance].source"),
    "measured without command": (
        _bad('kind = "published"', 'kind = "measured"'),
        ":10:",
        "[provenance].command",
    ),
    "other chip": (_bad('chip = "h200"', 'chip = "h100"'), ":1:", "'h100'"),
    "huge table": (
        GOOD
        + "".join(
            '[[rows]]\ncase = "x"\nkind = "matmul"\ndtype = "bf16"\nflops = 1\nbytes = 1\n'
            "median_s = 1\nmin_s = 1\np90_s = 1\n"
            for _ in range(MAX_ROWS + 1)
        ),
        "",
        "limit",
    ),
    "negative row": (
        GOOD + '[[rows]]\ncase = "x"\nkind = "matmul"\ndtype = "bf16"\n'
        "flops = 1\nbytes = 1\nmedian_s = -1\nmin_s = 1\np90_s = 1\n",
        ":18:",
        "positive",
    ),
    "not toml": ("chip = ", "", "not valid TOML"),
    "boost below sustained": (
        GOOD + "[clock]\nboost_mhz = 1500\nsustained_mhz = 1725\n",
        ":13:",
        "at least [clock].sustained_mhz",
    ),
    "zero clock": (GOOD + "[clock]\nboost_mhz = 1980\nsustained_mhz = 0\n", ":14:", "above 0"),
    "nan clock": (GOOD + "[clock]\nboost_mhz = nan\nsustained_mhz = 1725\n", ":13:", "finite"),
    "clock without sustained": (
        GOOD + "[clock]\nboost_mhz = 1980\n",
        "",
        "missing field [clock].sustained_mhz",
    ),
    "exposed above one": (
        _bad("efficiency = 0.5", "efficiency = 0.5\nexposed = 1.5"),
        ":4:",
        "from 0 to 1",
    ),
    "exposed negative": (
        _bad("efficiency = 0.5", "efficiency = 0.5\nexposed = -0.1"),
        ":4:",
        "from 0 to 1",
    ),
    "exposed nan": (_bad("efficiency = 0.5", "efficiency = 0.5\nexposed = nan"), ":4:", "finite"),
    "unknown clock key": (
        GOOD + "[clock]\nboost_mhz = 1980\nsustain_mhz = 1725\n",
        ":14:",
        "did you mean 'sustained_mhz'",
    ),
    "bad precision": (
        GOOD + '[[rows]]\ncase = "x"\nkind = "matmul"\ndtype = "f32"\n'
        'precision = "extreme"\nflops = 1\nbytes = 1\nmedian_s = 1\nmin_s = 1\n'
        "p90_s = 1\n",
        ":16:",
        "default, high, highest",
    ),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_calibration_gets_a_diagnostic_naming_file_and_line(name):
    text, line, words = HOSTILE[name]
    with pytest.raises(hardware.HardwareError) as info:
        read_calibration_toml(text, "cal.toml", "h200")
    message = str(info.value)
    assert message.startswith(f"cal.toml{line}"), message
    assert words in message


@pytest.mark.parametrize("name", ["efficiency zero", "nan", "huge table", "not toml"])
def test_the_cli_reports_a_hostile_calibration_without_a_traceback(name, tmp_path, capsys):
    prog = tmp_path / "mm.shard"
    prog.write_text(MATMUL)
    cal = tmp_path / "cal.toml"
    cal.write_text(HOSTILE[name][0])
    code = main(["compile", str(prog), "--hw", "h200", "--calibration", str(cal)])
    err = capsys.readouterr().err
    assert code == 1
    assert "error[H001]" in err and str(cal) in err and "Traceback" not in err


def test_calibration_needs_a_chip(tmp_path, capsys):
    prog = tmp_path / "mm.shard"
    prog.write_text(MATMUL)
    assert main(["compile", str(prog), "--calibration", str(tmp_path / "x.toml")]) == 2
    assert "--calibration needs --hw" in capsys.readouterr().err


def test_a_calibration_file_reads_back_equal():
    c = read_calibration_toml(GOOD, "h200.toml", "h200")
    assert c.values() == {"eta_mxu": 0.5, "eta_hbm": 0.8, "t_call": 1e-5, "t_dispatch": 3e-5}
    assert read_calibration_toml(calibration_toml(c), "again.toml", "h200") == c


@pytest.mark.parametrize("name", hardware.available())
def test_every_shipped_chip_has_a_valid_calibration_or_none(name):
    chip = hardware.load(name)
    cal = chip.calibration
    if cal is None:
        return
    assert cal.chip == chip.name
    assert 0 < cal.eta_mxu <= 1 and 0 < cal.eta_hbm <= 1
    assert cal.t_call >= 0 and cal.t_dispatch >= 0
    assert read_calibration_toml(calibration_toml(cal), "x.toml", name) == cal


def test_a_chip_without_calibration_expects_the_roofline():
    r = shardc.compile(MATMUL, hw="b200")
    assert r.chip.calibration is None
    assert r.totals["t_expected_s"] == r.totals["t_lower_s"]
    assert all(c.t_expected == c.time for c in r.ops)
    assert "T_expected equals T_lower: b200 has no calibration" in r.to_text()


def test_the_h200_calibration_gives_the_fitted_expectation():
    r = shardc.compile(MATMUL, hw="h200")
    cal = r.chip.calibration
    op = r.ops[-1]
    flops, moved = 2 * 512 * 8192 * 8192, 2 * (512 * 8192 * 2 + 8192 * 8192)
    math, hbm = flops / (cal.eta_mxu * 9.89e14), moved / (cal.eta_hbm * 4.8e12)
    # the power cap: math at the boost clock after the launch, at least math at the
    # power-limited clock
    assert cal.clock is not None and cal.k_boost == pytest.approx(1980 / 1725)
    fast = math / cal.k_boost
    assert cal.exposed is not None and 0 < cal.exposed < 1
    expected = max(cal.t_call + max(fast, hbm + cal.exposed * fast), math)
    assert r.value(op.t_expected) == pytest.approx(expected, rel=1e-9)
    assert r.value(r.totals["t_expected_s"]) == pytest.approx(
        max(cal.t_dispatch, expected), rel=1e-9
    )
    text = r.to_text()
    assert "T_expected" in text and "calibration of h200" in text


def test_json_totals_and_ops_carry_t_expected():
    r = shardc.compile(MATMUL, hw="h200")
    doc = json.loads(r.to_json())
    total = doc["totals"]["t_expected_s"]
    assert set(total) >= {"expr", "value"} and "eta_mxu" in total["expr"]
    assert total["value"] == pytest.approx(r.value(r.totals["t_expected_s"]))
    assert all("t_expected_s" in op and "value" in op["t_expected_s"] for op in doc["ops"])
    assert "calibration of h200" in doc["totals"]["calibration"]


def test_markdown_and_latex_show_both_estimates():
    r = shardc.compile(MATMUL, hw="h200")
    md, tex = r.to_markdown(), r.to_latex()
    assert "| T_lower |" in md and "| T_expected |" in md and "| expected |" in md
    assert "T\\_expected" in tex and "\\eta_{\\mathrm{mxu}}" in tex


def test_set_binds_an_efficiency_within_zero_and_one():
    r = shardc.compile(MATMUL, hw="h200", set={"eta_mxu": 0.25})
    base = shardc.compile(MATMUL, hw="h200")
    assert r.value(r.totals["t_expected_s"]) > base.value(base.totals["t_expected_s"])
    with pytest.raises(shardc.CompileError, match="at most 1"):
        shardc.compile(MATMUL, hw="h200", set={"eta_mxu": 1.5})
    assert shardc.compile(MATMUL, hw="h200", set={"c_expose": 0}).totals  # 0 hides it all
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(shardc.CompileError, match="c_expose"):
            shardc.compile(MATMUL, hw="h200", set={"c_expose": bad})


TPU = dataclasses.replace(
    hardware.load("tpu-v5e"),
    calibration=Calibration(
        "tpu-v5e",
        1.0,
        1.0,
        0.0,
        0.0,
        "published",
        (("kind", "published"), ("source", "a test")),
        clock=ClockFit(1980.0, 1725.0),
        exposed=0.4,
    ),
)
"""A chip whose calibration the property's bindings replace (any mesh fits a TPU torus)."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    programs(),
    st.floats(0.01, 1.0),
    st.floats(0.01, 1.0),
    st.floats(1e-9, 1e-3),
    st.floats(1e-9, 1e-3),
    st.floats(0.5, 4.0),
    st.floats(0.0, 1.0),
)
def test_t_expected_is_never_below_t_lower(
    prog, eta_mxu, eta_hbm, t_call, t_dispatch, k_boost, c_expose
):
    """Each op's expected time is at least its math and HBM time (the power cap keeps the
    math at the power-limited clock whatever k_boost is), and the program's at least the sum
    over ops (and the communication), so T_expected >= T_lower for any calibration."""
    text, _ = prog
    r = shardc.compile(
        text,
        hw=TPU,
        set={
            "eta_mxu": eta_mxu,
            "eta_hbm": eta_hbm,
            "t_call": t_call,
            "t_dispatch": t_dispatch,
            "k_boost": k_boost,
            "c_expose": c_expose,
        },
    )
    lower, expected = r.value(r.totals["t_lower_s"]), r.value(r.totals["t_expected_s"])
    assert lower is not None and expected is not None
    assert expected >= lower * (1 - 1e-12)
    for c in r.ops:
        assert r.value(c.t_expected) >= r.value(c.time) * (1 - 1e-12)


def test_the_fit_recovers_known_figures():
    rate, w = 1e15, 5e12
    truth = dict(eta_mxu=0.7, eta_hbm=0.85, t_call=1e-5, t_dispatch=3e-5)
    rows = [Row("dispatch", "dispatch", "bf16", 0, 0, 3e-5, 3e-5, 3e-5)]
    for m in (64, 256, 1024, 4096, 16384):
        r = Row(
            f"mm{m}",
            "matmul",
            "bf16",
            2.0 * m * 8192 * 8192,
            2.0 * (2 * m * 8192 + 8192 * 8192),
            1,
            1,
            1,
        )
        rows.append(r)
    for mib in (64, 256, 1024):
        rows.append(Row(f"ew{mib}", "elementwise", "bf16", 0, 3 * mib * 2.0**20, 1, 1, 1))
    timed = []
    for r in rows:
        t = predict(r, rate, w, **truth)
        timed.append(Row(r.case, r.kind, r.dtype, r.flops, r.bytes, t, t, t))
    f = fit(timed, lambda d, p: rate, w)
    assert f.eta_mxu == pytest.approx(0.7, abs=0.003)
    assert f.eta_hbm == pytest.approx(0.85, abs=0.003)
    assert f.t_call == pytest.approx(1e-5, rel=0.05)
    assert f.t_dispatch == pytest.approx(3e-5)
    assert all(abs(res) < 0.01 for _, res in f.residuals())


def test_the_fit_recovers_known_figures_under_the_power_cap():
    """With the clocks given (k_boost, not fitted) the fit finds the same figures again, the
    exposed share of a memory-bound product's math among them, and a long product's time is
    its math at the power-limited clock: no launch cost added."""
    rate, w, k = 1e15, 5e12, 1980 / 1725
    truth = dict(eta_mxu=0.68, eta_hbm=0.9, t_call=1.2e-5, t_dispatch=3.8e-5, exposed=0.4)
    rows = [Row("dispatch", "dispatch", "bf16", 0, 0, 3.8e-5, 3.8e-5, 3.8e-5)]
    for m in (16, 128, 256, 512, 1024, 4096, 16384):
        rows.append(
            Row(
                f"mm{m}",
                "matmul",
                "bf16",
                2.0 * m * 8192 * 8192,
                2.0 * (2 * m * 8192 + 8192 * 8192),
                1,
                1,
                1,
            )
        )
    for mib in (64, 256, 1024):
        rows.append(Row(f"ew{mib}", "elementwise", "bf16", 0, 3 * mib * 2.0**20, 1, 1, 1))
    timed = []
    for r in rows:
        t = predict(r, rate, w, **truth, k_boost=k)
        timed.append(Row(r.case, r.kind, r.dtype, r.flops, r.bytes, t, t, t))
    f = fit(timed, lambda d, p: rate, w, k, exposed=True)
    assert f.eta_mxu == pytest.approx(0.68, abs=0.003)
    assert f.eta_hbm == pytest.approx(0.9, abs=0.003)
    assert f.t_call == pytest.approx(1.2e-5, rel=0.05)
    assert f.exposed == pytest.approx(0.4, abs=0.02)
    assert all(abs(res) < 0.01 for _, res in f.residuals())
    long = rows[6]
    assert predict(long, rate, w, **truth, k_boost=k) == pytest.approx(long.flops / (0.68 * rate))


@pytest.mark.parametrize("m", [16, 128, 512, 16384])
def test_the_power_cap_at_a_point_is_the_compile_at_it(m):
    """With M symbolic, `at` and `value` of T_expected on h200 (each branch of the power cap:
    memory-bound, math at the boost clock, math at the power-limited clock) equal the compile
    at that M."""
    text = "dim M, K=8192, N=8192\nA: bf16[M, K]\nW: bf16[K, N]\nC = A ·_K W\n"
    r = shardc.compile(text, hw="h200")
    numeric = shardc.compile(text, hw="h200", set={"M": m})
    want = numeric.value(numeric.totals["t_expected_s"])
    assert r.at(M=m).value(r.at(M=m).totals["t_expected_s"]) == pytest.approx(want, rel=1e-12)
    assert r.value(r.totals["t_expected_s"], M=m) == pytest.approx(want, rel=1e-12)


def test_a_clock_table_reads_back_and_sets_k_boost():
    cal = read_calibration_toml(
        GOOD.replace("efficiency = 0.5", "efficiency = 0.5\nexposed = 0.25")
        + "[clock]\nboost_mhz = 1980\nsustained_mhz = 1725\npower_w = 566\n",
        "x.toml",
    )
    assert cal.clock == ClockFit(1980.0, 1725.0, 566.0) and cal.exposed == 0.25
    assert read_calibration_toml(calibration_toml(cal), "x.toml") == cal
    assert read_calibration_toml(GOOD, "x.toml").k_boost == 1.0
    base = shardc.compile(MATMUL, hw="h200")
    assert base.value(sp.Symbol("k_boost", positive=True)) == pytest.approx(1980 / 1725)
    slow = shardc.compile(MATMUL, hw="h200", set={"k_boost": 1.0})
    assert slow.value(slow.totals["t_expected_s"]) > base.value(base.totals["t_expected_s"])
    thin = "dim M=128, K=8192, N=8192\nA: bf16[M, K]\nW: bf16[K, N]\nC = A ·_K W\n"
    hidden = shardc.compile(thin, hw="h200", set={"c_expose": 0.0})
    exposed = shardc.compile(thin, hw="h200")
    assert exposed.value(exposed.totals["t_expected_s"]) > hidden.value(
        hidden.totals["t_expected_s"]
    )


def _validate_one_chip():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import validate_one_chip as v
    finally:
        sys.path.pop(0)
    return v


MEASURED = ROOT / "benchmarks" / "one_chip" / "measured"


@pytest.mark.parametrize(
    "name, rows",
    [
        ("h200", None),
        ("h100", None),
        # another card's run, priced with the shipped H200 calibration
        ("h200", MEASURED / "h200-run1.toml"),
        *[("h100", MEASURED / f"h100-run{i}.toml") for i in (1, 2, 3)],
    ],
)
def test_the_roofline_is_a_bound_on_every_measured_row(name, rows):
    """T_lower is at or below the fastest measured call of every single-op row measured on a GPU
    (the shipped calibrations' rows and each kept run), the fused silu(A) * B and the f16 and
    f32 products at each precision included; T_expected is at or above T_lower. (How close
    T_expected comes is docs/validation.md's tables, not a test.)"""
    v = _validate_one_chip()
    chip = hardware.load(name)
    measured = chip.calibration.rows
    if rows is not None:
        measured = hardware.load_calibration(rows, chip).calibration.rows
    assert len(measured) >= 29
    for row in measured:
        if row.kind == "dispatch":
            continue
        r = shardc.compile(v.program(row.case), hw=chip, matmul_precision=row.precision)
        assert r.value(r.totals["t_lower_s"]) <= row.min_s, row.case
        assert r.value(r.totals["t_expected_s"]) >= r.value(r.totals["t_lower_s"])


def test_the_whole_programs_measured_on_one_chip_stay_above_t_lower():
    """Each program of benchmarks/one_chip/, timed as one jit on an H100 and an H200, took at
    least T_lower on its fastest call."""
    v = _validate_one_chip()
    for name in ("h100", "h200"):
        measured = v.read_programs(str(MEASURED / f"programs-{name}.txt"))
        assert len(measured) == 4
        for program, (median, low) in measured.items():
            r = shardc.compile((v.PROGRAMS / f"{program}.shard").read_text(), hw=name)
            assert r.value(r.totals["t_lower_s"]) <= low <= median, (name, program)


def test_every_full_calibration_case_has_a_one_op_program():
    """The cases `shardc calibrate` times on a GPU are the ones the validation can price:
    benchmarks/validate_one_chip.py builds each one's program, and shardc counts in it the
    HBM bytes (and, in a product, the FLOPs) the bench says the case does."""
    from shardc.tools.calibrate import bench

    v = _validate_one_chip()
    for case in bench.plan(quick=False, cpu=False).cases:
        if case.kind == "dispatch":
            continue
        r = shardc.compile(
            v.program(case.name), hw="h100", matmul_precision=case.row(1, 1, 1).precision
        )
        if case.kind == "matmul":  # the bench counts no FLOPs in an elementwise op
            assert r.value(r.totals["flops"]) == case.flops, case.name
        assert r.value(r.totals["hbm_bytes"]) == case.bytes, case.name
        assert v.row(case.name, 1.0, 1.0, 1.0) == case.row(1.0, 1.0, 1.0)


def _run(case: str, t: float, mhz: float | None) -> Calibration:
    rows = (
        Row("dispatch", "dispatch", "bf16", 0.0, 0.0, 4e-5, 4e-5, 4e-5),
        Row(case, "matmul", "bf16", 2 * 8192.0**3, 3 * 2 * 8192.0**2, t, 0.9 * t, 1.1 * t),
        Row("ew_add_256MiB", "elementwise", "bf16", 0.0, 3 * 2**28, 2.8e-4, 2.7e-4, 2.9e-4),
    )
    return Calibration(
        "h100",
        0.7,
        0.9,
        1e-5,
        4e-5,
        "measured",
        (
            ("kind", "measured"),
            ("command", "shardc calibrate --hw h100"),
            ("date", "2026-01-02"),
            ("software", "jax 1"),
            ("device", "d"),
            ("fit", "least squares"),
        ),
        rows,
        clock=ClockFit(1980.0, mhz, 690.0) if mhz is not None else None,
    )


def test_calibrate_from_fits_the_median_of_earlier_runs(tmp_path, capsys):
    """`--from` times nothing: each case at its median over the runs, the least minimum, the
    clocks' medians; the shipped flash-attention and network tables are carried over."""
    paths = []
    for i, (t, mhz) in enumerate(((1.6e-3, 1400.0), (1.7e-3, 1500.0), (1.5e-3, None))):
        path = tmp_path / f"run{i}.toml"
        path.write_text(calibration_toml(_run("square_8192", t, mhz)))
        paths.append(str(path))
    out = tmp_path / "merged.toml"
    assert main(["calibrate", "--hw", "h100", "--from", *paths, "-o", str(out)]) == 0
    assert "eta_mxu" in capsys.readouterr().out
    shipped = hardware.load("h100").calibration
    cal = hardware.load_calibration(out, hardware.load("h100")).calibration
    square = next(r for r in cal.rows if r.case == "square_8192")
    assert square.median_s == pytest.approx(1.6e-3) and square.min_s == pytest.approx(1.35e-3)
    assert cal.clock == ClockFit(1980.0, 1450.0, 690.0)
    assert cal.attention == shipped.attention and cal.network == shipped.network
    prov = dict(cal.provenance)
    assert "--from run0.toml run1.toml run2.toml" in prov["command"]
    assert "the median of 3 runs" in prov["device"]


def test_calibrate_from_refuses_what_it_cannot_merge(tmp_path, capsys):
    a = tmp_path / "a.toml"
    a.write_text(calibration_toml(_run("square_8192", 1e-3, 1400.0)))
    other = tmp_path / "other.toml"  # the same case name, another shape's work
    changed = _run("square_8192", 1e-3, 1400.0)
    changed = dataclasses.replace(
        changed, rows=tuple(dataclasses.replace(r, flops=r.flops * 2) for r in changed.rows)
    )
    other.write_text(calibration_toml(changed))
    assert main(["calibrate", "--hw", "h100", "--from", str(a), str(other)]) == 1
    assert "measures different work" in capsys.readouterr().err
    assert main(["calibrate", "--hw", "h200", "--from", str(a)]) == 1  # an H100 run
    assert "error[H001]" in capsys.readouterr().err
    assert main(["calibrate", "--hw", "h100", "--from", str(a), "--cpu"]) == 2
    assert "--from times nothing" in capsys.readouterr().err
    assert main(["calibrate", "--hw", "h100", "--from", str(tmp_path / "missing.toml")]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_the_clocks_are_read_only_where_nvml_loads(monkeypatch):
    """Without NVML (a CPU), nothing is read and the shipped clocks stay; with too few readings
    of the largest product there is no clock fit."""
    from shardc.tools.calibrate import bench

    monkeypatch.setitem(sys.modules, "pynvml", None)
    clocks = bench.Clocks()
    assert clocks.start() is False
    clocks.stop()
    cases = bench.plan(quick=True, cpu=True).cases
    assert bench.clock_fit([bench.Sample("square_128", 1900.0, 600.0)] * 2, cases) is None


def test_calibrate_cpu_quick_writes_a_file_that_changes_t_expected(tmp_path):
    pytest.importorskip("jax")
    out = tmp_path / "h200-cpu.toml"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "shardc",
            "calibrate",
            "--hw",
            "h200",
            "--cpu",
            "--quick",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=_cpu_env(),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "residual" in run.stdout and "eta_mxu" in run.stdout
    assert "Traceback" not in run.stderr and "/" in run.stderr  # the progress bar: "3/14"
    chip = hardware.load_calibration(out, hardware.load("h200"))
    cal = chip.calibration
    assert cal is not None and cal.kind == "measured"
    prov = dict(cal.provenance)
    assert "--cpu" in prov["command"] and "jax" in prov["software"]
    assert any(r.role == "held-out" for r in cal.rows)
    prog = tmp_path / "mm.shard"
    prog.write_text(MATMUL)
    shipped = shardc.compile(MATMUL, hw="h200")
    mine = shardc.compile(MATMUL, hw=chip)
    a = shipped.value(shipped.totals["t_expected_s"])
    b = mine.value(mine.totals["t_expected_s"])
    assert math.isfinite(b) and b != a
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "shardc",
            "compile",
            str(prog),
            "--hw",
            "h200",
            "--calibration",
            str(out),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    value = json.loads(cli.stdout)["totals"]["t_expected_s"]["value"]
    assert value == pytest.approx(b)


def _cpu_env() -> dict[str, str]:
    import os

    return {**os.environ, "JAX_PLATFORMS": "cpu"}


def test_calibration_dataclass_is_hashable_inside_a_chip():
    chip = hardware.load("h200")
    assert hash(chip) == hash(hardware.load("h200"))
    assert isinstance(chip.calibration, Calibration)


def test_on_expected_states_the_conditions_on_the_calibrated_rates():
    roof = shardc.compile(MATMUL, hw="h200")
    exp = shardc.compile(MATMUL, hw="h200", on="expected")
    (a,), (b,) = roof.conditions, exp.conditions
    assert "eta_mxu" not in str(a.relation) and "eta_mxu" in str(b.relation)
    cal = roof.chip.calibration
    ratio = exp.value(b.relation.rhs) / roof.value(a.relation.rhs)
    assert ratio == pytest.approx(cal.eta_mxu / cal.eta_hbm)
    # the totals are the same: only the conditions move
    assert exp.value(exp.totals["t_expected_s"]) == roof.value(roof.totals["t_expected_s"])


def test_derive_on_expected_restates_each_condition_once(tmp_path, capsys):
    prog = ROOT / "programs" / "mlp-fsdp-train.shard"
    assert main(["derive", str(prog), "--hw", "h100", "--on", "expected"]) == 0
    out = capsys.readouterr().out
    assert "C*eta_mxu" in out and "eta_mxu**2" not in out


def test_a_training_step_gives_the_expected_schedule_and_mfu():
    r = shardc.compile(ROOT / "programs" / "mlp-fsdp-train.shard", hw="h100")
    roof, exp = r.utilization(), r.utilization(expected=True)
    assert exp is not None and 0 < exp["mfu"] < roof["mfu"]
    assert r.scheduled_step(expected=True) > r.scheduled_step()
    text = r.to_text()
    assert "T_step (expected)" in text and "MFU (expected)" in text
    doc = json.loads(r.to_json())
    assert doc["totals"]["t_step_s"]["expected"]["value"] == pytest.approx(
        r.scheduled_step(expected=True)
    )
    assert doc["totals"]["utilization_expected"]["mfu"] == pytest.approx(exp["mfu"])


def test_sweep_evaluates_t_expected_over_a_grid(tmp_path, capsys):
    prog = tmp_path / "mm.shard"
    prog.write_text(MATMUL)
    code = main(
        [
            "sweep",
            str(prog),
            "--hw",
            "h200",
            "--set",
            "M=16:16384:log4",
            "--y",
            "t_lower_s",
            "--y",
            "t_expected_s",
            "--format",
            "json",
        ]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    text = json.dumps(doc)
    assert "t_expected_s" in text
