"""The CLI (exit codes, streams, formats, -o, --set, hw) and the Python API."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

import shardc
from shardc.cli.app import main, parse_number
from tests.paths import ROOT


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_compile_text_to_stdout(capsys, in_repo_root):
    code, out, err = run(capsys, "compile", "programs/case2.shard")
    assert code == 0 and err == ""
    assert out.startswith("shardc report: programs/case2.shard")
    assert "AllGather" in out


@pytest.mark.parametrize(
    "fmt,marker",
    [("md", "| quantity |"), ("latex", "\\begin{align*}"), ("json", '"schema": "shardc.report/1"')],
)
def test_formats(capsys, in_repo_root, fmt, marker):
    code, out, _ = run(capsys, "compile", "programs/case3.shard", "--format", fmt)
    assert code == 0 and marker in out


def test_output_file_and_set(capsys, in_repo_root, tmp_path):
    target = tmp_path / "r.json"
    code, out, _ = run(
        capsys,
        "compile",
        "programs/two-chip.shard",
        "--format",
        "json",
        "--set",
        "D=16384",
        "--set",
        "B=1k",
        "--set",
        "F=4_096",
        "-o",
        str(target),
    )
    assert code == 0 and out == ""
    d = json.loads(target.read_text())
    assert d["bindings"] == {"B": 1000.0, "D": 16384.0, "F": 4096.0}
    assert d["totals"]["t_math_s"]["value"] is not None


def test_hw_override_and_model(capsys, in_repo_root):
    code, out, _ = run(
        capsys,
        "compile",
        "programs/q2-allgather-latency.shard",
        "--hw",
        "tpu-v5p",
        "--model",
        "book",
        "--format",
        "json",
    )
    d = json.loads(out)
    assert code == 0 and d["hardware"] == "tpu-v5p" and d["model"] == "book"


def test_user_chip_toml(capsys, in_repo_root, tmp_path):
    from shardc import hardware

    src = Path(hardware.load("tpu-v5e").path).read_text()
    mine = tmp_path / "mychip.toml"
    mine.write_text(src.replace('name = "tpu-v5e"', 'name = "mychip"'))
    code, out, err = run(capsys, "compile", "programs/case2.shard", "--hw", str(mine))
    assert code == 0, err
    assert "chip: mychip" in out


def test_errors_go_to_stderr_with_exit_1(capsys, tmp_path):
    bad = tmp_path / "bad.shard"
    bad.write_text("mesh X=2\ndim I=4, J=4\nA: bf16[I_X, J_X]\n")
    code, out, err = run(capsys, "compile", str(bad))
    assert code == 1 and out == ""
    assert f"{bad}:3:" in err and "error[S002]" in err and "^" in err


def test_unknown_chip_is_a_diagnostic(capsys, in_repo_root):
    code, _, err = run(capsys, "compile", "programs/case1.shard", "--hw", "tpu-v9")
    assert code == 1 and "error[H001]" in err and "tpu-v9" in err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["compile", "x.shard", "--set", "B=lots"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["compile", "/nonexistent/x.shard"])
    assert e.value.code == 2


def test_check(capsys, in_repo_root):
    code, out, _ = run(capsys, "check", "programs/mlp-fsdp-tp.shard")
    assert code == 0 and "ok" in out and "4 collectives" in out


def test_hw_list_and_show(capsys):
    code, out, _ = run(capsys, "hw", "list")
    assert code == 0
    for name in ("tpu-v4p", "tpu-v5e", "tpu-v5p", "tpu-v6e", "h100", "h200", "b200"):
        assert name in out
    code, out, _ = run(capsys, "hw", "show", "tpu-v5e")
    assert code == 0 and "243" in out  # C / W_hbm


def test_console_script_runs_as_a_process(in_repo_root):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "shardc.cli.app",
            "compile",
            "programs/case1.shard",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["ops"][0]["kind"] == "einsum"


def test_parse_number():
    assert parse_number("4M") == 4e6 and parse_number("2.5e-6") == 2.5e-6


def test_api_compile_report_object():
    r = shardc.compile(ROOT / "programs" / "q4-matmul-strategies.shard")
    assert isinstance(r.totals["t_math_s"], sp.Expr)
    assert r.value("t_math_s") == pytest.approx(2 * 128 * 8192 * 32768 / 8 / 4.59e14)
    assert r.value("t_math_s", B=256) == pytest.approx(2 * r.value("t_math_s"))
    assert "| quantity |" in r._repr_markdown_()
    assert json.loads(r.to_json())["program"].endswith("q4-matmul-strategies.shard")
    assert "\\begin{align*}" in r.to_latex()


def test_api_parse_and_errors():
    prog = shardc.parse("mesh X=2\ndim I=4\nA: bf16[I_X]\n")
    assert prog.statements[-1].name == "A"
    with pytest.raises(shardc.CompileError) as e:
        shardc.compile("mesh X=2\ndim I=3\nA: bf16[I_X]\n")
    assert "error[S004]" in str(e.value)


def test_hardware_symbols_stay_symbolic_without_a_chip():
    r = shardc.compile(
        "mesh X=2\ndim B=8, D=4, F=6\nA: bf16[B, D_X]\nW: bf16[D_X, F]\nC[B, F] = A ·_D W\n"
    )
    assert r.value("t_math_s") is None
    assert {s.name for s in r.totals["t_math_s"].free_symbols} >= {"C"}
    assert r.value("flops") == 2 * 8 * 4 * 6


def test_memory_warning_when_hbm_is_exceeded(capsys, tmp_path):
    big = tmp_path / "big.shard"
    big.write_text("mesh X=2\ndim I=200000, J=100000\nhardware tpu-v5e\nA: bf16[I_X, J]\n")
    code, out, err = run(capsys, "compile", str(big))
    assert code == 0 and "warning[K001]" in err


def test_spanning_axis_checked_with_bound_sizes(capsys, tmp_path):
    prog = tmp_path / "span.shard"
    prog.write_text("mesh X @ici(x, y)\ndim I=64\nA: bf16[I_X]\n")
    code, _, err = run(capsys, "check", str(prog), "--set", "X=8")
    assert code == 1 and "error[H014]" in err
    code, _, err = run(capsys, "check", str(prog), "--set", "X=16")
    assert code == 0 and err == ""


def test_more_physical_axes_than_the_torus_warns(capsys, tmp_path):
    prog = tmp_path / "axes.shard"
    prog.write_text("mesh A=2, B=2, C=2\ndim I=64\nhardware tpu-v5e\nT: bf16[I_ABC]\n")
    code, _, err = run(capsys, "check", str(prog))
    assert code == 0 and "warning[H017]" in err and "2D torus" in err


_GATHER = "dim B=65536, D=8192\nhardware {chip}\nA: bf16[B, D_{axes}]\nC = AllGather_{axes}(A)\n"


def _spelled(where: str) -> tuple[str, str]:
    """The mesh and axes that spell out H019's placement `X over x (4) x y (8) x z (8)`."""
    mesh, names = [], []
    for i, part in enumerate(where.split(" x ")):
        p, n = part.strip().rstrip(")").split(" (")
        mesh.append(f"X{i + 1}={n} @ici({p})")
        names.append(f"X{i + 1}")
    return ", ".join(mesh), "{" + ",".join(names) + "}"


@pytest.mark.parametrize(
    "chip, placed",
    [
        ("tpu-v5p", "a 4x8x8 slice (X over x (4) x y (8) x z (8))"),
        ("tpu-v5e", "a 16x16 slice (X over x (16) x y (16))"),
    ],
)
def test_a_mesh_axis_longer_than_the_pod_is_laid_out_as_jax_would(capsys, tmp_path, chip, placed):
    """`mesh X=256` is no slice a v5p (16x20x28) or v5e (16x16) has: it is laid out as JAX's
    `create_device_mesh` lays it out, over several physical axes, with H019 saying so, and costs
    exactly what the placement spelled out with `@ici(...)` costs (rings of 4-16 chips, not a
    line of 256)."""
    line = tmp_path / "line.shard"
    line.write_text("mesh X=256\n" + _GATHER.format(chip=chip, axes="X"))
    code, _, err = run(capsys, "check", str(line))
    assert code == 0 and "warning[H019]" in err and f"laid out and costed as {placed}" in err, err
    mesh, axes = _spelled(placed.split("(X over ")[1])
    spelled = tmp_path / "spelled.shard"
    spelled.write_text(f"mesh {mesh}\n" + _GATHER.format(chip=chip, axes=axes))
    code, _, err = run(capsys, "check", str(spelled))
    assert code == 0 and "H019" not in err, err
    assert shardc.compile(line).value("t_comms_s") == pytest.approx(
        shardc.compile(spelled).value("t_comms_s"), rel=1e-12
    )


def test_every_laid_out_mesh_costs_what_its_spelled_placement_costs():
    """Every one-axis mesh of 2^5 to 2^13 chips on each TPU that H019 lays out costs what its
    placement costs when written with @ici(...) (exhaustive over that range; a mesh of more
    chips than the pod is H020, an error)."""
    import math

    from shardc import hardware

    laid_out = 0
    for chip in ("tpu-v4p", "tpu-v5p", "tpu-v5e", "tpu-v6e"):
        for k in range(5, 14):
            if 1 << k > math.prod(hardware.load(chip).pod_dims):
                continue
            text = f"mesh X={1 << k}\n" + _GATHER.format(chip=chip, axes="X")
            r = shardc.compile(text)
            laid = [w for w in r.warnings if "laid out and costed" in w]
            if not laid:
                continue
            laid_out += 1
            mesh, axes = _spelled(laid[0].split("(X over ")[1].rstrip(")"))
            spelled = shardc.compile(f"mesh {mesh}\n" + _GATHER.format(chip=chip, axes=axes))
            assert not [w for w in spelled.warnings if "slice" in w], (chip, k)
            assert r.value("t_comms_s") == pytest.approx(spelled.value("t_comms_s"), rel=1e-12), (
                chip,
                k,
            )
    assert laid_out >= 20


def test_a_mesh_jax_cannot_place_warns_and_names_a_slice_that_fits(capsys, tmp_path):
    """`mesh X=64, Y=64` on a v5p: no set of a 16x16x16 slice's axes makes 64, so it is costed
    as declared, and the note names the same chips as a slice the chip has."""
    prog = tmp_path / "square.shard"
    prog.write_text("mesh X=64, Y=64\n" + _GATHER.format(chip="tpu-v5p", axes="X"))
    code, _, err = run(capsys, "check", str(prog))
    assert code == 0 and "warning[H019]" in err and "costed as declared" in err
    assert "as a 16x16x16 slice: X1=16 @ici(x), X2=16 @ici(y), X3=16 @ici(z)" in err


def test_the_books_small_meshes_do_not_warn(capsys, tmp_path):
    """The training chapter's `mesh X=16, Y=8` on a v5p fits along the pod's axes: no H019."""
    prog = tmp_path / "book.shard"
    prog.write_text("mesh X=16, Y=8\ndim I=128\nhardware tpu-v5p\nT: bf16[I_XY]\n")
    code, _, err = run(capsys, "check", str(prog))
    assert code == 0 and "H019" not in err


def test_set_of_an_unused_hardware_quantity_warns(capsys):
    """On a GPU the fast link is W_nvlink: `--set W_ici` changes nothing, and says so (N015)."""
    prog = str(ROOT / "programs" / "h100-two-nodes.shard")
    code = main(["compile", prog, "--set", "W_ici=1e11"])
    err = capsys.readouterr().err
    assert code == 0 and "warning[N015]: --set binds 'W_ici'" in err and "W_nvlink" in err
    code = main(["compile", prog, "--set", "W_nvlink=1e11"])
    assert code == 0 and "N015" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "option, value", [("model", "roofline"), ("optimizer", "adamw"), ("remat", "blocks")]
)
def test_api_refuses_an_unknown_option_value_by_name(option, value):
    """The CLI's argparse choices have an API twin: a typo is an error, not a silent default."""
    with pytest.raises(ValueError, match=f"{option}={value!r}"):
        shardc.compile("mesh X=2\ndim B=8, D=4\nA: bf16[B, D_X]\n", **{option: value})


def test_version_and_a_missing_program_file(capsys):
    """`--version` prints the installed version; a path that does not exist is an error naming
    it, from the CLI and from the API (it used to be parsed as program text: P001)."""
    from shardc.cli.app import main
    from shardc.driver.files import CliIOError

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("shardc ")
    with pytest.raises(CliIOError, match="missing.shard"):
        shardc.compile("missing.shard")


def test_summary_and_only_select_sections(capsys):
    """`--summary` keeps the header, summary, repeat blocks, memory and conditions; `--only`
    names sections; both are for the text format, and an unknown name is a usage error."""
    from shardc.cli.app import main

    prog = str(ROOT / "programs" / "mlp-fsdp-tp-layers-train.shard")
    assert main(["compile", prog, "--summary"]) == 0
    short = capsys.readouterr().out
    assert "summary (per device" in short and "memory per device" in short
    assert "\nops\n" not in short and "decisions" not in short
    assert main(["compile", prog, "--only", "ops"]) == 0
    ops = capsys.readouterr().out
    assert ops.startswith("shardc report:") and "\nops\n" in ops and "summary (per" not in ops
    assert main(["compile", prog, "--only", "sumary"]) == 2
    assert "--only: unknown section sumary" in capsys.readouterr().err
    assert main(["compile", prog, "--summary", "--format", "json"]) == 2
    with pytest.raises(KeyError):
        shardc.compile(prog).to_text(only=["nope"])


def _subcommand_options():
    """(subcommand path, argparse action) for every option of every subcommand."""
    import argparse

    from shardc.cli.app import build_parser

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, (*path, name))
            elif action.option_strings:
                yield path, action

    return list(walk(build_parser(), ()))


def test_one_meaning_per_flag_across_subcommands():
    """`--cost-model` is the collective cost model wherever one is chosen, and `--card` a model
    card; `--model` is short for `--cost-model` everywhere except `plan`, where it is the card's
    deprecated spelling (a note on stderr)."""
    options = _subcommand_options()
    cost = [(path, a) for path, a in options if a.choices and set(a.choices) == {"exact", "book"}]
    assert {path for path, _ in cost} >= {
        ("compile",),
        ("derive",),
        ("sweep",),
        ("plan",),
        ("xla-check",),
        ("export-jax",),
    }
    for path, action in cost:
        assert action.option_strings[0] == "--cost-model", path
    for path, action in options:
        if "--card" in action.option_strings:
            assert path == ("plan",)
        if "--model" in action.option_strings and path != ("plan",):
            assert "--cost-model" in action.option_strings, path


def test_cost_model_spellings_agree(capsys, in_repo_root):
    """`--model book` and `--cost-model book` give the same report."""
    reports = []
    for flag in ("--model", "--cost-model"):
        assert main(["compile", "programs/case2.shard", flag, "book", "--format", "json"]) == 0
        reports.append(capsys.readouterr().out)
    assert reports[0] == reports[1] and '"model": "book"' in reports[0]
