"""Domains checked at the boundary: `--set` values (N016), non-finite report quantities (K003),
bounded reads of programs, chip files and model cards, and `-o` that fails with a message.
In-process through `shardc.cli.app`, so each case costs milliseconds, not a subprocess."""

from __future__ import annotations

import os
import stat

import pytest

import shardc
from shardc import hardware
from shardc.cli.app import main
from shardc.driver.files import CliIOError
from shardc.lang.input_limits import MAX_CONFIG_BYTES, MAX_SOURCE_BYTES

SYMBOLIC = """\
mesh X
dim B, D=64, F=128
hardware tpu-v5e
In: bf16[B_X, D]
W: bf16[D, F]
Out = In ·_D W
"""
REPEAT = """\
mesh X=4
dim B=64, D=64, L
hardware tpu-v5e
repeat L {
  A: bf16[B_X, D]
  W: bf16[D, D]
  C = A ·_D W
}
"""
DEEP = 'name = "deep"\nx = ' + "[" * 5000 + "]" * 5000 + "\n"
BAD = ("inf", "nan", "1e400", "-4", "0", "0.5", "1e-320", "-inf")


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "p.shard"
    path.write_text(SYMBOLIC, encoding="utf-8")
    return path


def _compile(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["compile", *argv])
    except SystemExit as exc:  # argparse: exit 2
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


# ---- --set: each kind x each bad value ------------------------------------------------------


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize(
    "name, kind",
    [
        ("B", "dimension"),
        ("X", "mesh axis"),
        ("W_hbm", "hardware figure"),
        ("C", "hardware figure"),
    ],
)
def test_set_bad_values_are_refused_by_name(capsys, program, name, kind, value):
    if kind == "hardware figure" and value == "0.5":
        pytest.skip("a fractional figure is fine")
    others = {"B": "64", "X": "2"}
    others.pop(name, None)
    rest = [a for n, v in others.items() for a in ("--set", f"{n}={v}")]
    code, out, err = _compile(capsys, str(program), "--set", f"{name}={value}", *rest)
    assert code in (1, 2)
    assert out == ""
    assert "--set" in err and "Traceback" not in err
    if code == 1:
        assert f"error[N016]: --set {name}=" in err and kind in err


@pytest.mark.parametrize("value", ["inf", "nan", "1e400", "-inf", "1e-400", "lots"])
def test_set_values_no_float_holds_are_usage_errors(capsys, program, value):
    code, _, err = _compile(capsys, str(program), "--set", f"B={value}")
    assert code == 2 and "argument --set" in err


def test_set_messages(capsys, program):
    _, _, err = _compile(capsys, str(program), "--set", "X=0")
    assert "error[N016]: --set X=0: mesh axis 'X' must be a positive whole number\n" in err
    _, _, err = _compile(capsys, str(program), "--set", "W_hbm=1e-310")
    assert "error[N016]: --set W_hbm=1e-310: hardware figure 'W_hbm'" in err
    assert "too small" in err


def test_set_whole_valued_and_fractional_figures_are_accepted(capsys, program):
    code, out, _ = _compile(
        capsys,
        str(program),
        "--set",
        "B=4096.0",
        "--set",
        "X=2",
        "--set",
        "t_hop=0.5e-6",
        "--set",
        "B=1.5k",
    )
    assert code == 0 and "B=1500" in out


@pytest.mark.parametrize("value", ["0.5", "0"])
def test_repeat_count_bound_to_a_non_whole_number(capsys, tmp_path, value):
    path = tmp_path / "r.shard"
    path.write_text(REPEAT, encoding="utf-8")
    code, out, err = _compile(capsys, str(path), "--set", f"L={value}")
    assert code == 1 and out == ""
    assert f"--set L={value}: dimension 'L' (a repeat count)" in err


def test_api_set_goes_through_the_same_check(program):
    with pytest.raises(shardc.CompileError, match=r"N016.*--set B=nan"):
        shardc.compile(program, set={"B": float("nan"), "X": 2})
    r = shardc.compile(program, set={"B": 4096.0, "X": 2})
    assert r.value("flops") == 2 * 4096 * 64 * 128


def test_huge_sizes_are_exact_and_overflow_is_k003(capsys, tmp_path):
    dims = ", ".join(f"D{i}={2**62}" for i in range(20))
    path = tmp_path / "huge.shard"
    layout = ", ".join(f"D{i}" for i in range(20))
    path.write_text(
        f"mesh X=2\ndim {dims}\nhardware tpu-v5e\nA: f32[{layout}]\nB = gelu(A)\n", encoding="utf-8"
    )
    code, out, err = _compile(capsys, str(path))
    assert code == 1 and out == "" and "error[K003]: a quantity overflows a float" in err
    code, out, err = _compile(capsys, str(tmp_path / "huge.shard"), "--set", f"D0={2**63}")
    assert code == 1 and "larger than the limit 2**63 - 1" in err


# ---- -o ---------------------------------------------------------------------------------------


def test_output_errors_are_usage_errors(capsys, program, tmp_path):
    (tmp_path / "adir").mkdir()
    for target, words in (
        (tmp_path / "no" / "such" / "r.txt", "does not exist"),
        (tmp_path / "adir", "is a directory"),
        (program, "refusing to overwrite"),
        ("/dev/full", "not a regular file"),
    ):  # a device: refused
        if str(target) == "/dev/full" and not os.path.exists("/dev/full"):
            continue
        code, out, err = _compile(
            capsys, str(program), "--set", "B=64", "--set", "X=2", "-o", str(target)
        )
        assert code == 2 and err.startswith("shardc: error: -o ") and words in err, err
    assert program.read_text(encoding="utf-8") == SYMBOLIC


def test_output_written(capsys, program, tmp_path):
    code, _, _ = _compile(
        capsys, str(program), "--set", "B=64", "--set", "X=2", "-o", str(tmp_path / "r.txt")
    )
    assert code == 0 and "shardc report" in (tmp_path / "r.txt").read_text(encoding="utf-8")


def test_model_program_output_errors(capsys, tmp_path):
    code = main(["model", "program", "llama3-70b", "-o", str(tmp_path / "no" / "p.shard")])
    assert code == 2 and "shardc: error: -o " in capsys.readouterr().err


# ---- bounded reads ----------------------------------------------------------------------------


def test_fifo_is_refused_without_blocking(capsys, tmp_path):
    fifo = tmp_path / "f.shard"
    os.mkfifo(fifo)
    code, _, err = _compile(capsys, str(fifo))
    assert code == 2 and "not a regular file" in err


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused(capsys, device):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    code, _, err = _compile(capsys, device)
    assert code == 2 and "not a regular file" in err


def test_directory_missing_oversize_and_not_utf8(capsys, tmp_path):
    code, _, err = _compile(capsys, str(tmp_path))
    assert code == 2 and "directory" in err
    code, _, err = _compile(capsys, str(tmp_path / "nope.shard"))
    assert code == 2 and "nope.shard" in err
    big = tmp_path / "big.shard"
    big.write_bytes(b"# " + b"x" * MAX_SOURCE_BYTES + b"\n")
    code, _, err = _compile(capsys, str(big))
    assert code == 2 and "larger than the limit" in err
    bad = tmp_path / "bad.shard"
    bad.write_bytes(b"mesh X=2 # \xff\n")
    code, _, err = _compile(capsys, str(bad))
    assert code == 2 and "not UTF-8" in err


def test_api_reads_paths_through_the_bounded_reader(tmp_path):
    fifo = tmp_path / "f.shard"
    os.mkfifo(fifo)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    with pytest.raises(CliIOError, match="not a regular file"):
        shardc.compile(fifo)


# ---- chip files and model cards --------------------------------------------------------------


def test_chip_file_limits_agree():
    from shardc.hardware.files import MAX_CHIP_BYTES

    assert MAX_CHIP_BYTES == MAX_CONFIG_BYTES


@pytest.mark.parametrize(
    "content, words",
    [
        (DEEP, "nested too deeply"),
        (b'name = "\xff"\n', "not UTF-8"),
        ("# " + "x" * MAX_CONFIG_BYTES, "larger than the limit"),
    ],
)
def test_bad_chip_files_are_h001(capsys, tmp_path, content, words):
    path = tmp_path / "chip.toml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    assert main(["hw", "show", str(path)]) == 1
    err = capsys.readouterr().err
    assert "error[H001]" in err and words in err
    prog = tmp_path / "p.shard"
    prog.write_text(SYMBOLIC, encoding="utf-8")
    code, out, err = _compile(capsys, str(prog), "--hw", str(path))
    assert code == 1 and "error[H001]" in err and words in err


def test_chip_fifo_and_pod_shape(tmp_path):
    fifo = tmp_path / "chip.toml"
    os.mkfifo(fifo)
    with pytest.raises(hardware.HardwareError, match="not a regular file"):
        hardware.load(str(fifo))
    from importlib.resources import files

    text = files("shardc.hardware").joinpath("tpu-v5e.toml").read_text(encoding="utf-8")
    for shape in ("16x0", "16x-16", "lots", "1e400"):
        path = tmp_path / "tpu-v5e.toml"
        path.write_text(text.replace('shape = "16x16"', f'shape = "{shape}"'), encoding="utf-8")
        with pytest.raises(hardware.HardwareError, match=r"\[pod\]\.shape"):
            hardware.load(str(path))


def test_card_deep_nesting_and_non_finite(capsys, tmp_path):
    deep = tmp_path / "deep.toml"
    deep.write_text(DEEP, encoding="utf-8")
    assert main(["model", "show", str(deep)]) == 1
    assert "nested too deeply" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--chips", "0"], "--chips '0' is not a positive whole number"),
        (["--chips", "1048577"], "--chips '1048577' is more than the limit"),
        (["--chips", "256", "--batch", "nan"], "--batch 'nan'"),
        (["--chips", "256", "--batch", "1e400"], "--batch '1e400'"),
        (["--chips", "256", "--seq", "-4096"], "--seq '-4096'"),
    ],
)
def test_plan_options(capsys, argv, words):
    code = main(["plan", "--card", "llama3-70b", "--hw", "tpu-v5p", *argv])
    assert code == 1 and words in capsys.readouterr().err
