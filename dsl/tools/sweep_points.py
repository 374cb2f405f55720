"""A sweep's grid points read as `Report.value` reads a point: where the grid binds every size
the report leaves free, each whole-number point is the compile with its sizes bound
(`driver.points.at`, remembered per point in the report's `passes.memo` table), which plans as
the program declaring them does (`passes.lower.walk.as_declared`) and may run a plan the
regions' formulas lack. Between whole numbers (a log grid, the crossovers' bisection) the
formulas hold: a compile binds whole sizes only.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from shardc.driver.caches import POINTS
from shardc.lang.input_limits import REGIONS_SECONDS
from shardc.tools.sweep_grid import Grid

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.tools.sweep_plans import Plan, PlanChange

MAX_COMPILED = POINTS
"""Whole-number points a sweep compiles at most (a compile is 50-250 ms on the programs in
programs/; the report keeps as many): past it, every point takes the regions' formulas and the
sweep's note says so."""
SECONDS = REGIONS_SECONDS
"""CPU time a sweep spends compiling its points at most (the regions' budget)."""
WHOLE = 1e-12
"""A grid value this close (relatively) to a whole number is that number (`geomspace` gives
10000.000000000002 for 1e4)."""


@dataclass(frozen=True, slots=True)
class Compiled:
    """The grid points compiled (flat C-order index, the report there), and the note."""

    at: tuple[tuple[int, Report], ...]
    note: str | None


def whole_points(report: Report, grids: Sequence[Grid]) -> list[tuple[int, dict[str, float]]]:
    """The grid's points where the compile is defined and may differ from the formulas: every
    size the report leaves free bound by a grid axis, at whole numbers (flat C-order index and
    the bindings); [] where some free size stays free (the regions are the compile's there)."""
    from shardc.driver.points import free_sizes

    free = free_sizes(report)
    names = [g.name for g in grids]
    if report.recipe is None or not free or not free <= set(names):
        return []
    sizes = report.program.dims_and_mesh
    out = []
    for flat, index in enumerate(np.ndindex(*(g.n for g in grids))):
        point: dict[str, float] = {}
        for k, name in enumerate(names):
            v = float(grids[k].values[index[k]])
            if name not in sizes:  # a hardware figure: bound as it is
                point[name] = v
                continue
            n = round(v)
            if n < 1 or abs(v - n) > WHOLE * v:
                break
            point[name] = n
        else:
            out.append((flat, point))
    return out


def compile_points(report: Report, grids: Sequence[Grid]) -> Compiled:
    """The report at each of `whole_points` (`Report.at`, as `value` reads a point), all of
    them or none: past `MAX_COMPILED` points, or where the points compiled so far say the rest
    would take past `SECONDS` of CPU time (a 200-statement program compiles in seconds), every
    point keeps the formulas and the note says so. A point a compile refuses keeps the
    formulas, as `value` does."""
    todo = whole_points(report, grids)
    if len(todo) > MAX_COMPILED:
        return Compiled((), _past(f"more than the {MAX_COMPILED} a sweep compiles", len(todo)))
    at = []
    start = time.process_time()
    first = 0.0  # the first point warms the plan caches: the rest are projected without it
    for k, (flat, point) in enumerate(todo, 1):
        try:
            at.append((flat, report.at(**point)))
        except (ValueError, ArithmeticError):  # K003, a repeat run < 1: the formulas
            pass
        spent = time.process_time() - start
        first = first or spent
        rest = (spent - first) / (k - 1) if k > 1 else 0.0
        if spent > SECONDS or first + rest * (len(todo) - 1) > SECONDS:
            return Compiled((), _past(f"past the {SECONDS:g} s of CPU time", len(todo)))
    return Compiled(tuple(at), None)


def _past(limit: str, n: int) -> str:
    return (
        f"{n:,} whole-number points to compile, {limit} a sweep spends on them: every "
        "point takes the regions' formulas (`shardc compile --set` gives one point's plan)"
    )


def read(
    compiled: Compiled,
    values: dict[str, np.ndarray],
    quantity: Callable[[Report, str], Any],
) -> int:
    """Overwrite each compiled point's values with the compile's (`quantity` reads a name or
    formula of a report); the number of points whose values changed."""
    changed = 0
    for name, array in values.items():  # the formulas' arrays may be broadcast views
        if compiled.at and not array.flags.writeable:
            values[name] = np.array(array)
    for flat, there in compiled.at:
        differs = False
        for name, array in values.items():
            got = there.value(quantity(there, name))
            if got is None or not math.isfinite(got):
                continue
            index = np.unravel_index(flat, array.shape)
            old = float(array[index])
            if not math.isclose(old, got, rel_tol=1e-12, abs_tol=0.0):
                differs = True
            array[index] = got
        changed += differs
    return changed


def relabel(
    compiled: Compiled,
    plans: Sequence[Plan],
    plan: np.ndarray | None,
    shape: tuple[int, ...],
    default: Report,
) -> tuple[tuple[Plan, ...], np.ndarray | None, dict[str, str]] | None:
    """The plans with each compiled point's own (by its collectives; a plan the regions lack
    gets the next letter), each point's plan, the shares counted again, and the letters of
    the plans kept (old to new: a plan no point runs any more is dropped); None where no
    point's plan changed. `default`: the report whose plan holds where the regions give
    one plan."""

    from shardc.driver.region_totals import collectives
    from shardc.tools.sweep_plans import LETTERS, Plan

    out = list(plans) or [Plan("A", collectives(default), "everywhere", 1.0)]
    which = plan.copy() if plan is not None else np.zeros(shape, dtype=np.int64)
    changed = False
    for flat, there in compiled.at:
        text = collectives(there)
        k = next((i for i, p in enumerate(out) if p.collectives == text), None)
        if k is None:
            if len(out) == len(LETTERS):
                continue
            k = len(out)
            out.append(Plan(LETTERS[k], text, "where a compile at the point chooses it", 0.0))
        index = np.unravel_index(flat, shape)
        if int(which[index]) != k:
            which[index], changed = k, True
    if not changed:
        return None
    # the plans some point runs, lettered again in order (`letters`: old letter to new)
    kept = [i for i in range(len(out)) if (which == i).any()]
    if len(kept) < 2:
        return (), None, {}
    renumber = np.full(len(out), -1, dtype=np.int64)
    renumber[kept] = np.arange(len(kept))
    letters = {out[i].letter: LETTERS[k] for k, i in enumerate(kept)}
    which = renumber[which]
    plans_out = tuple(
        dataclasses.replace(out[i], letter=LETTERS[k], share=float(np.mean(which == k)))
        for k, i in enumerate(kept)
    )
    return plans_out, which, letters


def changes(
    grids: Sequence[Grid],
    which: np.ndarray,
    plans: Sequence[Plan],
    refined: Sequence[PlanChange],
    letters: dict[str, str],
) -> tuple[PlanChange, ...]:
    """Where the letter changes along the first axis: the change the regions' bisection
    found between the two grid points where it names the same plans, else at the first grid
    point of the new plan (a compile binds whole sizes: there is nothing to bisect)."""
    from shardc.tools.sweep_plans import PlanChange

    refined = [
        dataclasses.replace(c, before=letters[c.before], after=letters[c.after])
        for c in refined
        if c.before in letters and c.after in letters
    ]
    i, *rest = np.nonzero(which[:-1] != which[1:])
    g0 = grids[0]
    x = g0.values
    out = []
    for n in range(len(i)):
        where = {grids[m + 1].name: float(grids[m + 1].values[r[n]]) for m, r in enumerate(rest)}
        before = plans[int(which[(i[n], *(r[n] for r in rest))])].letter
        after = plans[int(which[(i[n] + 1, *(r[n] for r in rest))])].letter
        lo, hi = sorted((float(x[i[n]]), float(x[i[n] + 1])))
        same = [
            c
            for c in refined
            if (c.before, c.after, c.where) == (before, after, where) and lo <= c.at <= hi
        ]
        out.append(
            same[0] if same else PlanChange(g0.name, float(x[i[n] + 1]), where, before, after)
        )
    return tuple(sorted(out, key=lambda c: (tuple(c.where.values()), c.at)))


def note(changed: int, total: int) -> str:
    """The sweep's note where compiled points differ from the regions' formulas."""
    return (
        f"{changed:,} of the {total:,} whole-number points differ from the regions' formulas: "
        "each shows the compile with its sizes bound, as `value` at the point does"
    )


__all__ = [
    "MAX_COMPILED",
    "SECONDS",
    "Compiled",
    "changes",
    "compile_points",
    "note",
    "read",
    "relabel",
]
