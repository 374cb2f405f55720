"""The memory traffic a training framework runs beside the generated layer that the layer
program leaves out, priced at the chip's achievable HBM rate for the calibrated step
(docs/cost-model.md, "What the calibrated step adds to the layer").

The generated layer holds the matmuls, the softmax and the MLP's activation, not the layer's
norms, its residual additions, dropout or the gradient accumulation of microbatches. They are
memory-bound passes over the residual stream, the attention scores and the weights, each a
count of array passes from the framework's kernels:

- two norms a layer (LayerNorm or RMSNorm, before attention and before the MLP): a forward
  read and write, a backward read of the input and the incoming gradient and a write of the
  outgoing one (Apex's and Megatron-LM's fused norm kernels);
- two residual additions: two reads and a write forward; backward, the skip's gradient and the
  branch's input gradient added (two reads, a write);
- with dropout (Megatron-LM's defaults, `--hidden-dropout 0.1 --attention-dropout 0.1`,
  megatron/arguments.py), a byte mask written forward and read backward on each residual
  addition, and on materialised attention a dropout pass over the probabilities: read, write and
  a mask forward; the incoming gradient, the mask and the outgoing gradient backward;
- recomputation runs the forward passes again: all of them under `--remat block`, the
  attention dropout under `--remat selective` (the attention core: Korthikanti et al. 2022,
  section 5);
- pipelined candidates accumulate each microbatch's weight gradients into an fp32 buffer
  (Megatron-LM's `main_grad`; the Llama 3 paper, section 3.3.2: "we use FP32 gradient
  accumulation during backward computation over multiple micro-batches"): per microbatch the
  bf16 gradient read, the fp32 buffer read and written, 10 bytes a parameter, where the program
  counts one gradient a step;
- the optimizer step once a step: mixed-precision Adam reads and writes the fp32 master weight
  and both moments, reads the fp32 gradient and writes the bf16 weight (30 bytes a parameter it
  updates; ZeRO shards it over the data axes).

The roofline leaves these out (it stays a bound); a chip without a calibration has none of them
in its calibrated step either, which is then the roofline's.
"""

from __future__ import annotations

from typing import Any

from shardc.hardware import Chip

NORM_PASSES = (2.0, 3.0)
"""Array passes over the residual stream of one norm, forward and backward."""

RESIDUAL_PASSES = (3.0, 3.0)
"""Array passes of one residual addition, forward and backward."""

MASK_PASS = 0.5
"""A dropout mask's pass over a bf16 array: one byte an element."""

ATTENTION_DROPOUT_PASSES = (2.0 + MASK_PASS, 2.0 + MASK_PASS)
"""Passes over the attention probabilities of their dropout, forward and backward."""

MAIN_GRAD_BYTES = 10.0
"""Bytes a parameter of accumulating one microbatch's bf16 gradient into the fp32 buffer."""

OPTIMIZER_BYTES = 30.0
"""Bytes a parameter of one mixed-precision Adam step: fp32 master, both moments read and
written (24), the fp32 gradient read (4), the bf16 weight written (2)."""


def hbm_rate(chip: Chip) -> float | None:
    """The chip's achievable HBM bytes a second (its calibration's eta_hbm x W_hbm), or None
    without a calibration."""
    cal = getattr(chip, "calibration", None)
    if cal is None or not chip.hbm_bw:
        return None
    return chip.hbm_bw * cal.eta_hbm


def _bytes(r: Any, name: str) -> float:
    for a in r.cost.arrays:
        if a.name == name:
            return float(r.value(a.bytes_per_device) or 0.0)
    return 0.0


def param_bytes(r: Any) -> float:
    """The bf16 bytes of the program's parameters one device holds."""
    return sum(_bytes(r, p) for p in r.program.params)


def layer_seconds(
    r: Any, chip: Chip, remat: str, dropout: float, attention: str = "materialized"
) -> float:
    """The framework's passes of one compiled layer program (its batch, per device) that the
    program leaves out, in seconds at the achievable HBM rate; 0 without a calibration. Flash
    attention drops out its probabilities inside its kernel (Dao et al. 2022): no pass."""
    rate = hbm_rate(chip)
    if rate is None:
        return 0.0
    stream = _bytes(r, "In")  # the residual stream as the layer holds it (sharded under SP)
    scores = _bytes(r, "Sc") if attention == "materialized" else 0.0  # the [b, heads, s, s]
    fwd = 2 * (NORM_PASSES[0] + RESIDUAL_PASSES[0]) * stream
    bwd = 2 * (NORM_PASSES[1] + RESIDUAL_PASSES[1]) * stream
    core_f = core_b = 0.0
    if dropout > 0:
        fwd += 2 * MASK_PASS * stream
        bwd += 2 * (2.0 + MASK_PASS) * stream
        core_f, core_b = (p * scores for p in ATTENTION_DROPOUT_PASSES)
    again = (fwd + core_f) if remat == "block" else core_f if remat == "selective" else 0.0
    return (fwd + bwd + core_f + core_b + again) / rate


def accumulation_seconds(r: Any, chip: Chip, microbatches: int) -> float:
    """Accumulating each of `microbatches` microbatches' weight gradients of one compiled
    layer program into fp32, in seconds at the achievable HBM rate (0 without a
    calibration)."""
    rate = hbm_rate(chip)
    if rate is None:
        return 0.0
    return microbatches * param_bytes(r) / 2 * MAIN_GRAD_BYTES / rate


def optimizer_seconds(r: Any, chip: Chip, shards: int) -> float:
    """One Adam step over the parameters of a compiled program one device holds, their
    optimizer state sharded `shards` ways more (ZeRO-1 over the data axes), in seconds at the
    achievable HBM rate (0 without a calibration)."""
    rate = hbm_rate(chip)
    if rate is None:
        return 0.0
    return param_bytes(r) / 2 / max(1, shards) * OPTIMIZER_BYTES / rate


def framework_seconds(
    r: Any, part: Any, chip: Chip, layout: Any, options: Any, microbatches: int = 0
) -> float:
    """What the calibrated step adds to one run of a compiled part (`part.name` "layer" or
    another): the layer's passes, the gradients of `microbatches` microbatches accumulated in
    fp32 (0: no accumulation, the step is one batch), and its share of the optimizer step."""
    out = 0.0
    if part.name in ("layer", "moe-layer"):
        out += layer_seconds(r, chip, options.remat, options.dropout, options.attention)
    if microbatches:
        out += accumulation_seconds(r, chip, microbatches)
    shards = layout.degree("data") if options.zero >= 1 and not layout.fsdp else 1
    return out + optimizer_seconds(r, chip, shards)
