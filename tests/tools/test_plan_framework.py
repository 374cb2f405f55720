"""The framework's passes that the calibrated step adds to a generated layer
(`shardc.tools.plan.framework`; docs/cost-model.md, "What the calibrated step adds to the
layer"): norms, residual additions, dropout, fp32 gradient accumulation and the optimizer step,
priced at the chip's achievable HBM rate, never in the roofline."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc import hardware
from shardc.cli.app import main
from shardc.tools.plan import Options, plan
from shardc.tools.plan.accounting import compile_parts
from shardc.tools.plan.framework import (
    MAIN_GRAD_BYTES,
    accumulation_seconds,
    hbm_rate,
    layer_seconds,
    optimizer_seconds,
)

A100 = hardware.load("a100")
ARGS = ("llama3-8b", A100, 16, 16 * 4096, 4096)


def _layer(remat: str = "none"):
    """The compiled layer of LLaMA 3 8B on 16 A100, FSDP x TP 8, materialised attention."""
    from shardc.tools.models import load
    from shardc.tools.plan.strategies import choose_slice, one_layout

    card = load("llama3-8b")
    c = one_layout(card, A100, choose_slice(A100, 16), "fsdp-tp", 8, 16, 4096)
    ((_, r, _), *_) = compile_parts(card, A100, c.layout, 16, 4096, Options(remat=remat))
    return r


@pytest.fixture(scope="module")
def layer():
    return _layer()


def test_the_rate_is_the_calibrated_hbm_rate():
    assert hbm_rate(A100) == pytest.approx(A100.hbm_bw * A100.calibration.eta_hbm)
    assert hbm_rate(hardware.load("tpu-v5p")) is None  # no calibration: nothing is added


def test_each_term_is_positive_and_dropout_and_recomputation_add(layer):
    plain = layer_seconds(layer, A100, "none", 0.0)
    assert plain > 0
    assert layer_seconds(layer, A100, "none", 0.1) > plain
    block = layer_seconds(_layer("block"), A100, "block", 0.1)
    selective = layer_seconds(_layer("selective"), A100, "selective", 0.1)
    assert block > selective > 0


def test_flash_attention_drops_out_inside_its_kernel(layer):
    """Only materialised attention pays a dropout pass over its probabilities."""
    flash = layer_seconds(layer, A100, "none", 0.1, "flash")
    assert layer_seconds(layer, A100, "none", 0.0) < flash
    assert flash < layer_seconds(layer, A100, "none", 0.1, "materialized")


def test_accumulation_grows_with_the_microbatches(layer):
    one = accumulation_seconds(layer, A100, 1)
    assert accumulation_seconds(layer, A100, 4) == pytest.approx(4 * one)
    assert accumulation_seconds(layer, A100, 0) == 0.0
    params = (
        sum(
            float(layer.value(a.bytes_per_device))
            for a in layer.cost.arrays
            if a.name in layer.program.params
        )
        / 2
    )
    assert one == pytest.approx(params * MAIN_GRAD_BYTES / hbm_rate(A100))


def test_the_optimizer_step_is_sharded_by_zero(layer):
    assert optimizer_seconds(layer, A100, 4) == pytest.approx(optimizer_seconds(layer, A100, 1) / 4)


def test_the_roofline_keeps_none_of_it_and_the_calibrated_step_all():
    (a,) = plan(*ARGS, options=Options(), only=("fsdp-tp", 8)).candidates
    (b,) = plan(*ARGS, options=Options(dropout=0.1), only=("fsdp-tp", 8)).candidates
    assert a.figures["t_step_s"] == b.figures["t_step_s"]
    assert b.figures["t_step_expected_s"] > a.figures["t_step_expected_s"]


@pytest.mark.parametrize("text", ["1", "-0.1", "nan", "inf", "0.1.2", "ten", ""])
def test_a_bad_dropout_is_an_error_not_a_traceback(text, capsys):
    argv = [
        "plan",
        "--card",
        "llama3-8b",
        "--hw",
        "a100",
        "--chips",
        "16",
        "--batch",
        "64Ki",
        "--dropout",
        text,
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert "--dropout" in err and "Traceback" not in err and "\n" not in err, err


@pytest.mark.parametrize("rate", [1.0, -0.1, float("nan"), float("inf"), "0.1", True])
def test_the_python_api_refuses_a_bad_dropout(rate):
    with pytest.raises(ValueError, match="options.dropout"):
        plan(*ARGS, options=Options(dropout=rate), only=("fsdp-tp", 8))


@settings(max_examples=50, deadline=None)
@given(
    st.floats(0, 1, exclude_max=True),
    st.sampled_from(["none", "selective", "block"]),
    st.sampled_from(["materialized", "flash"]),
)
def test_the_passes_are_finite_and_never_fewer_with_dropout_or_recomputation(
    layer, rate, remat, attention
):
    """Any rate and policy: finite, positive seconds; dropout and recomputation only add."""
    t = layer_seconds(layer, A100, remat, rate, attention)
    assert 0 < t < 1e3 and t == t
    assert t >= layer_seconds(layer, A100, "none", 0.0, attention)
    assert layer_seconds(layer, A100, "block", rate, attention) >= t
