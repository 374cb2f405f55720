"""The optimizer of Section 6.1 (items 5 and 6): the best parallelization of a GPU count, and the
smallest power-of-two cluster that trains a model within t_train.

`search` tries every parallelization of 2**n GPUs: degrees (powers of two), the split of the
innermost network level among them, the pipeline schedule, microbatches and interleaving. It is
an exact branch and bound in three stages: degree tuples whose bound (`step.lower_bound`)
exceeds a quick upper bound are dropped; the rest are timed with every schedule on the
canonical placement, and rows whose placement-free bound (`StepTimes.bound`) loses are dropped;
the rest are timed on every placement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shardc.tools.epoch import network as nw
from shardc.tools.epoch.presets import THREE_MONTHS_S, Preset
from shardc.tools.epoch.scaling import Shape, shape_for
from shardc.tools.epoch.step import (
    DEFAULT_OPTIONS,
    MAX_INTERLEAVE,
    Configs,
    Options,
    StepTimes,
    evaluate,
    lower_bound,
)

MAX_BITS = 40
"""Clusters up to 2^40 GPUs."""
CANDIDATES = 24
"""Degree tuples a full search hands on to later searches at the same cluster size."""
ZB_MICRO_MULTIPLES = (1, 2, 4, 8, 16)
INTERLEAVES = (1, 2, 4)
assert max(INTERLEAVES) <= MAX_INTERLEAVE, "step.lower_bound covers interleaving up to there"


@dataclass(frozen=True, slots=True)
class Best:
    """The fastest configuration for one GPU count."""

    n_gpu: int
    t_step: float
    mfu: float
    degrees: dict[str, int]
    placement: tuple[tuple[int, ...], ...]
    """Per level, innermost first: the factor of each dimension (order `network.DIMS`)."""
    schedule: str
    micro: int
    interleave: int


@dataclass(frozen=True, slots=True)
class Point:
    """A three-month training run of `t_flop` FLOP on a cluster, and its utilization."""

    t_flop: float
    mfu: float
    """Model FLOP utilization against peak FLOP/s at the boost clock; 0 if nothing fits."""
    n_gpu: int | None
    t_run_s: float
    best: Best | None
    exact: bool = True
    """False for a point from a restricted search: its MFU is only a lower bound."""


def degree_tuples(shape: Shape, n_bits: int) -> np.ndarray:
    """Every (dp, ff, model, pp, ep) exponent tuple summing to n_bits within the model's sizes:
    N_PP <= L, N_EP <= E, N_TP,ff <= d_ff, N_TP,model <= d_model, N_DP <= b / E."""

    def cap(x: float) -> int:
        return min(n_bits, int(math.floor(math.log2(max(x, 1)) + 1e-9)))

    grids = (
        np.indices(
            (
                cap(shape.d_ff) + 1,
                cap(shape.d_model) + 1,
                cap(shape.layers) + 1,
                cap(shape.experts) + 1,
            )
        )
        .reshape(4, -1)
        .T
    )
    dp = n_bits - grids.sum(axis=1)
    ok = (dp >= 0) & (dp <= cap(shape.batch / shape.experts))
    return np.column_stack([dp[ok], grids[ok]]).astype(np.int64)


def next_size(exps: np.ndarray) -> np.ndarray:
    """The degree tuples one bit larger: each of `exps` with one dimension doubled.

    >>> next_size(np.array([[1, 0, 0, 0, 0]])).tolist()
    [[1, 0, 0, 0, 1], [1, 0, 0, 1, 0], [1, 0, 1, 0, 0], [1, 1, 0, 0, 0], [2, 0, 0, 0, 0]]
    """
    up = exps[:, None, :] + np.eye(exps.shape[1], dtype=exps.dtype)[None]
    return np.unique(up.reshape(-1, exps.shape[1]), axis=0)


def schedules(e_pp: int, layers: float) -> list[tuple[bool, int, int]]:
    """(zero bubble, m, i) to try with N_PP = 2**e_pp.

    ZB-H2 with 1 to 16 times its minimum 2 N_PP - 1 microbatches, and interleaved 1F1B with
    fewer microbatches than that (with more, ZB-H2 is better) and i in 1, 2, 4 (N_PP i <= L).

    >>> schedules(1, 8)[:5], len(schedules(1, 8))
    ([(True, 3, 1), (True, 6, 1), (True, 12, 1), (True, 24, 1), (True, 48, 1)], 11)
    """
    n_pp = 2**e_pp
    m0 = 2 * n_pp - 1
    out = [(True, m0 * k, 1) for k in ZB_MICRO_MULTIPLES]
    for il in INTERLEAVES:
        if n_pp == 1 or n_pp * il > layers:
            break
        out += [(False, 2**k, il) for k in range(int(math.log2(m0)) + 1)]
    return out


def expand(exps: np.ndarray, bits: np.ndarray, layers: float, quick: bool = False) -> Configs:
    """Each row once per schedule (with `quick`, only ZB-H2 at its minimum m and plain 1F1B)."""
    rows, zb, m, il = [], [], [], []
    for e_pp in np.unique(exps[:, nw.PP]):
        table = schedules(int(e_pp), layers)
        if quick:
            table = table[:1] + [s for s in table if not s[0]][:1]
        idx = np.nonzero(exps[:, nw.PP] == e_pp)[0]
        # every row of this degree once per schedule, schedule by schedule
        rows.append(np.tile(idx, len(table)))
        zb.append(np.repeat(np.array([z for z, _, _ in table], dtype=bool), len(idx)))
        m.append(np.repeat(np.array([float(mm) for _, mm, _ in table]), len(idx)))
        il.append(np.repeat(np.array([float(i) for _, _, i in table]), len(idx)))
    r = np.concatenate(rows)
    return Configs(exps[r], bits[r], np.concatenate(zb), np.concatenate(m), np.concatenate(il))


def _pick(cfg: Configs, times: StepTimes, n_bits: int) -> Best | None:
    fastest = times.t_step.min() if len(times.t_step) else np.inf
    if not np.isfinite(fastest):
        return None
    tied = np.nonzero(times.t_step <= fastest * (1 + 1e-9))[0]
    k = tied[np.argmin(times.t_network[tied])]  # ties: least network time (6.1 item 5)
    bits = cfg.bits[k]
    return Best(
        2**n_bits,
        float(times.t_step[k]),
        float(times.mfu[k]),
        {d: int(2 ** cfg.exps[k, j]) for j, d in enumerate(nw.DIMS)},
        tuple(tuple(int(2**v) for v in bits[:, h]) for h in range(bits.shape[1])),
        "ZB-H2" if cfg.zero_bubble[k] else "1F1B",
        int(cfg.micro[k]),
        int(cfg.interleave[k]),
    )


def _leaders(exps: np.ndarray, t_step: np.ndarray, k: int) -> np.ndarray:
    """The k distinct degree tuples with the fastest rows."""
    order = np.argsort(t_step, kind="stable")
    rows = exps[order].astype(np.int64)
    # One integer per tuple (the degrees are small exponents): np.unique over rows (axis=0)
    # sorts a structured view, 20x slower than over integers.
    lo = rows.min(axis=0) if len(rows) else np.zeros(rows.shape[1], dtype=np.int64)
    span = (rows.max(axis=0) - lo + 1) if len(rows) else np.ones(rows.shape[1], dtype=np.int64)
    weights = np.cumprod(np.concatenate(([1], span[:-1])))
    _, first = np.unique((rows - lo) @ weights, return_index=True)
    return exps[order[np.sort(first)[:k]]]


def search(
    shape: Shape,
    preset: Preset,
    n_bits: int,
    options: Options = DEFAULT_OPTIONS,
    candidates: np.ndarray | None = None,
    hint: np.ndarray | None = None,
) -> tuple[Best | None, np.ndarray]:
    """The fastest parallelization and the leading degree tuples. With `candidates`, only
    those tuples are searched (every schedule and placement): a warm start for nearby models
    on the same cluster. Without, every tuple is, and `hint` (tuples likely to be fast, such
    as a smaller cluster's leaders one bit larger) only sets the first upper bound."""
    exps = degree_tuples(shape, n_bits) if candidates is None else candidates
    if not len(exps):
        return None, exps
    if candidates is None:  # 1. drop tuples whose bound exceeds an upper bound
        bound = lower_bound(shape, preset, exps, options)
        upper = np.inf
        if hint is not None and len(hint):  # any step time achieved is an upper bound
            upper = _every_schedule(shape, preset, hint, options)[1].t_step.min()
        if not np.isfinite(upper):  # else the quick schedules of every tuple
            canonical = nw.canonical_placement(exps, preset.levels)
            upper = evaluate(
                shape, preset, expand(exps, canonical, shape.layers, quick=True), options
            ).t_step.min()
        exps = exps[bound <= upper * (1 + 1e-9)]
    cfg, times = _every_schedule(shape, preset, exps, options)
    return _pick(cfg, times, n_bits), _leaders(cfg.exps, times.t_step, CANDIDATES)


def _every_schedule(
    shape: Shape, preset: Preset, exps: np.ndarray, options: Options
) -> tuple[Configs, StepTimes]:
    """Every schedule and placement of the degree tuples `exps` (placements only for rows
    whose placement-free bound can win)."""
    # 2. every schedule on the canonical placement; keep rows whose placement-free bound wins
    cfg = expand(exps, nw.canonical_placement(exps, preset.levels), shape.layers)
    times = evaluate(shape, preset, cfg, options)
    if len(preset.levels) > 1:  # 3. every placement of the innermost level for those rows
        keep = np.nonzero(times.bound <= times.t_step.min() * (1 + 1e-9))[0]
        rows, bits = nw.all_placements(cfg.exps[keep], preset.levels)
        idx = keep[rows]
        cfg = Configs(
            cfg.exps[idx], bits, cfg.zero_bubble[idx], cfg.micro[idx], cfg.interleave[idx]
        )
        times = evaluate(shape, preset, cfg, options, matmul=times.t_matmul[idx])
    return cfg, times


def best_config(
    shape: Shape, preset: Preset, n_bits: int, options: Options = DEFAULT_OPTIONS
) -> Best | None:
    """The fastest parallelization of `shape` on 2**n_bits GPUs (None if none is valid).

    >>> from shardc.tools.epoch.presets import get
    >>> b = best_config(shape_for(1e25), get("h100"), 11)
    >>> b.n_gpu, b.schedule, round(b.mfu, 2)
    (2048, 'ZB-H2', 0.69)
    """
    return search(shape, preset, n_bits, options)[0]


def smallest_cluster(
    shape: Shape,
    preset: Preset,
    t_train_s: float = THREE_MONTHS_S,
    options: Options = DEFAULT_OPTIONS,
) -> Point:
    """The smallest power-of-two cluster that trains `shape` within t_train, and its MFU.

    Starts where even sustained full utilization would need that many GPUs, doubles until the
    run fits, and gives up once doubling stops shortening the step (the latency wall).
    """
    budget = t_train_s / shape.steps
    floor = shape.t_flop / (preset.gpu.sustained_flops * t_train_s)
    n_bits = max(0, math.ceil(math.log2(max(floor, 1.0))))
    previous, stalled = math.inf, 0
    while n_bits <= MAX_BITS:
        best = best_config(shape, preset, n_bits, options)
        if best is not None and best.t_step <= budget:
            return Point(shape.t_flop, best.mfu, best.n_gpu, best.t_step * shape.steps, best)
        t = best.t_step if best is not None else math.inf
        stalled = stalled + 1 if t > 0.99 * previous else 0
        if stalled >= 2:
            break
        previous = min(previous, t)
        n_bits += 1
    return Point(shape.t_flop, 0.0, None, math.inf, None)


def utilization(
    preset: Preset,
    t_flop: float,
    sparse: bool = False,
    batch_law: str = "baseline",
    options: Options = DEFAULT_OPTIONS,
) -> Point:
    """MFU of a three-month run of `t_flop` FLOP on the smallest power-of-two cluster."""
    return smallest_cluster(shape_for(t_flop, sparse, batch_law), preset, THREE_MONTHS_S, options)
