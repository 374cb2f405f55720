"""`shardc sweep`: evaluate a report's quantities over a grid of sizes with one `sympy.lambdify`
to numpy per program, find where T_math meets T_comms (and T_hbm), and print or plot the result.

matplotlib (the optional extra `shardc[plot]`) is imported only by the two plot functions.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp

from shardc.driver.document import TOTALS
from shardc.lang.dtypes import NAMES as DTYPE_NAMES
from shardc.lang.input_limits import MAX_SWEEP_POINTS
from shardc.lang.numeric import parse_number
from shardc.lang.quoting import quoted
from shardc.lang.syntax import DimDecl, MeshDecl, Program
from shardc.lang.units import fmt_grid
from shardc.passes.sizes import known_sizes
from shardc.passes.symbols import HARDWARE_NAMES, as_expr, size_symbol
from shardc.tools.sweep_grid import Grid, refine

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.tools.sweep_plans import Plan, PlanChange

DTYPES = frozenset(DTYPE_NAMES)
DEFAULT_QUANTITIES = ("t_math_s", "t_hbm_s", "t_comms_s", "t_lower_s", "bound")
TIMES = ("t_math_s", "t_hbm_s", "t_comms_s")
"""Always evaluated (when they have values): they give the bound and the crossovers."""
CROSSINGS = (("t_math_s", "t_comms_s"), ("t_math_s", "t_hbm_s"))
DERIVED = {"intensity": "flops_per_device/hbm_bytes", "flops_per_s": "flops_per_device/t_lower_s"}
"""Quantities beyond the report's totals: arithmetic intensity (the roofline chapter) and achieved
FLOP/s."""
LABELS = {t.key: t.label for t in TOTALS} | {
    "intensity": "intensity",
    "flops_per_s": "FLOP/s",
    "bound": "bound",
}
UNITS = {t.key: t.unit for t in TOTALS} | {"flops_per_s": "flop"}
MAX_ROWS, MAX_COLUMNS = 41, 8


def label_of(name: str) -> str:
    """A quantity's name as tables and plots print it (`T_comms` for `t_comms_s`)."""
    return LABELS.get(name, name)


"""The table's compact view: larger grids are thinned (csv and json hold every point)."""


class SweepError(ValueError):
    """A usage error: a bad grid, an unknown name, a quantity that does not evaluate."""


# ---- grids ---------------------------------------------------------------------------------
SPEC = re.compile(r"(?P<start>[^:]+):(?P<stop>[^:]+):(?P<scale>lin|log)(?P<n>\d+)")


def parse_setting(text: str) -> tuple[str, float | Grid]:
    """`NAME=NUMBER` or `NAME=START:STOP:linN|logN`.

    >>> parse_setting("B=1e3:1e7:log40")
    ('B', Grid(name='B', start=1000.0, stop=10000000.0, n=40, scale='log'))
    >>> parse_setting("D=4k")
    ('D', 4000.0)
    """
    m = re.fullmatch(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*=\s*(\S+)\s*", text)
    if not m:
        raise SweepError(f"--set expects NAME=VALUE or NAME=START:STOP:logN, got {quoted(text)}")
    name, spec = m.groups()
    if ":" not in spec:
        return name, _number(spec, text, name)
    g = SPEC.fullmatch(spec)
    if not g:
        raise SweepError(
            f"bad grid {quoted(spec)} for {name}: expected START:STOP:linN or "
            "START:STOP:logN, e.g. 1e3:1e7:log40"
        )
    if len(g["n"]) > len(str(MAX_SWEEP_POINTS)) or int(g["n"]) > MAX_SWEEP_POINTS:
        raise SweepError(
            f"--set {name}: a grid of {g['n'][:20]} points is more than the "
            f"{MAX_SWEEP_POINTS:,} a sweep evaluates"
        )
    start, stop, n = _number(g["start"], text, name), _number(g["stop"], text, name), int(g["n"])
    if n < 2:
        raise SweepError(f"bad grid {quoted(spec)} for {name}: a grid needs at least 2 points")
    if start == stop:
        raise SweepError(f"bad grid {quoted(spec)} for {name}: START and STOP are equal")
    if g["scale"] == "log" and (start <= 0 or stop <= 0):
        raise SweepError(f"bad grid {quoted(spec)} for {name}: a log grid needs positive ends")
    return name, Grid(name, start, stop, n, g["scale"])  # type: ignore[arg-type]


def parse_settings(texts: Sequence[str]) -> tuple[dict[str, float], tuple[Grid, ...]]:
    """Split `--set` arguments into fixed numbers and one or two grid axes."""
    fixed: dict[str, float] = {}
    grids: list[Grid] = []
    seen: set[str] = set()
    for text in texts:
        name, value = parse_setting(text)
        if name in seen:
            raise SweepError(f"--set names {quoted(name)} twice")
        seen.add(name)
        if isinstance(value, Grid):
            grids.append(value)
        else:
            fixed[name] = value
    if not grids:
        raise SweepError("nothing to sweep: give a grid, e.g. --set B=1e3:1e7:log40")
    if len(grids) > 2:
        raise SweepError(
            "a sweep takes one or two grid axes, got " + ", ".join(g.name for g in grids)
        )
    points = math.prod(g.n for g in grids)
    if points > MAX_SWEEP_POINTS:
        raise SweepError(
            "--set: the grids "
            + " x ".join(f"{g.name} ({g.n:,})" for g in grids)
            + f" make {points:,} points, more than the {MAX_SWEEP_POINTS:,} a "
            "sweep evaluates"
        )
    return fixed, tuple(grids)


def _number(text: str, where: str, name: str) -> float:
    """A value or grid end for `name`, through the checked conversions every number of a
    report takes (`shardc.lang.numeric`): a hardware figure in a chip figure's range, anything
    else a size's point from above 0 to 2**63 - 1, so no grid reaches a negative, zero or
    overflowing size (`B=-1:1:lin5` gave negative times)."""
    from shardc.lang.numeric import NumberError, figure, positive

    try:
        parse_number(text)
    except NumberError:
        raise SweepError(
            f"--set: {quoted(text)} in {quoted(where)} is not a number (try 4096, 4_096, 1e6 or 4M)"
        ) from None
    hardware = is_hardware(name)
    try:
        if hardware:
            return figure(text, f"hardware figure {name!r}")
        return positive(text, f"size {name!r}")
    except NumberError as exc:
        rule = (
            "a hardware figure is positive, from 1e-150 to 1e150"
            if hardware
            else "a size's values are positive, at most 2**63 - 1"
        )
        raise SweepError(f"--set {quoted(where)}: {exc} ({rule})") from None


def is_hardware(name: str) -> bool:
    """Whether `--set` names a hardware figure (`C`, `C_int8`, `W_hbm`, ...) rather than a
    size."""
    return name in HARDWARE_NAMES or name == "C" or (name.startswith("C_") and name[2:] in DTYPES)


def known_names(program: Program) -> list[str]:
    """The dims and mesh axes a program declares (hardware names are always known)."""
    names: list[str] = []
    for stmt in program.statements:
        if isinstance(stmt, MeshDecl):
            names.extend(a.name for a in stmt.axes)
        elif isinstance(stmt, DimDecl):
            names.extend(d.name for d in stmt.dims)
    return names


def check_names(names: Sequence[str], program: Program, program_name: str) -> None:
    """Raise `SweepError` for a `--set` name that is not a dim, mesh axis or hardware symbol."""
    known = known_names(program)
    for name in names:
        if name not in known and not is_hardware(name):
            raise SweepError(
                f"--set names {quoted(name)}, which is not a dimension, mesh axis or "
                f"hardware quantity of {program_name} (known: " + ", ".join(known) + ")"
            )


# ---- evaluation ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Crossover:
    """`a` and `b` are equal at `axis = at` (with the other grid axis at `where`)."""

    a: str
    b: str
    axis: str
    at: float
    where: dict[str, float]
    larger_above: str
    jump: bool = False
    """The sign changes where the plan does (a discontinuity), not where the two meet."""

    def describe(self) -> str:
        other = "".join(f", {k} = {fmt_grid(v)}" for k, v in self.where.items())
        how = "the plan changes there; " if self.jump else ""
        return (
            f"{label_of(self.a)} = {label_of(self.b)} at {self.axis} = {fmt_grid(self.at)}{other}"
            f"   ({how}{label_of(self.larger_above)} larger above)"
        )


@dataclass
class Sweep:
    """One program evaluated on a grid; `values` hold every quantity in the grid's shape."""

    program: str
    hardware: str | None
    model: str
    grids: tuple[Grid, ...]
    shown: tuple[str, ...]
    values: dict[str, np.ndarray]
    bound: np.ndarray | None
    crossovers: tuple[Crossover, ...]
    seconds: float
    fixed: dict[str, float]
    notes: tuple[str, ...] = ()
    roof: tuple[float, float] | None = None
    """The chip's (C, W_hbm) for a roofline, when both have values."""
    plans: tuple[Plan, ...] = ()
    """The plans the grid reaches, where it reaches several (`sweep_plans`)."""
    plan: np.ndarray | None = None
    """Each point's plan, an index into `plans` (None with one plan)."""
    plan_changes: tuple[PlanChange, ...] = ()

    @property
    def points(self) -> int:
        return int(np.prod([g.n for g in self.grids]))

    def column(self, name: str) -> np.ndarray:
        return self.bound if name == "bound" else self.values[name]  # type: ignore[return-value]


def quantity(report: Report, text: str) -> sp.Expr:
    """A total's name, a derived quantity (`intensity`, `flops_per_s`) or a formula over both
    and the program's names, e.g. `t_math_s/t_comms_s` or `2*B*D*F/C` (`grammar/expr.lark`;
    never evaluated as Python). An unknown name or a bad formula is a `SweepError` naming --y.
    """
    from shardc.driver.user_expr import ExprError, formula, number_formula

    t = text.strip()
    if t in report.totals:
        return as_expr(report.totals[t])
    known = known_quantity_names(report)

    def resolve(name: str) -> sp.Expr:
        if name in report.totals:
            return as_expr(report.totals[name])
        if name in DERIVED:
            return formula(DERIVED[name], resolve)
        if name in known:
            return report.symbol(name)
        raise ExprError(f"unknown name {name!r} (known: {', '.join(known)})")

    try:
        return number_formula(t, resolve)
    except ExprError as exc:
        raise SweepError(exc.render("--y", text).removeprefix("shardc: error: ")) from None


def check_quantity(text: str) -> None:
    """A --y formula's own mistakes, found before the program is compiled: its syntax, an
    unknown function, a comparison, a division by a zero it spells out. Each name stands for a
    symbol that may be anything, so what this refuses `quantity` refuses for every report; its
    names are checked against the report there."""
    from shardc.driver.user_expr import ExprError, number_formula

    try:
        number_formula(text.strip(), sp.Symbol)
    except ExprError as exc:
        raise SweepError(exc.render("--y", text).removeprefix("shardc: error: ")) from None


def known_quantity_names(report: Report) -> list[str]:
    """The names a --y formula may use: totals, derived quantities, sizes, chip figures."""
    sizes = [n for n, _ in (*report.program.dims, *report.program.mesh)]
    hardware = sorted(s.name for s in report.cost.symbols.all_for(set(DTYPES)))
    return list(dict.fromkeys([*report.totals, *DERIVED, *sizes, *hardware]))


def symbol(report: Report, name: str) -> sp.Symbol:
    """The symbol a `--set` name binds, as `Report.environment` resolves it."""
    hw = {s.name: s for s in report.cost.symbols.all_for(set(DTYPES))}
    return hw.get(name, size_symbol(name))


class Evaluator:
    """One `lambdify` of every expression; called with arrays for the grid symbols."""

    def __init__(
        self, exprs: dict[str, sp.Expr], grid_syms: Sequence[sp.Symbol], env: dict[sp.Symbol, float]
    ) -> None:
        used = {s for e in exprs.values() for s in e.free_symbols}
        self.args = sorted(used | set(grid_syms), key=lambda s: s.name)
        self.names = list(exprs)
        self.fn: Callable[..., list[Any]] = sp.lambdify(
            self.args, list(exprs.values()), modules="numpy", cse=True
        )
        self.grid_syms = list(grid_syms)
        self.env = env

    def __call__(self, coords: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        at = dict(zip(self.grid_syms, coords, strict=True))
        shape = np.broadcast_shapes(*(np.shape(c) for c in coords))
        with np.errstate(all="ignore"):
            out = self.fn(*[at[a] if a in at else self.env[a] for a in self.args])
        return {
            n: np.broadcast_to(np.asarray(v, dtype=float), shape)
            for n, v in zip(self.names, out, strict=True)
        }


def sweep(
    report: Report,
    grids: Sequence[Grid],
    quantities: Sequence[str] = DEFAULT_QUANTITIES,
    extra: Sequence[str] = (),
) -> Sweep:
    """Evaluate `quantities` (and `extra`, kept but not shown) on the grids' outer product.

    >>> import shardc
    >>> r = shardc.compile("programs/mlp-dp-train.shard")
    >>> s = sweep(r, [Grid("B", 1e3, 1e7, 5, "log")], ["t_math_s"])
    >>> s.values["t_math_s"].shape, s.points, s.crossovers[0].axis
    ((5,), 5, 'B')

    numpy's floating-point warnings are off for the whole evaluation (the plans' classification,
    the crossovers' bisection included): an overflow is not a RuntimeWarning on stderr but a
    value each shown quantity is checked for, a `SweepError` naming the point.
    """
    with np.errstate(all="ignore"):
        return _sweep(report, grids, quantities, extra)


def _sweep(
    report: Report, grids: Sequence[Grid], quantities: Sequence[str], extra: Sequence[str]
) -> Sweep:
    from shardc.tools import sweep_plans, sweep_points

    start = time.perf_counter()
    _check_mesh(report, grids)
    env = report.environment()
    grid_syms = [symbol(report, g.name) for g in grids]
    for s in grid_syms:
        env.pop(s, None)
    found, past = sweep_plans.find_past(report, grids)
    variants = [v.result for v in found] if found else [report]
    if found and len(found) == 1:  # one plan over the grid, not the report's default
        found = ()
    evaluators = [
        Evaluator(_expressions(r, quantities, extra, env, grid_syms), grid_syms, env)
        for r in variants
    ]
    evaluate: Callable[[Sequence[np.ndarray]], dict[str, np.ndarray]] = evaluators[0]
    if found:
        evaluate = sweep_plans.Piecewise(
            found, evaluators, grids, sweep_plans.swept_free(report, grids)
        )
    axes = [
        g.values.reshape([-1 if i == k else 1 for i in range(len(grids))])
        for k, g in enumerate(grids)
    ]
    values = evaluate(axes)
    # where the grid binds every free size: each whole point is the compile there, as `value`
    compiled = sweep_points.compile_points(report, grids)
    differ = sweep_points.read(compiled, values, quantity)
    for q in quantities:
        if q != "bound":
            _check_finite(q, values[q], grids)
    bound = None
    if all(t in values for t in TIMES):
        # argmax over the three times without stacking them (memory at MAX_SWEEP_POINTS);
        # ties go to the first, as argmax does; an object array shares the three strings
        order = np.array(["compute", "hbm", "comms"], dtype=object)
        best, which = values[TIMES[0]], np.zeros(np.shape(values[TIMES[0]]), dtype=np.int8)
        for k, t in enumerate(TIMES[1:], 1):
            larger = values[t] > best
            which[larger] = k
            best = np.where(larger, values[t], best)
        bound = order[which]
    crossings = tuple(
        c
        for a, b in CROSSINGS
        if a in values and b in values
        for c in _crossovers(evaluate, grids, values, a, b)
    )
    plans: tuple[sweep_plans.Plan, ...] = ()
    plan = None
    changes: tuple[sweep_plans.PlanChange, ...] = ()
    if found:
        assert isinstance(evaluate, sweep_plans.Piecewise)
        plans = sweep_plans.plans(found)
        plan = evaluate.plan(axes)
        changes = sweep_plans.changes(evaluate, grids, plan, [p.letter for p in plans])
    regions = plans  # as the regions found them, for the notes
    relabeled = sweep_points.relabel(compiled, plans, plan, tuple(g.n for g in grids), variants[0])
    if relabeled is not None:
        plans, plan, letters = relabeled
        if plan is not None:
            changes = sweep_points.changes(grids, plan, plans, changes, letters)
        else:
            changes = ()
    seconds = time.perf_counter() - start
    fixed = {n: v for n, v in _sizes(report).items() if n not in {g.name for g in grids}}
    notes = _plan_notes(report, grids, found, regions, past)
    if compiled.note:
        notes += (compiled.note,)
    elif differ:
        notes += (sweep_points.note(differ, len(compiled.at)),)
    syms = report.cost.symbols
    c, w_hbm = env.get(syms.flops("bf16")), env.get(syms.w_hbm)
    roof = (c, w_hbm) if c is not None and w_hbm is not None else None
    return Sweep(
        report.name,
        report.hardware_name,
        report.model,
        tuple(grids),
        tuple(quantities),
        values,
        bound,
        crossings,
        seconds,
        fixed,
        notes,
        roof,
        plans,
        plan,
        changes,
    )


def _expressions(
    report: Report,
    quantities: Sequence[str],
    extra: Sequence[str],
    env: dict[sp.Symbol, float],
    grid_syms: Sequence[sp.Symbol],
) -> dict[str, sp.Expr]:
    """The formulas to evaluate: the quantities shown (an error where one lacks values), and
    the three times and `extra` where they have values."""
    exprs: dict[str, sp.Expr] = {}
    for q in quantities:
        if q == "bound":
            for t in TIMES:
                exprs[t] = _bound_expr(report, t, env, grid_syms, q)
        else:
            exprs[q] = _bound_expr(report, q, env, grid_syms, q)
    for q in (*TIMES, *extra):  # evaluated where they have values, not shown
        if q not in exprs:
            e = quantity(report, q)
            if e.free_symbols <= env.keys() | set(grid_syms):
                exprs[q] = e
    return exprs


def _plan_notes(
    report: Report,
    grids: Sequence[Grid],
    found: tuple | None,
    plans: Sequence[Any],
    past: str | None = None,
) -> tuple[str, ...]:
    """How the sweep chose the plans: per point (several plans), or fixed where it could not
    (`past`: the limit the regions' search stopped at, worded as the report words it)."""
    from shardc.driver.region_totals import free_sizes
    from shardc.driver.render.writer import past_text

    if plans:
        return (
            f"{len(plans)} plans across the grid: each point is evaluated with the plan a "
            "compile with its sizes bound chooses",
        )
    sizes = _sizes(report)
    at = [f"{g.name}={fmt_grid(v)}" for g in grids if (v := sizes.get(g.name)) is not None]
    if at:
        return (
            f"collectives as chosen at {', '.join(at)} (the program's values): the sweep "
            "varies sizes, not the plan (compile with free=[...] to vary the plan)",
        )
    if found is None and set(free_sizes(report)) & {g.name for g in grids}:
        return (f"{past_text(past)} across the grid: collectives as chosen at typical sizes",)
    return ()


def _check_mesh(report: Report, grids: Sequence[Grid]) -> None:
    """A swept mesh axis stays within the machines a compile accepts (S015, H020): checked at
    the grid's corner where every swept axis is largest, as a compile bound there would be."""
    from shardc.driver.mesh_limits import check_mesh_bindings

    axes = set(report.program.mesh_axes)
    corner = {g.name: math.ceil(float(np.max(g.values))) for g in grids if g.name in axes}
    if not corner:
        return
    try:
        check_mesh_bindings(report, corner)
    except ValueError as exc:
        raise SweepError(f"--set: the grid reaches {exc}") from None


def _check_finite(q: str, v: np.ndarray, grids: Sequence[Grid]) -> None:
    """A --y quantity must be a finite number at every point (no division by zero)."""
    bad = ~np.isfinite(v)
    if not bad.any():
        return
    where = [int(i) for i in np.unravel_index(int(np.argmax(bad)), v.shape)]
    at = ", ".join(
        f"{g.name} = {fmt_grid(float(g.values[i]))}"
        for g, i in zip(grids, [*where, *[0] * (len(grids) - len(where))], strict=False)
    )
    raise SweepError(
        f"--y {q!r} is not a finite number at {at} (it overflows a float, "
        "past about 1.8e308, or divides by zero)"
    )


def _bound_expr(
    report: Report, q: str, env: dict[sp.Symbol, float], grid_syms: Sequence[sp.Symbol], shown: str
) -> sp.Expr:
    e = quantity(report, q)
    free = sorted(s.name for s in e.free_symbols - env.keys() - set(grid_syms))
    if free:
        hint = (
            "pick a chip with --hw or bind them with --set"
            if report.chip is None
            else "bind them with --set NAME=VALUE"
        )
        raise SweepError(
            f"{shown!r} does not evaluate on {report.name}: no value for {', '.join(free)} ({hint})"
        )
    return e


def _sizes(report: Report) -> dict[str, float]:
    """The values a sweep holds fixed: sizes (`--set` applied), then bound hardware figures."""
    sizes = known_sizes((*report.program.dims, *report.program.mesh), report.bindings)
    return {n: float(v) for n, v in sizes.items()} | {
        n: float(v) for n, v in report.bindings.items() if n not in sizes
    }


def _crossovers(
    evaluate: Callable[[Sequence[np.ndarray]], dict[str, np.ndarray]],
    grids: Sequence[Grid],
    values: dict[str, np.ndarray],
    a: str,
    b: str,
) -> list[Crossover]:
    """Sign changes of a - b along the first axis, refined by bisection (in log space on a log
    grid) with the same compiled function."""
    d = values[a] - values[b]
    s = np.sign(d)
    i, *rest = np.nonzero(s[:-1] * s[1:] < 0)
    if not len(i):
        return []
    g0 = grids[0]
    x = g0.values
    s_lo = s[(i, *rest)]

    def low_side(coords: list[np.ndarray]) -> np.ndarray:
        got = evaluate(coords)
        return np.sign(got[a] - got[b]) == s_lo

    lo, hi, others = refine(grids, i, rest, low_side)
    at = (lo + hi) / 2 if g0.scale != "log" else np.sqrt(lo * hi)
    rising = x[i + 1] > x[i]  # which side holds the larger axis values
    s_above = np.where(rising, -s_lo, s_lo)
    plan = getattr(evaluate, "plan", None)
    jump = (
        plan([lo, *others]) != plan([hi, *others])
        if plan is not None
        else np.zeros(len(at), dtype=bool)
    )
    order = np.lexsort((at, *others[::-1]))  # by the other axis, then along the first
    return [
        Crossover(
            a,
            b,
            g0.name,
            float(at[k]),
            {grids[m + 1].name: float(o[k]) for m, o in enumerate(others)},
            a if s_above[k] > 0 else b,
            bool(jump[k]),
        )
        for k in order
    ]
