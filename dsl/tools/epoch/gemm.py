"""Time of one GEMM on one GPU (Appendix 8.1.1), vectorized over numpy arrays of shapes.

time = max(HBM IO / HBM bw, L2 IO / L2 bw, shared-memory IO / shared bw, padded FLOP / sustained
FLOP/s) + kernel latency. Kernels are tiled by the weight matrix (weight-stationary) at three
levels: the L2 cache, each SM's register file, and each of its four processing blocks. Weights
and their gradients that fit at a level never move above it (footnote 8).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from shardc.tools.epoch.presets import GPU, WORD_BYTES

USABLE = 0.75
"""Fraction of L2 and of the register file a kernel can fill with tiles (a decision; the paper
does not say; the public companion code uses 0.75)."""
TENSOR_TILE = 16
"""Tensor-core granularity: every GEMM dim is padded to a multiple of 16."""


def _pad(x: np.ndarray) -> np.ndarray:
    return np.ceil(x / TENSOR_TILE) * TENSOR_TILE


def _grid(d1: np.ndarray, d2: np.ndarray, tile_words: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of near-square tiles of at most `tile_words` covering a d1 x d2 weight.

    >>> _grid(np.array([64.0]), np.array([64.0]), 1024.0)
    (array([2.]), array([2.]))
    """
    tile_rows = np.clip(np.sqrt(tile_words), tile_words / d2, d1)
    return d1 / tile_rows, np.maximum(1.0, d2 * tile_rows / tile_words)


def _io(
    out_dim: np.ndarray,
    in_dim: np.ndarray,
    tokens: np.ndarray,
    experts: np.ndarray,
    tile_words: float,
    resident: np.ndarray,
    weight_grads: bool,
) -> np.ndarray:
    """Bytes crossing one level boundary for a weight (out_dim x in_dim) GEMM over `tokens`.

    Forward-like GEMMs (Y = W X, or dX = W^T dY) read the input once per tile row and
    accumulate the output once per tile column (a read and a write after the first); weight
    gradient GEMMs (dW = dY X^T) read dY once per tile column and X once per tile row and
    accumulate dW into memory (read + write) unless it stays resident below.
    """
    rows, cols = _grid(out_dim, in_dim, tile_words)
    weight = WORD_BYTES * out_dim * in_dim * experts
    act_in = WORD_BYTES * in_dim * tokens * experts
    act_out = WORD_BYTES * out_dim * tokens * experts
    if weight_grads:
        moved = np.where(resident, 0.0, 2 * weight)
        return moved + cols * act_out + rows * act_in
    moved = np.where(resident, 0.0, weight)
    return moved + rows * act_in + (2 * cols - 1) * act_out


@dataclass(frozen=True, slots=True)
class GemmModel:
    """GEMM timing for one GPU."""

    gpu: GPU

    def time(
        self,
        out_dim: ArrayLike,
        in_dim: ArrayLike,
        tokens: ArrayLike,
        experts: ArrayLike,
        resident_bytes: ArrayLike,
        weight_grads: bool = False,
    ) -> np.ndarray:
        """Seconds for one kernel: `experts` GEMMs of (out_dim x in_dim) x (in_dim x tokens).

        `resident_bytes` is what the GPU keeps of weights and their gradients (all its layers);
        it decides at which level they live.

        >>> from shardc.tools.epoch.presets import A100
        >>> t = GemmModel(A100).time(12288, 6144, 2048, 1, 2 * 2 * 12288 * 6144 * 2)
        >>> round(float(t) * 1e3, 2)     # Falcon-180B's GEMM: ~1 ms at full utilization (4.3)
        1.17
        """
        g = self.gpu
        out_dim, in_dim, tokens, experts, resident_bytes = np.broadcast_arrays(
            *(
                np.asarray(x, dtype=float)
                for x in (out_dim, in_dim, tokens, experts, resident_bytes)
            )
        )
        l2_cap = USABLE * g.l2_bytes
        sm_cap = USABLE * g.regs_per_sm_bytes
        in_l2 = resident_bytes <= l2_cap
        in_regs = resident_bytes <= g.sms * sm_cap

        def io(tile_bytes: float, resident: np.ndarray) -> np.ndarray:
            return _io(
                out_dim, in_dim, tokens, experts, tile_bytes / WORD_BYTES, resident, weight_grads
            )

        hbm = io(l2_cap, in_l2)
        per_sm = io(sm_cap, in_regs)
        if g.dsmem:  # SMs share tiles: L2 sees one GPU-wide tile; the rest moves SM to SM,
            l2_sm = io(g.sms * sm_cap, in_regs)  # counted once, at the receiving SM
            dsmem = per_sm - l2_sm
        else:
            l2_sm, dsmem = per_sm, 0.0
        regs = io(sm_cap / 4, in_regs)
        flop = 2 * _pad(out_dim) * _pad(in_dim) * _pad(tokens) * experts
        busy = np.maximum.reduce(
            [
                hbm / g.hbm_bw,
                (hbm + l2_sm) / g.l2_bw,
                (l2_sm + dsmem + regs) / g.smem_bw,
                flop / g.sustained_flops,
            ]
        )
        return busy + g.matmul_latency_s

    def single_gpu_utilization(self, side: float = 16384) -> float:
        """MFU of one large square GEMM: the "sustained single-GPU utilization" of Table 3.

        >>> from shardc.tools.epoch.presets import H100
        >>> round(GemmModel(H100).single_gpu_utilization(), 3)
        0.7
        """
        t = self.time(side, side, side, 1, 4 * side * side * WORD_BYTES)
        return float(2 * side**3 / (t * self.gpu.peak_flops))
