"""`shardc derive`: conditions solved for a variable, optimal mesh sizes (the training chapter, the
revised training chapter)."""

from __future__ import annotations

import doctest
import json

import pytest
import sympy as sp

import shardc.tools.derive_solve
from shardc.cli.app import main
from shardc.tools.derive import derive_program
from shardc.tools.derive_solve import round_power_of_two, solve_condition, solve_for
from tests.paths import ROOT

FSDP_TP = (
    "mesh X @ici(x, y), Y @ici(z)\ndim B, D=8192, F\nhardware tpu-v5p\n"
    "In: bf16[B_X, D_Y]\nparam W_in: bf16[D_X, F_Y]\nparam W_out: bf16[F_Y, D_X]\n"
    "Tmp = In[B_X, D] ·_D W_in\nOut[B_X, D_Y] = gelu(Tmp) ·_F W_out\nbackward\n"
)
"""The training chapter's FSDP + TP on a 3D torus: FSDP over two physical axes (M_X = 2), TP over
one."""


def derive(capsys, *args) -> dict:
    code = main(["derive", *args, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def cond(d: dict, name: str = "compute-bound") -> dict:
    (c,) = [c for c in d["conditions"] if c["name"] == name]
    return c


def same(a: str, b: str) -> bool:
    names = {n: sp.Symbol(n, positive=True) for n in ("B", "C", "F", "N", "W_ici", "X", "Y")}
    return sp.simplify(sp.sympify(a, locals=names) - sp.sympify(b, locals=names)) == 0


@pytest.mark.parametrize(
    "program, expr, var, solved",
    [
        ("mlp-dp-train", "B/X > C/W_ici", "B/X", "C/W_ici"),
        ("mlp-fsdp-train", "B/X > C/W_ici", "B/X", "C/W_ici"),
        ("mlp-tp-train", "F/Y > C/W_ici", "F", "C*Y/W_ici"),
    ],
)
def test_the_book_conditions_of_the_training_programs(capsys, program, expr, var, solved):
    """The issue's done-when: B/X > C/W_ici (DP, FSDP), F > Y C/W_ici (TP), 2550 on a v5p.
    The programs' axes are lines on a v5p (16x1x1 and 8x1x1 slices do not wrap): the book's
    accounting prices them as full rings and says so in a note; the whole step as compiled is
    kept, labelled."""
    d = derive(capsys, str(ROOT / f"programs/{program}.shard"), "--solve-for", var)
    assert d["model"] == "book"
    c = cond(d)
    assert c["expr"] == expr
    assert c["solved"]["rel"] == ">" and c["solved"]["expr"] == solved
    if var == "B/X":
        assert c["solved"]["value"] == pytest.approx(4.59e14 / 1.8e11)  # 2550 per chip
    assert any("line" in n and "full ring" in n for n in d["notes"])
    assert "step-compute-vs-comms" in {c["name"] for c in d["conditions"]}


def test_tp_book_statement_is_the_forward_pass(capsys):
    """The book models the forward pass of TP (4BDF/Y FLOPs against 4BD bytes); the backward pass
    has the same communication for twice the FLOPs. The whole step on a ring is 3F/(2Y) in the
    book's ring formula (3F/(2(Y - 1)) with the exact model's (Y - 1)/Y); on the line of 8 the
    program has on a v5p, 3F/(4(Y - 1))."""
    prog = str(ROOT / "programs/mlp-tp-train.shard")
    book = derive(capsys, prog)
    assert book["accounting"] == "forward"
    exact = derive(capsys, prog, "--model", "exact")
    assert exact["accounting"] == "step"
    assert cond(exact)["expr"] == "3*F/(4*(Y - 1)) > C/W_ici"
    text = (ROOT / "programs/mlp-tp-train.shard").read_text().replace("mesh Y=8", "mesh Y=8 wrap")
    d = derive_program(text, model="exact")
    (c,) = [c for c in d.conditions if c.name == "compute-bound"]
    assert str(c.relation) == "3*F/(2*(Y - 1)) > C/W_ici"  # exact: (Y - 1)/Y of a ring


def test_three_axes_of_data_parallelism_need_850_per_chip(capsys, tmp_path):
    """The book: with all three axes of a v5p pod (16x20x28, which wraps) the bandwidth triples:
    B/N > C/(3 W_ici) = 850 per chip, 7.6M tokens per pod."""
    prog = tmp_path / "dp3.shard"
    prog.write_text(
        (ROOT / "programs/mlp-dp-train.shard")
        .read_text()
        .replace("mesh X=16", "mesh X=16, Y=20, Z=28")
        .replace("In: bf16[B_X, D]", "In: bf16[B_XYZ, D]")
        .replace("Out[B_X, D]", "Out[B_XYZ, D]")
        .replace("B=131072", "B")
    )
    d = derive(capsys, str(prog), "--solve-for", "B/(X*Y*Z)")
    assert d["notes"] == []  # a whole pod: every axis is a ring as resolved
    c = cond(d)
    assert c["expr"] == "3*B/(X*Y*Z) > C/W_ici"
    assert c["solved"]["expr"] == "C/(3*W_ici)"
    assert c["solved"]["value"] == pytest.approx(850)
    pod = derive(capsys, str(prog), "--solve-for", "B")
    assert cond(pod)["solved"]["value"] == pytest.approx(850 * 8960)


def test_fsdp_tp_conditions_summed_and_overlapped(capsys):
    """The book sums the X and Y communication: BF/(BY + FX) > C/W_ici (F/(Y M_X) + B/(X M_Y) <
    BF/(N alpha)); the revised training chapter overlaps them: both B/X and F/Y > C/W_ici."""
    d = derive(capsys, str(ROOT / "programs/mlp-fsdp-tp-train.shard"))
    assert cond(d)["expr"] == "B*F/(B*Y + F*X) > C/W_ici"
    assert cond(d, "compute-bound-max-X")["expr"] == "B/X > C/W_ici"
    assert cond(d, "compute-bound-max-Y")["expr"] == "F/Y > C/W_ici"
    only = derive(capsys, str(ROOT / "programs/mlp-fsdp-tp-train.shard"), "--overlap", "sum")
    assert "compute-bound-max-X" not in {c["name"] for c in only["conditions"]}


def test_optimal_fsdp_axis_is_the_books(capsys, tmp_path):
    """The training chapter: X_opt = sqrt(B/F * M_X/M_Y * N) (M_X = 2, M_Y = 1 here), from the
    forward pass; both overlap models agree on it. LLaMA-3 70B (the LLaMA 3 chapter): B = 4.19e6,
    F = 28672, N = 8960: 1618, rounded to 2048 (Y = 4); compute-bound while
    B/N > 4 alpha^2/(M_X M_Y F) = 453.6 (the book, summed) or alpha^2/(M_X M_Y F) = 113.4 (the
    revised training chapter, overlapped)."""
    prog = tmp_path / "fsdp_tp.shard"
    prog.write_text(FSDP_TP)
    d = derive(capsys, str(prog), "--optimize", "X", "--with", "Y", "--solve-for", "B/N")
    assert {o["overlap"] for o in d["optima"]} == {"sum", "max"}
    for o in d["optima"]:
        assert same(o["expr"], "sqrt(2*B*N/F)")
    assert same(cond(d, "at-optimum-sum")["solved"]["expr"], "2*C**2/(F*W_ici**2)")
    assert same(cond(d, "at-optimum-max")["solved"]["expr"], "C**2/(2*F*W_ici**2)")
    sized = derive(
        capsys,
        str(prog),
        "--optimize",
        "X",
        "--with",
        "Y",
        "--devices",
        "8960",
        "--set",
        "B=4190000",
        "--set",
        "F=28672",
        "--solve-for",
        "B/N",
    )
    o = sized["optima"][0]
    assert o["value"] == pytest.approx(1618.26, rel=1e-4)
    assert (o["rounded"], o["partner_rounded"]) == (2048, 4)
    assert cond(sized, "at-optimum-sum")["solved"]["value"] == pytest.approx(453.58, rel=1e-4)
    assert cond(sized, "at-optimum-max")["solved"]["value"] == pytest.approx(113.39, rel=1e-4)


def test_exact_optimum_is_the_whole_step(capsys, tmp_path):
    """The exact model minimizes the whole step's communication: the backward pass gathers the
    weights again and reduce-scatters their gradients (12DF/Y of weights against 8BD/X of
    activations), so X_opt is sqrt(2/3) of the book's."""
    prog = tmp_path / "fsdp_tp.shard"
    prog.write_text(FSDP_TP)
    d = derive(
        capsys, str(prog), "--model", "exact", "--optimize", "X", "--with", "Y", "--overlap", "sum"
    )
    (o,) = d["optima"]
    assert same(o["expr"], "sqrt(2*B*N/F) * sqrt(2/3)")


def test_solve_condition_directions():
    x, c = sp.symbols("X C", positive=True)
    s = solve_condition(sp.StrictGreaterThan(sp.Integer(100) / x, c), "X")
    assert s is not None and s.rel == "<" and sp.simplify(s.expr - 100 / c) == 0
    assert solve_condition(sp.StrictGreaterThan(x, c), "Q") is None
    b, n, f = sp.symbols("B N F", positive=True)
    s = solve_for(sp.StrictGreaterThan(b * f / (2 * n), c**2), "B/N")
    assert s is not None and s.var == "B/N" and sp.simplify(s.expr - 2 * c**2 / f) == 0


def test_round_power_of_two():
    assert round_power_of_two(13.69, 64) == 16
    assert round_power_of_two(1445.9, 8960) == 1024
    assert round_power_of_two(5000, 64) == 64


def test_derive_needs_a_partner_axis(capsys):
    code = main(["derive", str(ROOT / "programs/mlp-fsdp-train.shard"), "--optimize", "X"])
    assert code == 2
    assert "--with" in capsys.readouterr().err


def test_text_and_latex(capsys):
    assert main(["derive", str(ROOT / "programs/mlp-dp-train.shard")]) == 0
    out = capsys.readouterr().out
    assert "B/X > C/W_ici   [holds: 8192 vs 2550]" in out
    assert (
        main(
            [
                "derive",
                str(ROOT / "programs/mlp-dp-train.shard"),
                "--format",
                "latex",
                "--solve-for",
                "B",
            ]
        )
        == 0
    )
    assert "\\frac{B}{X} > \\frac{C}{W_{\\mathrm{ici}}}" in capsys.readouterr().out


def test_doctests():
    result = doctest.testmod(shardc.tools.derive, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


SMALL_SYMBOLIC = (
    "mesh X, Y\ndim I=8192, J=8192, K=16384\nhardware tpu-v5e\nA: bf16[I_X, J]\n"
    "B: bf16[J, K_Y]\nC[I_X, K_Y] = A ·_J B\n"
)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--solve-for", "B/(X"], "--solve-for 'B/(X': unexpected end; expected ')'"),
        (["--solve-for", "Q"], "--solve-for 'Q': unknown name 'Q' (known: "),
        (["--solve-for", "sin(B)"], "unknown function 'sin'"),
        (["--solve-for", ""], "empty formula"),
        (["--solve-for", "2"], "nothing to solve for"),
        (["--solve-for", "B**B**B"], "'**' takes a whole number"),
    ],
)
def test_a_bad_solve_for_is_a_usage_error_with_a_caret(tmp_path, capsys, args, message):
    prog = tmp_path / "p.shard"
    prog.write_text((ROOT / "programs/mlp-dp-train.shard").read_text())
    assert main(["derive", str(prog), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and ("^" in err.splitlines()[-1] or not args[1])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--optimize", "X", "--with", "X"], "--with 'X' is the axis --optimize varies"),
        (["--optimize", "Q", "--with", "Y"], "--optimize 'Q' is not a mesh axis"),
        (["--optimize", "X", "--with", "I"], "--with 'I' is not a mesh axis"),
        (
            ["--optimize", "X", "--with", "Y", "--devices", "0"],
            "--devices must be a positive whole",
        ),
        (
            ["--optimize", "X", "--with", "Y", "--devices", "-1"],
            "--devices must be a positive whole",
        ),
        (
            ["--optimize", "X", "--with", "Y", "--devices", "2.5"],
            "--devices must be a positive whole",
        ),
        (
            ["--optimize", "X", "--with", "Y", "--devices", "B.subs"],
            "--devices 'B.subs': unexpected",
        ),
        (["--optimize", "X", "--with", "Y", "--devices", "I"], "--devices 'I' is already"),
    ],
)
def test_optimize_with_and_devices_are_checked(tmp_path, capsys, args, message):
    prog = tmp_path / "p.shard"
    prog.write_text(SMALL_SYMBOLIC)
    assert main(["derive", str(prog), *args]) == 2
    assert message in capsys.readouterr().err


def test_solve_runs_under_a_time_budget_and_says_no_closed_form(monkeypatch, capsys):
    import time

    finished = []

    def slow(*args, **kwargs):
        end = time.monotonic() + 120
        while time.monotonic() < end:  # busy: the budget counts CPU time
            pass
        finished.append(True)

    monkeypatch.setattr(shardc.tools.derive_solve, "SOLVE_SECONDS", 0.05)
    monkeypatch.setattr(shardc.tools.derive_solve.sp, "solve", slow)
    b, x, c = (sp.Symbol(n, positive=True) for n in "BXC")
    assert solve_for(sp.StrictGreaterThan(b / x, c), "B/X") is None
    assert not finished  # the budget (0.05 s here) cut the 120 s solve short
    assert main(["derive", str(ROOT / "programs/mlp-dp-train.shard"), "--solve-for", "B"]) == 0
    assert "solved: no closed form" in capsys.readouterr().out


def test_the_budget_restores_the_previous_alarm_handler():
    import signal

    before = signal.getsignal(signal.SIGPROF)
    with shardc.tools.derive_solve.solve_budget(1.0):
        pass
    assert signal.getsignal(signal.SIGPROF) is before
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)


def test_optimize_is_checked_by_compiling_every_split(capsys, tmp_path):
    """The objective is piecewise where plans change with the split: every split X * Y = 64 is
    compiled with X and Y bound (its own plans and topology); the best split is the least."""
    prog = tmp_path / "fsdp_tp.shard"
    prog.write_text(FSDP_TP)
    fixed = {"B": 65536, "F": 28672}
    d = derive(
        capsys,
        str(prog),
        "--optimize",
        "X",
        "--with",
        "Y",
        "--devices",
        "64",
        *(a for k, v in fixed.items() for a in ("--set", f"{k}={v}")),
    )
    s = d["splits"]
    assert [(x["X"], x["Y"]) for x in s["splits"]] == [(4**k, 64 // 4**k) for k in range(4)]
    plans = {p["plan"]: p["collectives"] for p in s["plans"]}
    from shardc.driver.region_totals import collectives

    # X spans two physical axes: a square, so X = 2, 8, 32 are refused (H014)
    assert [(x["X"], x["why"][:4]) for x in s["skipped"]] == [
        (2, "H014"),
        (8, "H014"),
        (32, "H014"),
    ]
    for x in s["splits"]:
        r = shardc.compile(FSDP_TP, model="book", set={**fixed, "X": x["X"], "Y": x["Y"]})
        assert x["t_comms_s"] == pytest.approx(r.value("t_comms_s"), rel=1e-9)
        assert plans[x["plan"]] == collectives(r)
    best = min(s["splits"], key=lambda x: x["t_comms_s"])
    assert s["best"]["X"] == best["X"]
    code = main(
        [
            "derive",
            str(prog),
            "--optimize",
            "X",
            "--with",
            "Y",
            "--devices",
            "64",
            "--set",
            "B=65536",
            "--set",
            "F=28672",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and f"T_comms is least at X = {best['X']}," in out
