"""The plans a sweep's grid reaches: where the cheapest plan of a contraction depends on a swept
size, each point is evaluated with the plans a compile with that point's sizes bound would
choose (`passes.symbolic_plans`), and the points where the plan changes are found along the first
axis.

The program is lowered once per combination of plans that some grid point reaches
(`passes.symbolic_plans.variants` over the grid's points); each point belongs to exactly one of them
(`passes.symbolic_plans.classify`), and the sweep's quantities are that variant's formulas there.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from shardc.lang.units import fmt_grid
from shardc.tools.sweep_grid import Grid, refine

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.passes.symbolic_plans import Variant

LETTERS = string.ascii_uppercase


@dataclass(frozen=True, slots=True)
class Plan:
    """One combination of plans the grid reaches: its letter, its collectives in order, and
    the relations over the swept sizes that bound it on the grid."""

    letter: str
    collectives: str
    condition: str
    share: float
    """The fraction of the grid's points it holds."""


@dataclass(frozen=True, slots=True)
class PlanChange:
    """Along `axis`, the plan changes from `before` to `after` at `at` (the other grid axis at
    `where`)."""

    axis: str
    at: float
    where: dict[str, float]
    before: str
    after: str

    def describe(self) -> str:
        other = "".join(f", {k} = {fmt_grid(v)}" for k, v in self.where.items())
        return f"plan {self.before} -> {self.after} at {self.axis} = {fmt_grid(self.at)}{other}"


def swept_free(report: Report, grids: Sequence[Grid]) -> list[str]:
    """The grid axes that are sizes the report leaves symbolic (so plans may change)."""
    from shardc.driver.region_totals import free_sizes

    free = set(free_sizes(report))
    return [g.name for g in grids if g.name in free]


def grid_points(grids: Sequence[Grid], names: Sequence[str]) -> dict[str, np.ndarray]:
    """Every grid point's coordinate per name, flattened in C order (first axis slowest)."""
    mesh = np.meshgrid(*(g.values for g in grids), indexing="ij")
    return {g.name: m.ravel() for g, m in zip(grids, mesh, strict=True) if g.name in names}


def find(report: Report, grids: Sequence[Grid]) -> tuple[Variant, ...] | None:
    """The variants the grid's points reach: () when the report's own plans hold over the
    whole grid, one variant when another single plan does, None when there are more than
    `MAX_REGIONS` or finding them would lower more than `REGIONS_STATEMENTS` statements."""
    return find_past(report, grids)[0]


def find_past(
    report: Report, grids: Sequence[Grid]
) -> tuple[tuple[Variant, ...] | None, str | None]:
    """`find`, and the limit it stopped at where it returns None (`Shown.past`: "regions",
    "statements" or "seconds", as the report names it)."""
    from shardc.driver import region_totals

    names = swept_free(report, grids)
    if not names:
        return (), None
    return region_totals.find_past(report, grid_points(grids, names))


def plans(found: Sequence[Variant]) -> tuple[Plan, ...]:
    from shardc.driver.region_totals import collectives, condition_text

    return tuple(
        Plan(LETTERS[k], collectives(v.result), condition_text(v), v.share)
        for k, v in enumerate(found)
    )


class Piecewise:
    """Evaluates each variant's formulas where its plans are the ones chosen: called like a
    `sweep.Evaluator`, with arrays for the grid symbols; `plan` gives the variant per point
    (-1 in a region the grid's points did not reach: its values are NaN)."""

    def __init__(
        self,
        found: Sequence[Variant],
        evaluators: Sequence[Callable[..., Any]],
        grids: Sequence[Grid],
        names: Sequence[str],
    ) -> None:
        self.found, self.evaluators = list(found), list(evaluators)
        self.grid_names = [g.name for g in grids]
        self.names = list(names)

    def plan(self, coords: Sequence[np.ndarray]) -> np.ndarray:
        from shardc.passes.symbolic_plans import classify

        shape = np.broadcast_shapes(*(np.shape(c) for c in coords))
        at = {
            n: np.broadcast_to(c, shape).ravel()
            for n, c in zip(self.grid_names, coords, strict=True)
            if n in self.names
        }
        return classify(self.found, at).reshape(shape)

    def __call__(self, coords: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        which = self.plan(coords)
        out: dict[str, np.ndarray] = {}
        for k, evaluate in enumerate(self.evaluators):
            here = which == k
            if not here.any():
                continue
            for name, v in evaluate(coords).items():
                base = out.get(name)
                if base is None:
                    base = np.full(which.shape, np.nan)
                out[name] = np.where(here, v, base)
        return out


def changes(
    piecewise: Piecewise, grids: Sequence[Grid], which: np.ndarray, letters: Sequence[str]
) -> tuple[PlanChange, ...]:
    """Where the plan changes along the first grid axis, refined by bisection (in log space on
    a log grid) with the exact classification."""
    i, *rest = np.nonzero(which[:-1] != which[1:])
    if not len(i):
        return ()
    g0 = grids[0]
    before = which[(i, *rest)]
    lo, hi, others = refine(grids, i, rest, lambda c: piecewise.plan(c) == before)
    after = which[(i + 1, *rest)]
    at = (lo + hi) / 2 if g0.scale != "log" else np.sqrt(lo * hi)
    order = np.lexsort((at, *others[::-1]))
    return tuple(
        PlanChange(
            g0.name,
            float(at[k]),
            {grids[m + 1].name: float(o[k]) for m, o in enumerate(others)},
            letters[int(before[k])],
            letters[int(after[k])],
        )
        for k in order
    )


__all__ = [
    "Piecewise",
    "Plan",
    "PlanChange",
    "changes",
    "find",
    "grid_points",
    "plans",
    "swept_free",
]
