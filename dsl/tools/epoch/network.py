"""Hierarchical network pieces of Appendix 8.1.2, vectorized over configurations.

A configuration's parallelism degrees are powers of two, held as exponents ("bits") per
dimension in the order `DIMS`; a placement says how many of each dimension's bits sit on each
network level, innermost first (the GPU index's low bits are the node). Per-GPU volumes are
*received* words; times divide them by unidirectional words/s, which equals the paper's
bidirectional volume over bidirectional bandwidth (ambiguity 4).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from shardc.passes.memo import EPOCH_COMPOSITIONS, memoized
from shardc.tools.epoch.presets import NetworkLevel

DIMS = ("dp", "ff", "model", "pp", "ep")
DP, FF, MODEL, PP, EP = range(len(DIMS))
FILL_ORDER = (FF, MODEL, EP, PP, DP)
"""Canonical placement, innermost first: tensor parallelism on the fastest links (Section 8.1.2,
"it usually makes sense to do tensor parallelism at lower levels"), data parallelism outermost."""


def level_bits(levels: tuple[NetworkLevel, ...]) -> list[int | None]:
    """Bits of GPU index per level: log2 of each level's group size over the one below it.

    >>> from shardc.tools.epoch.presets import get
    >>> level_bits(get("h100").levels), level_bits(get("h100-superpod").levels)
    ([3, None], [3, 5, None])
    """
    out: list[int | None] = []
    below = 1
    for lv in levels:
        if lv.size is None:
            out.append(None)
            break
        bits = math.log2(lv.size / below)
        assert bits == int(bits), f"level {lv.name!r}: sizes must be powers of two"
        out.append(int(bits))
        below = lv.size
    return out


@memoized(EPOCH_COMPOSITIONS, lambda most, parts: (most, parts))
def _compositions(most: int, parts: int) -> np.ndarray:
    """Every way to write 0, 1, ..., `most` as an ordered sum of `parts` non-negative integers,
    by total (read-only: one array per argument pair, shared by every search)."""
    rows = sorted(
        (c for c in itertools.product(range(most + 1), repeat=parts) if sum(c) <= most), key=sum
    )
    out = np.array(rows, dtype=np.int64).reshape(-1, parts)
    out.flags.writeable = False
    return out


def _fill(remaining: np.ndarray, capacity: float) -> np.ndarray:
    """Bits each dimension puts on a level of `capacity` bits, filling in FILL_ORDER."""
    ordered = remaining[:, FILL_ORDER]
    before = np.cumsum(ordered, axis=1) - ordered
    take = np.clip(capacity - before, 0, ordered)
    out = np.empty_like(remaining)
    out[:, FILL_ORDER] = take
    return out


def canonical_placement(exps: np.ndarray, levels: tuple[NetworkLevel, ...]) -> np.ndarray:
    """Bits per (config, dim, level) with every level filled in FILL_ORDER. Shape (R, 5, H)."""
    remaining = exps.copy()
    per_level = []
    for cap in level_bits(levels):
        take = remaining.copy() if cap is None else _fill(remaining, cap)
        per_level.append(take)
        remaining = remaining - take
    return np.stack(per_level, axis=2)


def all_placements(
    exps: np.ndarray, levels: tuple[NetworkLevel, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Every split of the innermost level's bits among the dimensions (further inner levels are
    filled in FILL_ORDER). Returns (row index into `exps`, bits of shape (R', 5, H))."""
    caps = level_bits(levels)
    if len(caps) == 1:
        return np.arange(len(exps)), exps[:, :, None].copy()
    first = caps[0]
    assert first is not None  # only the outermost level is unbounded
    used = np.minimum(first, exps.sum(axis=1))
    comps = _compositions(first, len(DIMS))
    ok = (comps[None, :, :] <= exps[:, None, :]).all(axis=2) & (
        comps.sum(axis=1)[None, :] == used[:, None]
    )
    row, comp = np.nonzero(ok)
    inner = comps[comp]
    remaining = exps[row] - inner
    per_level = [inner]
    for cap in caps[1:]:
        take = remaining.copy() if cap is None else _fill(remaining, cap)
        per_level.append(take)
        remaining = remaining - take
    return row, np.stack(per_level, axis=2)


def allreduce_words(size: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Words each GPU receives per level for a hierarchical all-reduce of `size` words.

    Level h all-reduces what the levels below left after their reduce-scatter,
    2 (size / prod_{k<h} N(k)) (N(h) - 1) / N(h), the standard algorithm; summed over levels this
    is Eq. 2's 2 size (N - 1)/N, so the levels only split the traffic. Shape (R, H).

    >>> allreduce_words(np.array([8.0]), np.array([[1, 2]]))    # 2 in-node x 4 outside
    array([[8., 6.]])
    """
    n_level = 2.0**bits
    below = np.cumprod(
        np.concatenate([np.ones_like(n_level[:, :1]), n_level[:, :-1]], axis=1), axis=1
    )
    return 2 * size[:, None] / below * (n_level - 1) / n_level


def spanned_latency(bits: np.ndarray, latency: np.ndarray) -> np.ndarray:
    """Latency of one collective: one step per level the group spans (latencies add)."""
    return ((bits > 0) * latency[None, :]).sum(axis=1)


def p2p_fractions(
    pp_bits: np.ndarray, ep_bits: np.ndarray, interleave: np.ndarray, layers: float
) -> tuple[np.ndarray, np.ndarray]:
    """P_P2P(h) for h = 1..H and the PP interface counts per level (Appendix 8.1.2).

    Returns (fractions of the L - 1 block interfaces that send on each level, shape (R, H);
    pipeline-stage interfaces per level, shape (R, H)).
    """
    rows, H = pp_bits.shape
    if layers < 2:
        zero = np.zeros((rows, H))
        return zero, zero
    rest_pp = 2.0 ** np.cumsum(pp_bits[:, ::-1], axis=1)[:, ::-1]  # prod_{k>=h} N_PP(k)
    above = np.where(rest_pp > 1, interleave[:, None] * rest_pp - 1, 0.0)
    above_next = np.concatenate([above[:, 1:], np.zeros((rows, 1))], axis=1)
    pp_counts = above - above_next
    p_pp = np.concatenate([(layers - 1 - above[:, :1]), pp_counts], axis=1) / (layers - 1)
    rest_ep = 2.0 ** np.cumsum(ep_bits[:, ::-1], axis=1)[:, ::-1]
    n_ep = 2.0**ep_bits
    p_ep = np.concatenate([1 / rest_ep[:, :1], (n_ep - 1) / rest_ep], axis=1)
    joint = np.cumsum(p_pp, axis=1) * np.cumsum(p_ep, axis=1)
    return np.diff(joint, axis=1), pp_counts


def p2p_latency(
    pp_counts: np.ndarray,
    ep_bits: np.ndarray,
    interleave: np.ndarray,
    n_pp: np.ndarray,
    layers: float,
    latency: np.ndarray,
) -> np.ndarray:
    """Latency of one pass's point-to-point hops along a microbatch's path through all blocks.

    Expert routing is taken at its worst (8.1.2): with expert parallelism every block boundary
    hops on the highest EP level, and a pipeline interface on the higher of the two levels.
    """
    H = latency.shape[0]
    lat0 = np.concatenate([[0.0], latency])  # level 0: no hop
    has_ep = ep_bits > 0
    top_ep = np.where(has_ep.any(axis=1), H - np.argmax(has_ep[:, ::-1], axis=1), 0)
    levels = np.arange(1, H + 1)[None, :]
    pp_lat = (pp_counts * lat0[np.maximum(levels, top_ep[:, None])]).sum(axis=1)
    other = np.maximum(layers - interleave * n_pp, 0) * lat0[top_ep]
    return pp_lat + other
