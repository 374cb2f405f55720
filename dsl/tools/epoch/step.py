"""Time of one training step for arrays of parallel configurations (Eq. 21, Appendix 8.1.5).

t_step = t_latency + t_DP,n + max(t_DP,y, (max(t_matmul, t_nDP,y) + t_nDP,n) / (1 - f_b)).
Per GPU and step: `t_matmul` is its GEMMs (6 per block per microbatch, grouped over its local
experts), `t_nDP` the bandwidth time of tensor-parallel all-reduces and pipeline/expert
point-to-point sends, `t_DP` the bandwidth time of the gradient all-reduce. Which terms overlap
and which latencies count are decisions recorded in docs/limits.md (ambiguities 7 and 8).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeAlias

import numpy as np

from shardc.tools.epoch import network as nw
from shardc.tools.epoch.gemm import GemmModel
from shardc.tools.epoch.presets import WORD_BYTES, Preset
from shardc.tools.epoch.scaling import Shape

Numbers: TypeAlias = "np.ndarray | float"
"""One value per configuration (an array), or one for all (a number)."""
Flags: TypeAlias = "np.ndarray | bool"


@dataclass(frozen=True, slots=True)
class Options:
    """Modelling choices the paper leaves open."""

    dp_overlap: bool = False
    """Overlap the gradient all-reduce with compute (Eq. 21's t_DP,y). Default off: 8.1.2 says
    data-parallel traffic does not overlap, so it is all t_DP,n."""


DEFAULT_OPTIONS = Options()


@dataclass(frozen=True, slots=True)
class Configs:
    """R parallel configurations: degree exponents, placement and pipeline schedule."""

    exps: np.ndarray
    """(R, 5) log2 of N_DP, N_TP,ff, N_TP,model, N_PP, N_EP (order `network.DIMS`)."""
    bits: np.ndarray
    """(R, 5, H) of those bits on each network level, innermost first."""
    zero_bubble: np.ndarray
    """(R,) True for ZB-H2, False for interleaved 1F1B."""
    micro: np.ndarray
    """(R,) microbatches per step, m."""
    interleave: np.ndarray
    """(R,) interleaving factor, i."""


@dataclass(frozen=True, slots=True)
class StepTimes:
    """Per-configuration results (inf where a configuration breaks a constraint)."""

    t_step: np.ndarray
    t_matmul: np.ndarray
    t_network: np.ndarray
    """Bandwidth time of all communication (t_DP + t_nDP), the paper's tie-breaker."""
    t_latency: np.ndarray
    bubble: np.ndarray
    mfu: np.ndarray
    bound: np.ndarray
    """A step time no placement of the same degrees and schedule can beat: every traffic class
    over the sum of all levels' bandwidths, every hop at the smallest level latency."""


def _levels(preset: Preset) -> tuple[np.ndarray, np.ndarray]:
    words = np.array([lv.words_per_s for lv in preset.levels])
    return words, np.array([lv.latency_s for lv in preset.levels])


def _time_on_levels(words: np.ndarray, words_per_s: np.ndarray) -> np.ndarray:
    """Levels move their share at once (bandwidth overlapped): the slowest level decides."""
    with np.errstate(invalid="ignore"):
        t = np.where(words > 0, words / words_per_s[None, :], 0.0)
    return t.max(axis=1)


def bubble_fraction(
    n_pp: Numbers, micro: Numbers, interleave: Numbers, zero_bubble: Flags
) -> np.ndarray:
    """Eq. 22 for interleaved 1F1B; 0 for ZB-H2.

    >>> float(bubble_fraction(4, 8, 1, False)), float(bubble_fraction(4, 2, 2, False))
    (0.2727272727272727, 0.5555555555555556)
    """
    z = (interleave - 1) * np.maximum(0, n_pp - micro)
    f = (n_pp - 1 + z) / (n_pp - 1 + z + interleave * micro)
    return np.where(zero_bubble, 0.0, f)


STARTUP_EXPOSED = 0.5
"""Part of the pipeline's fill-and-drain share whose sends cannot overlap compute: the startup
half (the clearing half overlaps the deferred weight-gradient GEMMs). A calibrated decision;
docs/limits.md shows the thresholds at 0 and 1."""


def startup_share(n_pp: Numbers, micro: Numbers, interleave: Numbers) -> np.ndarray:
    """Share of non-DP communication that cannot overlap compute: what is sent while the
    pipeline starts (8.1.2), STARTUP_EXPOSED of the fill-and-drain share of the schedule
    (Eq. 22's form), and never less than the first microbatch's share, 1/m.

    >>> float(startup_share(1, 4, 1)), float(startup_share(4, 7, 1))
    (0.25, 0.15)
    """
    z = (interleave - 1) * np.maximum(0, n_pp - micro)
    fill = (n_pp - 1 + z) / (n_pp - 1 + z + interleave * micro)
    return np.maximum(STARTUP_EXPOSED * fill, 1 / micro)


@dataclass(frozen=True, slots=True)
class Local:
    """What one GPU holds and does per microbatch, for given degrees (arrays)."""

    n_gpu: np.ndarray
    f: np.ndarray  # local d_ff
    d: np.ndarray  # local d_model
    experts: np.ndarray  # local experts, E / N_EP
    blocks: np.ndarray  # MLP blocks per pipeline stage, L / N_PP
    tokens: np.ndarray  # nanobatch b' = b / (E N_DP m)
    weights: np.ndarray  # weight words held (both matrices of every local block)

    @staticmethod
    def of(shape: Shape, exps: np.ndarray, micro: Numbers, interleave: Numbers) -> Local:
        n = 2.0**exps
        blocks = shape.layers / n[:, nw.PP] + 0 * interleave
        f = shape.d_ff / n[:, nw.FF]
        d = shape.d_model / n[:, nw.MODEL]
        experts = shape.experts / n[:, nw.EP]
        return Local(
            n.prod(axis=1),
            f,
            d,
            experts,
            blocks,
            shape.batch / (shape.experts * n[:, nw.DP] * micro),
            2 * blocks * experts * f * d,
        )

    def matmul_time(self, gemm: GemmModel, micro: Numbers) -> np.ndarray:
        """m L_local [2 forward + 2 input-gradient + 2 weight-gradient GEMMs] per step."""
        resident = 2 * self.weights * WORD_BYTES  # weights and their gradients
        args = (self.tokens, self.experts, resident)
        per_block = (
            gemm.time(self.f, self.d, *args)
            + gemm.time(self.d, self.f, *args)
            + gemm.time(self.f, self.d, *args, weight_grads=True)
        )
        return micro * self.blocks * 2 * per_block


def evaluate(
    shape: Shape,
    preset: Preset,
    cfg: Configs,
    options: Options = DEFAULT_OPTIONS,
    matmul: np.ndarray | None = None,
) -> StepTimes:
    """Eq. 21 for every configuration (`matmul`: GEMM times already known for these rows)."""
    words_per_s, latency = _levels(preset)
    m, il, zb = cfg.micro, cfg.interleave, cfg.zero_bubble
    n = 2.0**cfg.exps
    loc = Local.of(shape, cfg.exps, m, il)
    t_mm = loc.matmul_time(GemmModel(preset.gpu), m) if matmul is None else matmul

    per_ar = 2 * m * loc.blocks  # all-reduces per step on each TP axis
    tp = per_ar[:, None] * (
        nw.allreduce_words(loc.f * loc.tokens * loc.experts, cfg.bits[:, nw.MODEL])
        + nw.allreduce_words(loc.d * loc.tokens * loc.experts, cfg.bits[:, nw.FF])
    )
    frac, pp_counts = nw.p2p_fractions(cfg.bits[:, nw.PP], cfg.bits[:, nw.EP], il, shape.layers)
    p2p = 2 * shape.batch * shape.d_model * (shape.layers - 1) * frac / loc.n_gpu[:, None]
    dp = nw.allreduce_words(loc.weights, cfg.bits[:, nw.DP])
    t_ndp, t_dp = _time_on_levels(tp + p2p, words_per_s), _time_on_levels(dp, words_per_s)

    lat_dp = 2 * nw.spanned_latency(cfg.bits[:, nw.DP], latency)  # reduce-scatter + all-gather
    lat_tp = (
        2
        * shape.layers
        * (
            (n[:, nw.MODEL] > 1) * nw.spanned_latency(cfg.bits[:, nw.MODEL], latency)
            + (n[:, nw.FF] > 1) * nw.spanned_latency(cfg.bits[:, nw.FF], latency)
        )
    )
    lat_p2p = 2 * nw.p2p_latency(
        pp_counts, cfg.bits[:, nw.EP], il, n[:, nw.PP], shape.layers, latency
    )
    hidden = zb & (m >= 2)  # ZB-H2 hides all but data-parallel latency
    t_lat = lat_dp + np.where(hidden, 0.0, lat_tp + lat_p2p)

    f_b = bubble_fraction(n[:, nw.PP], m, il, zb)
    exposed = startup_share(n[:, nw.PP], m, il)

    def step(lat: np.ndarray, t_dp: np.ndarray, t_ndp: np.ndarray) -> np.ndarray:
        inner = (np.maximum(t_mm, t_ndp * (1 - exposed)) + t_ndp * exposed) / (1 - f_b)
        return lat + (np.maximum(t_dp, inner) if options.dp_overlap else t_dp + inner)

    hops = 2 * shape.layers * ((n[:, nw.MODEL] > 1) + (n[:, nw.FF] > 1)) + 2 * (
        pp_counts.sum(axis=1) + np.maximum(shape.layers - il * n[:, nw.PP], 0) * (n[:, nw.EP] > 1)
    )
    lat_min = latency.min() * (2 * (n[:, nw.DP] > 1) + np.where(hidden, 0.0, hops))
    total_bw = words_per_s.sum()
    bound = step(lat_min, dp.sum(axis=1) / total_bw, (tp + p2p).sum(axis=1) / total_bw)
    t_step = step(t_lat, t_dp, t_ndp)

    valid = (
        (loc.tokens >= 1)
        & (n[:, nw.PP] * il <= shape.layers)
        & (n[:, nw.EP] <= shape.experts)
        & (loc.f >= 1)
        & (loc.d >= 1)
        & (~zb | (m >= 2 * n[:, nw.PP] - 1))
    )
    t_step, bound = np.where(valid, t_step, np.inf), np.where(valid, bound, np.inf)
    useful = 6 * shape.n_params / shape.experts * shape.batch
    mfu = useful / (loc.n_gpu * preset.gpu.peak_flops * t_step)
    return StepTimes(t_step, t_mm, t_dp + t_ndp, t_lat, f_b, mfu, bound)


MAX_INTERLEAVE = 4
"""The largest interleaving factor a schedule may use (the search tries 1, 2 and 4)."""


def lower_bound(
    shape: Shape, preset: Preset, exps: np.ndarray, options: Options = DEFAULT_OPTIONS
) -> np.ndarray:
    """A bound below every placement and schedule of each degree tuple, for pruning.

    GEMM time at m microbatches is at least its time at m = 1 (GEMM time is subadditive in the
    token count) and at least m times that of a microbatch of no tokens (every term of a
    GEMM's time grows with its tokens; what is left is its weights' IO and its latency). ZB-H2 needs
    m >= 2 N_PP - 1; interleaved 1F1B with i <= MAX_INTERLEAVE divides by 1 - f_b, at least
    1 + (N_PP - 1) / (i m) (Eq. 22), and max(A, B m) (1 + c / m) is smallest at m = A / B.
    Each class of traffic is at least its total words over the sum of all levels' bandwidths
    (the levels' words add up to the same total whatever the placement).
    """
    words_per_s, latency = _levels(preset)
    one = np.ones(len(exps))
    n = 2.0**exps
    loc = Local.of(shape, exps, one, one)
    gemm = GemmModel(preset.gpu)
    first = loc.matmul_time(gemm, one)  # A: m = 1
    per_micro = replace(loc, tokens=np.zeros(len(exps))).matmul_time(gemm, one)  # B: per m
    zero_bubble = np.maximum(first, per_micro * (2 * n[:, nw.PP] - 1))
    c = (n[:, nw.PP] - 1) / MAX_INTERLEAVE
    one_f_one_b = np.where(first >= per_micro, first + per_micro * c, per_micro * (1 + c))
    t_mm = np.minimum(zero_bubble, one_f_one_b)
    total_bw = words_per_s.sum()
    frac_m, frac_f = (n[:, nw.MODEL] - 1) / n[:, nw.MODEL], (n[:, nw.FF] - 1) / n[:, nw.FF]
    tp = 4 * loc.blocks * loc.tokens * loc.experts * (loc.f * frac_m + loc.d * frac_f)
    layers = shape.layers
    p_none = (layers - n[:, nw.PP]) / max(layers - 1, 1) / n[:, nw.EP]
    p2p = 2 * shape.batch * shape.d_model * (layers - 1) * (1 - p_none) / loc.n_gpu
    dp = 2 * loc.weights * (n[:, nw.DP] - 1) / n[:, nw.DP]
    t_ndp, t_dp = (tp + p2p) / total_bw, dp / total_bw
    lat = 2 * latency.min() * (n[:, nw.DP] > 1)
    inner = np.maximum(t_mm, t_ndp)
    return lat + (np.maximum(t_dp, inner) if options.dp_overlap else t_dp + inner)
