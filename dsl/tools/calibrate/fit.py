"""Fit a chip's calibration to micro-benchmark rows: numpy only, a grid and a closed form.

The model is the one `passes/derive_cost.py` prices each op with (docs/cost-model.md, "Expected
time"): an op takes `t_call + max(F / (eta_mxu C), H / (eta_hbm W_hbm))` and a program call at
least `t_dispatch`; with the chip's clocks (`k_boost` = boost / power-limited clock, measured,
not fitted) the power cap makes it `max(t_call + max(F / (eta_mxu k_boost C), H / (eta_hbm
W_hbm)), F / (eta_mxu C))`. The efficiencies are fitted on a grid (`GRID`) in (0, 1]; for each
pair the launch cost minimising the squared relative error has a closed form (a weighted mean,
kept at 0 or more) over the rows it moves, found again until those rows settle. Only rows whose
role is "fit" are used; "held-out" rows are predicted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from shardc.hardware.calibration import Row

EXPOSED_GRID = np.arange(0.0, 1.0 + 1e-9, 0.1)
"""Shares of a memory-bound product's math tried as exposed (c_expose), then steps of 0.02
around the best."""

GRID = np.concatenate(
    [np.geomspace(1e-5, 0.05, 160, endpoint=False), np.arange(0.05, 1.0 + 1e-9, 0.0025)]
)
"""Efficiencies tried: steps of 0.0025 from 0.05 to 1, and geometric below (a CPU run against a
GPU's peaks reaches a small fraction)."""


@dataclass(frozen=True, slots=True)
class Fit:
    """The fitted figures and every row with its fitted time."""

    eta_mxu: float
    eta_hbm: float
    t_call: float
    t_dispatch: float
    rows: tuple[Row, ...]
    exposed: float | None = None
    """c_expose, where it was fitted: the share of a memory-bound product's math exposed."""

    def residuals(self) -> list[tuple[Row, float]]:
        """Each timed row with fitted / measured median - 1."""
        return [
            (r, r.fitted_s / r.median_s - 1)
            for r in self.rows
            if r.fitted_s is not None and r.kind != "dispatch"
        ]


def predict(
    row: Row,
    rate: float,
    w_hbm: float,
    eta_mxu: float,
    eta_hbm: float,
    t_call: float,
    t_dispatch: float,
    k_boost: float = 1.0,
    exposed: float = 0.0,
) -> float:
    """The model's time for one row (a single-op program).

    >>> r = Row("x", "matmul", "bf16", 2e12, 0.0, 1.0, 1.0, 1.0)
    >>> predict(r, 1e12, 1e12, 0.5, 1.0, 0.0, 0.0)
    4.0
    >>> predict(r, 1e12, 1e12, 0.5, 1.0, 1.0, 0.0, k_boost=2.0)  # launch + math at boost
    4.0
    >>> m = Row("m", "matmul", "bf16", 1e12, 4e12, 1.0, 1.0, 1.0)
    >>> predict(m, 1e12, 1e12, 1.0, 1.0, 0.0, 0.0, exposed=0.5)  # memory-bound: 4 + 0.5 x 1
    4.5
    """
    if row.kind == "dispatch":
        return t_dispatch
    math = row.flops / (eta_mxu * rate)
    fast = math / k_boost
    hbm = row.bytes / (eta_hbm * w_hbm) + (exposed * fast if row.kind == "matmul" else 0.0)
    return max(t_dispatch, t_call + max(fast, hbm), math)


def fit(
    rows: Sequence[Row],
    rate: Callable[[str, str], float],
    w_hbm: float,
    k_boost: float = 1.0,
    exposed: bool = False,
) -> Fit:
    """Fit eta_mxu, eta_hbm, t_call and t_dispatch to the rows whose role is "fit";
    `k_boost` (the chip's boost over power-limited clock, 1 for none) is given, not fitted;
    with `exposed`, c_expose too (on `EXPOSED_GRID`, then in steps of 0.02 around the best; the
    smallest of equal fits).

    `rate(dtype, precision)` is the chip's peak FLOP/s for a row's product
    (`Chip.matmul_rate`). Without a product among the
    fitted rows eta_mxu is 1; without an elementwise row, eta_hbm is 1.

    >>> rows = [Row("m", "matmul", "bf16", 1e12, 1e6, 2.0, 2.0, 2.0),
    ...         Row("e", "elementwise", "bf16", 0.0, 1e12, 4.0, 4.0, 4.0)]
    >>> f = fit(rows, lambda d, p: 1e12, 1e12)
    >>> round(f.eta_mxu, 3), round(f.eta_hbm, 3), round(f.t_call, 9)
    (0.5, 0.25, 0.0)
    """
    used = [r for r in rows if r.role == "fit"]
    floors = [r.median_s for r in used if r.kind == "dispatch"]
    t_dispatch = float(np.median(floors)) if floors else 0.0
    timed = [r for r in used if r.kind != "dispatch"]
    if not timed:
        return _with_fitted(
            Fit(1.0, 1.0, 0.0, t_dispatch, tuple(rows), 0.0 if exposed else None),
            rate,
            w_hbm,
            k_boost,
        )
    m = np.array([r.median_s for r in timed])
    tf = np.array([r.flops / rate(r.dtype, r.precision) for r in timed])
    th = np.array([r.bytes / w_hbm for r in timed])
    product = np.array([r.kind == "matmul" for r in timed])
    best: tuple[float, Fit] | None = None
    for grid in (EXPOSED_GRID, None) if exposed else ((0.0,),):
        if grid is None:  # the finer steps around the coarse best
            c0 = best[1].exposed or 0.0 if best is not None else 0.0
            grid = np.round(np.arange(max(0.0, c0 - 0.08), min(1.0, c0 + 0.08) + 1e-9, 0.02), 2)
        for c in grid:
            err, f = _fit_at(m, tf, th, product * c, k_boost, t_dispatch, rows)
            if best is None or err < best[0] - 1e-15:
                best = (err, replace(f, exposed=float(c)) if exposed else f)
    assert best is not None
    return _with_fitted(best[1], rate, w_hbm, k_boost)


def _fit_at(
    m, tf, th, c, k_boost: float, t_dispatch: float, rows: Sequence[Row]
) -> tuple[float, Fit]:
    """The best (error, Fit) with each row's exposed share `c` of its math given."""
    # k[i, j, row]: the kernel time at eta_mxu = GRID[i], eta_hbm = GRID[j]
    math = tf[None, None, :] / GRID[:, None, None]
    fast = math / k_boost
    k = np.maximum(fast, th[None, None, :] / GRID[None, :, None] + c * fast)
    # argmin over t of sum((t + k - m)^2 / m^2): t = sum((m - k) / m^2) / sum(1 / m^2), over
    # the rows t moves (where t + k is above the power cap's math); again until they settle
    w = np.broadcast_to(1.0 / m**2, k.shape)
    moved = np.ones(k.shape, dtype=bool)
    for _ in range(8):
        wm = np.where(moved, w, 0.0)
        t = np.clip(((m - k) * wm).sum(axis=2) / np.maximum(wm.sum(axis=2), 1e-300), 0.0, None)
        now = t[..., None] + k >= math
        if (now == moved).all():
            break
        moved = now
    pred = np.maximum(t_dispatch, np.maximum(t[..., None] + k, math))
    err = (((pred - m) / m) ** 2).sum(axis=2)
    if not (tf > 0).any():
        err[:-1, :] = np.inf  # nothing constrains eta_mxu: keep it at 1
    if not (th > 0).any():
        err[:, :-1] = np.inf
    i, j = np.unravel_index(int(np.argmin(err)), err.shape)
    return float(err[i, j]), Fit(
        float(GRID[i]), float(GRID[j]), float(t[i, j]), t_dispatch, tuple(rows)
    )


def _with_fitted(
    f: Fit, rate: Callable[[str, str], float], w_hbm: float, k_boost: float = 1.0
) -> Fit:
    rows = tuple(
        replace(
            r,
            fitted_s=predict(
                r,
                rate(r.dtype, r.precision),
                w_hbm,
                f.eta_mxu,
                f.eta_hbm,
                f.t_call,
                f.t_dispatch,
                k_boost,
                f.exposed or 0.0,
            ),
        )
        for r in f.rows
    )
    return replace(f, rows=rows)


def table(f: Fit) -> str:
    """Measured against fitted, with residuals, one row per line (what `calibrate` prints)."""
    lines = [f"{'case':<28} {'role':<9} {'median':>11} {'fitted':>11} {'residual':>9}"]
    for r, res in f.residuals():
        fitted = r.fitted_s or 0.0
        lines.append(
            f"{r.case:<28} {r.role:<9} {r.median_s * 1e6:>9.1f}us "
            f"{fitted * 1e6:>9.1f}us {res * 100:>+8.1f}%"
        )
    lines.append(
        f"eta_mxu = {f.eta_mxu:.4g}   eta_hbm = {f.eta_hbm:.4g}   "
        f"t_call = {f.t_call * 1e6:.3g} us   t_dispatch = {f.t_dispatch * 1e6:.3g} us"
        + (f"   c_expose = {f.exposed:.3g}" if f.exposed is not None else "")
    )
    return "\n".join(lines)
