"""Every dtype's rate: the chip files' `[flops]` tables, each figure with its source; products
priced at the rate of their dtype, f32 at JAX's `jax.lax.Precision` on the chip's backend; a
missing figure warns (H030) instead of falling back silently."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path

import pytest

import shardc
from shardc import hardware
from shardc.cli.app import main
from shardc.driver.api import as_source, run_pipeline
from shardc.hardware.chip import PRECISIONS, load

CHIPS = ("a100", "h100", "h200", "b200", "gb200-nvl72", "tpu-v4p", "tpu-v5e", "tpu-v5p", "tpu-v6e")
GPUS = CHIPS[:5]
TPUS = CHIPS[5:]
SOURCE = re.compile(
    r"https?://|the TPU chapter|the book|the Epoch AI paper|Jouppi et al"
    r"|datasheet above|same url"
)
"""A URL, a public name, or a pointer to the URL the block above the rates gives."""


def _flops_lines(name: str) -> dict[str, str]:
    """Each `[flops]` entry of a shipped chip file -> its line, comment included."""
    text = files("shardc.hardware").joinpath(f"{name}.toml").read_text(encoding="utf-8")
    table = text.split("[flops]", 1)[1].split("\n[", 1)[0]
    out = {}
    for line in table.splitlines():
        m = re.match(r"([a-z0-9]+)\s*=", line)
        if m:
            out[m.group(1)] = line
    return out


def test_every_chip_file_is_listed() -> None:
    assert set(CHIPS) == set(hardware.available())


@pytest.mark.parametrize("name", CHIPS)
def test_every_chip_has_bf16_and_f32_each_rate_with_a_source(name: str) -> None:
    lines = _flops_lines(name)
    assert {"bf16", "f32"} <= set(lines)
    for dtype, line in lines.items():
        comment = line.split("#", 1)[1] if "#" in line else ""
        assert SOURCE.search(comment), f"{name}: [flops].{dtype} cites no source: {line!r}"
    chip = load(name)
    # f32 on the vector units is far below the matrix rate; tensor-core TF32 between them
    assert chip.flops["f32"] < chip.flops["bf16"] / 4
    if "tf32" in chip.flops:
        assert chip.flops["f32"] < chip.flops["tf32"] < chip.flops["bf16"]


@pytest.mark.parametrize("name", GPUS)
def test_gpu_tensor_rates_are_dense(name: str) -> None:
    """On Ampere, Hopper and Blackwell dense TF32 is half of dense bf16, and fp8/int8 twice it:
    a sparse figure (2:4 sparsity doubles every tensor-core rate) would break one of these."""
    chip = load(name)
    assert chip.flops["tf32"] == pytest.approx(chip.flops["bf16"] / 2, rel=1e-3)
    assert chip.flops["f16"] == chip.flops["bf16"]
    for dtype in ("fp8", "int8", "int4"):
        if dtype in chip.flops:
            assert chip.flops[dtype] == pytest.approx(
                chip.flops["bf16"] * (4 if dtype == "int4" else 2), rel=1e-3
            )


@pytest.mark.parametrize("name", GPUS)
def test_gpus_run_f32_products_as_jax_does(name: str) -> None:
    chip = load(name)
    default, high, highest = (chip.matmul_rate("f32", p) for p in PRECISIONS)
    assert default.basis == high.basis == "tf32" and default.value == chip.flops["tf32"]
    assert highest.basis == "f32" and highest.value == chip.flops["f32"]
    assert not any(r.assumption for r in (default, high, highest))


@pytest.mark.parametrize("name", TPUS)
def test_tpus_run_f32_products_in_bf16_passes(name: str) -> None:
    chip = load(name)
    bf16 = chip.flops["bf16"]
    rates = [chip.matmul_rate("f32", p) for p in PRECISIONS]
    assert [r.value for r in rates] == [bf16, bf16 / 3, bf16 / 6]
    assert [r.basis for r in rates] == ["bf16", "bf16 / 3", "bf16 / 6"]


@pytest.mark.parametrize("precision", PRECISIONS)
def test_only_f32_products_follow_the_precision(precision: str) -> None:
    for name in CHIPS:
        chip = load(name)
        for dtype in ("bf16", "int8", "fp8"):
            assert chip.matmul_rate(dtype, precision) == chip.matmul_rate(dtype)


def test_a_missing_rate_names_its_assumption() -> None:
    assert load("tpu-v5e").matmul_rate("int4").assumption == (
        "tpu-v5e has no int4 rate; using its int8 rate"
    )
    assert load("a100").matmul_rate("fp8").assumption == (
        "a100 has no fp8 rate; using its bf16 rate"
    )
    assert load("h200").matmul_rate("int8").assumption is None
    with pytest.raises(ValueError, match="precision"):
        load("h200").matmul_rate("f32", "fastest")


def test_a_missing_rate_warns_h030_once_per_dtype() -> None:
    text = (
        "hardware tpu-v5e\ndim M=256, K=256, N=256\nA: int4[M, K]\nB: int4[K, N]\n"
        "C[M, N] = A ·_K B\nD[M, N] = A ·_K B\n"
    )
    result = run_pipeline(as_source(text))
    warnings = [d for d in result.diagnostics.items if d.code == "H030"]
    assert len(warnings) == 1 and warnings[0].severity == "warning"
    assert warnings[0].message == "tpu-v5e has no int4 rate; using its int8 rate"
    assert warnings[0].span.line == 5
    quiet = run_pipeline(as_source(text.replace("int4", "bf16")))
    assert not [d for d in quiet.diagnostics.items if d.code == "H030"]


def test_the_report_prices_f32_at_the_precision() -> None:
    text = "dim M=4096, K=4096, N=4096\nA: f32[M, K]\nB: f32[K, N]\nC[M, N] = A ·_K B\n"
    flops = 2 * 4096**3
    for hw, precision, rate in (
        ("h100", "default", 4.945e14),
        ("h100", "high", 4.945e14),
        ("h100", "highest", 6.7e13),
        ("tpu-v5p", "default", 4.59e14),
        ("tpu-v5p", "high", 4.59e14 / 3),
        ("tpu-v5p", "highest", 4.59e14 / 6),
    ):
        r = shardc.compile(text, hw=hw, matmul_precision=precision)
        assert r.value(r.totals["t_math_s"]) == pytest.approx(flops / rate), (hw, precision)
    with pytest.raises(ValueError, match="matmul_precision"):
        shardc.compile(text, hw="h100", matmul_precision="tf32")  # type: ignore[arg-type]


def test_the_condition_uses_the_rate_of_the_dtype_in_play() -> None:
    text = "dim M=4096, K=4096, N=4096\nA: f32[M, K]\nB: f32[K, N]\nC[M, N] = A ·_K B\n"
    default = shardc.compile(text, hw="h200")
    highest = shardc.compile(text, hw="h200", matmul_precision="highest")
    (cond,) = [c for c in default.conditions if c.name == "compute-vs-hbm"]
    assert "C_f32" in str(cond.relation)
    assert default.value(default.conditions[0].relation.rhs) == pytest.approx(4.945e14 / 4.8e12)
    assert highest.value(highest.conditions[0].relation.rhs) == pytest.approx(6.7e13 / 4.8e12)


def test_hw_show_lists_every_rate_and_the_f32_products(capsys: pytest.CaptureFixture) -> None:
    assert main(["hw", "show", "h200"]) == 0
    out = capsys.readouterr().out
    for line in (
        "f32         6.7e13 FLOP/s (67 TFLOP/s) on the vector units",
        "tf32        4.945e14 FLOP/s (494 TFLOP/s) on the tensor cores",
        "int8        1.979e15 OP/s (1.98 POP/s) on the tensor cores",
        "f32 matmul  default 4.945e14 (tf32), high 4.945e14 (tf32), highest 6.7e13 (f32)",
    ):
        assert line in out


@pytest.mark.parametrize(
    "command",
    [
        ["compile", "-", "--matmul-precision", "highest"],
        ["check", "-", "--matmul-precision", "high"],
        ["derive", "-", "--matmul-precision", "highest", "--set", "M=64"],
    ],
)
def test_the_cli_takes_the_precision(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """In this process, the program in a file (`-`, standard input, is the same reader)."""
    program = tmp_path / "p.shard"
    program.write_text(
        "hardware h200\ndim M=64, K=64, N=64\nA: f32[M, K]\nB: f32[K, N]\nC[M, N] = A ·_K B\n",
        encoding="utf-8",
    )
    argv = [str(program) if a == "-" else a for a in command]
    assert main(argv) in (0, 1), capsys.readouterr().err
    with pytest.raises(SystemExit) as bad:
        main([command[0], str(program), "--matmul-precision", "fastest"])
    assert bad.value.code == 2 and "--matmul-precision" in capsys.readouterr().err


def test_critical_intensities_use_the_products_rate() -> None:
    assert load("h200").hbm_intensity("f32") == pytest.approx(4.945e14 / 4.8e12)
    assert load("tpu-v5e").hbm_intensity("f32") == pytest.approx(1.97e14 / 8.1e11)
    assert load("h200").hbm_intensity("int8") == pytest.approx(1.979e15 / 4.8e12)
