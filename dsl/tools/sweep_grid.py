"""A sweep's grid axes (`START:STOP:logN` for one name) and the bisection that refines a change
found between two grid points; `sweep` and `sweep_plans` both use them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from shardc.lang.units import fmt_grid


@dataclass(frozen=True, slots=True)
class Grid:
    """`START:STOP:linN` or `START:STOP:logN` for one name."""

    name: str
    start: float
    stop: float
    n: int
    scale: Literal["lin", "log"]

    @property
    def values(self) -> np.ndarray:
        if self.scale == "log":
            return np.geomspace(self.start, self.stop, self.n)
        return np.linspace(self.start, self.stop, self.n)

    def describe(self) -> str:
        ends = f"{fmt_grid(self.start)} .. {fmt_grid(self.stop)}"
        return f"{self.name} = {ends} ({self.scale}, {self.n} points)"


def refine(
    grids: Sequence[Grid],
    i: np.ndarray,
    rest: Sequence[np.ndarray],
    on_low_side: Callable[[list[np.ndarray]], np.ndarray],
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Bisection along the first grid axis between points `i` and `i + 1` (the other axes at
    indices `rest`), in log space on a log grid: `on_low_side(coords)` says which midpoints
    are on point `i`'s side. The bracket (lo, hi) after 60 halvings, and the other axes'
    values."""
    g0 = grids[0]
    x = g0.values
    warp, unwarp = (np.log, np.exp) if g0.scale == "log" else (lambda v: v, lambda v: v)
    lo, hi = warp(x[i]), warp(x[i + 1])
    others = [grids[k + 1].values[j] for k, j in enumerate(rest)]
    for _ in range(60):
        mid = (lo + hi) / 2
        low = on_low_side([unwarp(mid), *others])
        lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
    return unwarp(lo), unwarp(hi), others
