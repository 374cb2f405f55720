"""The roofline is a bound: on every call measured on one H200 (tests/data/measured-h200), shardc's
T_lower for the same call on `hardware h200` is at or below the fastest measured run.

A check of the model against recorded data, not a timing test: nothing here is timed.
"""

from __future__ import annotations

import tomllib

import pytest

import shardc
from tests.paths import TESTS

DATA = TESTS / "data" / "measured-h200"
ROWS = tomllib.loads((DATA / "measured.toml").read_text(encoding="utf-8"))["row"]


def _lower(row: dict) -> float:
    report = shardc.compile(DATA / row["program"], matmul_precision=row["precision"])
    value = report.value(report.totals["t_lower_s"])
    assert value is not None and value > 0
    return value


def test_every_row_names_a_program() -> None:
    assert len(ROWS) == 28
    for row in ROWS:
        assert (DATA / row["program"]).is_file(), row
        assert 0 < row["min_s"] <= row["median_s"] <= row["p90_s"], row


@pytest.mark.parametrize("row", ROWS, ids=[r["case"] for r in ROWS])
def test_t_lower_is_at_or_below_the_fastest_run(row: dict) -> None:
    t_lower = _lower(row)
    assert t_lower <= row["min_s"], (
        f"{row['case']}: T_lower {t_lower * 1e6:.1f} us beats the fastest measured run "
        f"{row['min_s'] * 1e6:.1f} us"
    )


def test_the_fused_silu_product_is_three_array_passes() -> None:
    """`silu(A) * B` is one fused kernel in XLA: it reads A and B and writes C (3 passes of
    256 MiB), where the two ops alone would move 5."""
    (row,) = [r for r in ROWS if r["case"] == "ew_silu_mul_256MiB"]
    report = shardc.compile(DATA / row["program"])
    passes = report.value(report.totals["hbm_bytes"]) / (256 * 2**20)
    assert passes == pytest.approx(3)


def test_f32_follows_the_precision() -> None:
    """TF32 at DEFAULT and HIGH, full f32 on the CUDA cores at HIGHEST (the H200's figures:
    494.5 and 67 TFLOP/s), each below the measured minimum."""
    flops = 2 * 8192**3
    times = {}
    for precision in ("default", "high", "highest"):
        r = shardc.compile(DATA / "f32_8192.shard", matmul_precision=precision)
        times[precision] = r.value(r.totals["t_math_s"])
    assert times["default"] == times["high"] == pytest.approx(flops / 4.945e14)
    assert times["highest"] == pytest.approx(flops / 6.7e13)
