"""eta_attn: the calibrated step prices the flash-attention kernel's products at the
calibration's `[attention].efficiency` (Shah et al. 2024, FlashAttention-2 on an H100);
the roofline and chips without the table are unchanged."""

from __future__ import annotations

import pytest
import sympy as sp

import shardc
from shardc.hardware.calibration import read_calibration_toml
from shardc.hardware.schema import HardwareError

LAYER = """mesh X=8
dim B=8, T=4096, S=4096, D=4096, K=32, H=128
param W_Q: bf16[D, K_X, H]
param W_K: bf16[D, K_X, H]
param W_O: bf16[K_X, H, D]
In: bf16[B, T, D]
Kin: bf16[B, S, D]
Q[B, T, K_X, H] = In[B, T, D] ·_D W_Q
Kc[B, S, K_X, H] = Kin[B, S, D] ·_D W_K
Sc[B, T, S, K_X] = Q ·_H Kc
Pr = exp(Sc)
Att[B, T, K_X, H] = Pr ·_S Kc
A[B, T, D] = Att ·_{K,H} W_O
backward
"""
ETA_ATTN = sp.Symbol("eta_attn", positive=True)
ETA_MXU = sp.Symbol("eta_mxu", positive=True)


def _in_kernel(r) -> list:
    return [c for c in r.ops if c.expected is not None and ETA_ATTN in c.expected.free_symbols]


def test_the_h100_prices_the_flash_kernels_products_at_eta_attn():
    """Only the products that make or read the scores and probabilities (forward and
    backward) take eta_attn; each is slower than at eta_mxu by eta_mxu / eta_attn."""
    r = shardc.compile(LAYER, hw="h100", attention="flash")
    cal = r.chip.calibration
    assert cal.attention is not None and cal.attention.efficiency < cal.eta_mxu
    kernel = _in_kernel(r)
    assert kernel and all(c.kind == "einsum" for c in kernel)
    assert {r.program.ops[c.index].out.array for c in kernel} >= {"Sc", "Att"}
    assert not {r.program.ops[c.index].out.array for c in kernel} & {"Q", "Kc", "A"}
    for c in kernel:
        at_mxu = r.value(c.expected.subs(ETA_ATTN, ETA_MXU))
        assert r.value(c.t_expected) > at_mxu
        math = r.value(c.t_math)
        assert r.value(c.t_expected) >= math / cal.attention.efficiency
    total = r.totals["t_expected_s"]
    assert r.value(total) > r.value(total.subs(ETA_ATTN, ETA_MXU))


def test_the_roofline_is_unchanged_and_still_a_bound():
    r = shardc.compile(LAYER, hw="h100", attention="flash")
    assert ETA_ATTN not in r.totals["t_lower_s"].free_symbols
    assert all(ETA_ATTN not in c.time.free_symbols for c in r.ops)
    assert r.value(r.totals["t_expected_s"]) >= r.value(r.totals["t_lower_s"])


@pytest.mark.parametrize(("hw", "attention"), [("a100", "flash"), ("h100", "materialized")])
def test_no_table_or_no_flash_kernel_keeps_eta_mxu(hw, attention):
    r = shardc.compile(LAYER, hw=hw, attention=attention)
    assert r.chip.calibration is not None
    assert not _in_kernel(r)
    assert ETA_ATTN not in r.totals["t_expected_s"].free_symbols


GOOD = """chip = "x"
[matmul]
efficiency = 0.7
[hbm]
efficiency = 0.8
[call]
launch_s = 0
dispatch_s = 0
[provenance]
kind = "published"
source = "s"
[attention]
efficiency = 0.33
source = "a kernel paper"
"""


def test_the_attention_table_reads_back_and_is_validated():
    from shardc.hardware.calibration import calibration_toml

    c = read_calibration_toml(GOOD, "x.toml")
    assert c.attention is not None and c.attention.efficiency == 0.33
    assert read_calibration_toml(calibration_toml(c), "x.toml") == c
    for bad, where in (
        (GOOD.replace("efficiency = 0.33", "efficiency = 0"), "x.toml:13"),
        (GOOD.replace("efficiency = 0.33", "efficiency = nan"), "x.toml:13"),
        (GOOD.replace('source = "a kernel paper"\n', ""), "x.toml"),
        (GOOD.replace("efficiency = 0.33", "eficiency = 0.33"), "x.toml:13"),
    ):
        with pytest.raises(HardwareError, match=where):
            read_calibration_toml(bad, "x.toml")
