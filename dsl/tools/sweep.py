"""`shardc sweep`: evaluate a report's quantities over a grid of sizes with one `sympy.lambdify`
to numpy per program, find where T_math meets T_comms (and T_hbm), and print or plot the result.

matplotlib (the optional extra `shardc[plot]`) is imported only by the two plot functions.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import sympy as sp

from shardc.driver.printers import SUMMARY
from shardc.lang.dtypes import NAMES as DTYPE_NAMES
from shardc.lang.limits import MAX_SWEEP_POINTS
from shardc.lang.numeric import parse_number
from shardc.lang.syntax import DimDecl, MeshDecl, Program
from shardc.lang.units import fmt_value
from shardc.passes.sizes import known_sizes
from shardc.passes.symbols import HARDWARE_NAMES, as_expr, size_symbol

if TYPE_CHECKING:
    from shardc.driver.report import Report

DTYPES = frozenset(DTYPE_NAMES)
DEFAULT_QUANTITIES = ("t_math_s", "t_hbm_s", "t_comms_s", "t_lower_s", "bound")
TIMES = ("t_math_s", "t_hbm_s", "t_comms_s")
"""Always evaluated (when they have values): they give the bound and the crossovers."""
CROSSINGS = (("t_math_s", "t_comms_s"), ("t_math_s", "t_hbm_s"))
DERIVED = {"intensity": "flops_per_device/hbm_bytes", "flops_per_s": "flops_per_device/t_lower_s"}
"""Quantities beyond the report's totals: arithmetic intensity (000 part 1) and achieved FLOP/s."""
LABELS = {key: label for label, key, _ in SUMMARY} | {
    "intensity": "intensity", "flops_per_s": "FLOP/s", "bound": "bound"}
UNITS = {key: unit for _, key, unit in SUMMARY} | {"flops_per_s": "flop"}
MAX_ROWS, MAX_COLUMNS = 41, 8
"""The table's compact view: larger grids are thinned (csv and json hold every point)."""


class SweepError(ValueError):
    """A usage error: a bad grid, an unknown name, a quantity that does not evaluate."""


# ---- grids ---------------------------------------------------------------------------------
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
        ends = f"{_num(self.start)} .. {_num(self.stop)}"
        return f"{self.name} = {ends} ({self.scale}, {self.n} points)"


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
        raise SweepError(f"--set expects NAME=VALUE or NAME=START:STOP:logN, got {text!r}")
    name, spec = m.groups()
    if ":" not in spec:
        return name, _number(spec, text)
    g = SPEC.fullmatch(spec)
    if not g:
        raise SweepError(f"bad grid {spec!r} for {name}: expected START:STOP:linN or "
                         "START:STOP:logN, e.g. 1e3:1e7:log40")
    if len(g["n"]) > len(str(MAX_SWEEP_POINTS)) or int(g["n"]) > MAX_SWEEP_POINTS:
        raise SweepError(f"--set {name}: a grid of {g['n'][:20]} points is more than the "
                         f"{MAX_SWEEP_POINTS:,} a sweep evaluates")
    start, stop, n = _number(g["start"], text), _number(g["stop"], text), int(g["n"])
    if n < 2:
        raise SweepError(f"bad grid {spec!r} for {name}: a grid needs at least 2 points")
    if start == stop:
        raise SweepError(f"bad grid {spec!r} for {name}: START and STOP are equal")
    if g["scale"] == "log" and (start <= 0 or stop <= 0):
        raise SweepError(f"bad grid {spec!r} for {name}: a log grid needs positive ends")
    return name, Grid(name, start, stop, n, g["scale"])  # type: ignore[arg-type]


def parse_settings(texts: Sequence[str]) -> tuple[dict[str, float], tuple[Grid, ...]]:
    """Split `--set` arguments into fixed numbers and one or two grid axes."""
    fixed: dict[str, float] = {}
    grids: list[Grid] = []
    seen: set[str] = set()
    for text in texts:
        name, value = parse_setting(text)
        if name in seen:
            raise SweepError(f"--set names {name!r} twice")
        seen.add(name)
        if isinstance(value, Grid):
            grids.append(value)
        else:
            fixed[name] = value
    if not grids:
        raise SweepError("nothing to sweep: give a grid, e.g. --set B=1e3:1e7:log40")
    if len(grids) > 2:
        raise SweepError("a sweep takes one or two grid axes, got "
                         + ", ".join(g.name for g in grids))
    points = math.prod(g.n for g in grids)
    if points > MAX_SWEEP_POINTS:
        raise SweepError("--set: the grids " + " x ".join(f"{g.name} ({g.n:,})" for g in grids)
                         + f" make {points:,} points, more than the {MAX_SWEEP_POINTS:,} a "
                         "sweep evaluates")
    return fixed, tuple(grids)


def _number(text: str, where: str) -> float:
    try:
        v = parse_number(text)
    except ValueError:
        raise SweepError(f"{text!r} in {where!r} is not a number (try 4096, 4_096, 1e6 or "
                         "4M)") from None
    if not math.isfinite(v):
        raise SweepError(f"{text!r} in {where!r} is not a finite number")
    return v


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
        hardware = name in HARDWARE_NAMES or name == "C" or (
            name.startswith("C_") and name[2:] in DTYPES)
        if name not in known and not hardware:
            raise SweepError(f"--set names {name!r}, which is not a dimension, mesh axis or "
                             f"hardware quantity of {program_name} (known: "
                             + ", ".join(known) + ")")


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

    def describe(self) -> str:
        other = "".join(f", {k} = {_num(v)}" for k, v in self.where.items())
        return (f"{_label(self.a)} = {_label(self.b)} at {self.axis} = {_num(self.at)}{other}"
                f"   ({_label(self.larger_above)} larger above)")


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

    def __init__(self, exprs: dict[str, sp.Expr], grid_syms: Sequence[sp.Symbol],
                 env: dict[sp.Symbol, float]) -> None:
        used = {s for e in exprs.values() for s in e.free_symbols}
        self.args = sorted(used | set(grid_syms), key=lambda s: s.name)
        self.names = list(exprs)
        self.fn: Callable[..., list[Any]] = sp.lambdify(self.args, list(exprs.values()),
                                                        modules="numpy", cse=True)
        self.grid_syms = list(grid_syms)
        self.env = env

    def __call__(self, coords: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        at = dict(zip(self.grid_syms, coords, strict=True))
        shape = np.broadcast_shapes(*(np.shape(c) for c in coords))
        with np.errstate(all="ignore"):
            out = self.fn(*[at[a] if a in at else self.env[a] for a in self.args])
        return {n: np.broadcast_to(np.asarray(v, dtype=float), shape)
                for n, v in zip(self.names, out, strict=True)}


def sweep(report: Report, grids: Sequence[Grid], quantities: Sequence[str] = DEFAULT_QUANTITIES,
          extra: Sequence[str] = ()) -> Sweep:
    """Evaluate `quantities` (and `extra`, kept but not shown) on the grids' outer product.

    >>> import shardc
    >>> r = shardc.compile("programs/mlp-dp-train.shard")
    >>> s = sweep(r, [Grid("B", 1e3, 1e7, 5, "log")], ["t_math_s"])
    >>> s.values["t_math_s"].shape, s.points, s.crossovers[0].axis
    ((5,), 5, 'B')
    """
    start = time.perf_counter()
    env = report.environment()
    grid_syms = [symbol(report, g.name) for g in grids]
    for s in grid_syms:
        env.pop(s, None)
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
    evaluate = Evaluator(exprs, grid_syms, env)
    axes = [g.values.reshape([-1 if i == k else 1 for i in range(len(grids))])
            for k, g in enumerate(grids)]
    values = evaluate(axes)
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
    crossings = tuple(c for a, b in CROSSINGS if a in values and b in values
                      for c in _crossovers(evaluate, grids, values, a, b))
    seconds = time.perf_counter() - start
    fixed = {n: v for n, v in _sizes(report).items() if n not in {g.name for g in grids}}
    at = [f"{g.name}={_num(v)}" for g in grids if (v := _sizes(report).get(g.name)) is not None]
    notes = (f"collectives as chosen at {', '.join(at)} (the program's values): the sweep "
             "varies sizes, not the plan",) if at else ()
    syms = report.cost.symbols
    c, w_hbm = env.get(syms.flops("bf16")), env.get(syms.w_hbm)
    roof = (c, w_hbm) if c is not None and w_hbm is not None else None
    return Sweep(report.name, report.hardware_name, report.model, tuple(grids),
                 tuple(quantities), values, bound, crossings, seconds, fixed, notes, roof)


def _check_finite(q: str, v: np.ndarray, grids: Sequence[Grid]) -> None:
    """A --y quantity must be a finite number at every point (no division by zero)."""
    bad = ~np.isfinite(v)
    if not bad.any():
        return
    where = [int(i) for i in np.unravel_index(int(np.argmax(bad)), v.shape)]
    at = ", ".join(f"{g.name} = {_num(float(g.values[i]))}" for g, i in zip(
        grids, [*where, *[0] * (len(grids) - len(where))], strict=False))
    raise SweepError(f"--y {q!r} is not a finite number at {at} (a division by zero?)")


def _bound_expr(report: Report, q: str, env: dict[sp.Symbol, float],
                grid_syms: Sequence[sp.Symbol], shown: str) -> sp.Expr:
    e = quantity(report, q)
    free = sorted(s.name for s in e.free_symbols - env.keys() - set(grid_syms))
    if free:
        hint = ("pick a chip with --hw or bind them with --set" if report.chip is None
                else "bind them with --set NAME=VALUE")
        raise SweepError(f"{shown!r} does not evaluate on {report.name}: no value for "
                         f"{', '.join(free)} ({hint})")
    return e


def _sizes(report: Report) -> dict[str, float]:
    """The values a sweep holds fixed: sizes (`--set` applied), then bound hardware figures."""
    sizes = known_sizes((*report.program.dims, *report.program.mesh), report.bindings)
    return ({n: float(v) for n, v in sizes.items()}
            | {n: float(v) for n, v in report.bindings.items() if n not in sizes})


def _crossovers(evaluate: Evaluator, grids: Sequence[Grid], values: dict[str, np.ndarray],
                a: str, b: str) -> list[Crossover]:
    """Sign changes of a - b along the first axis, refined by bisection (in log space on a log
    grid) with the same compiled function."""
    d = values[a] - values[b]
    s = np.sign(d)
    i, *rest = np.nonzero(s[:-1] * s[1:] < 0)
    if not len(i):
        return []
    g0 = grids[0]
    x = g0.values
    warp, unwarp = (np.log, np.exp) if g0.scale == "log" else (lambda v: v, lambda v: v)
    lo, hi = warp(x[i]), warp(x[i + 1])
    s_lo = s[(i, *rest)]
    others = [grids[k + 1].values[j] for k, j in enumerate(rest)]
    for _ in range(60):
        mid = (lo + hi) / 2
        got = evaluate([unwarp(mid), *others])
        low_side = np.sign(got[a] - got[b]) == s_lo
        lo, hi = np.where(low_side, mid, lo), np.where(low_side, hi, mid)
    at = unwarp((lo + hi) / 2)
    rising = x[i + 1] > x[i]  # which side holds the larger axis values
    s_above = np.where(rising, -s_lo, s_lo)
    order = np.lexsort((at, *others[::-1]))  # by the other axis, then along the first
    return [Crossover(a, b, g0.name, float(at[k]),
                      {grids[m + 1].name: float(o[k]) for m, o in enumerate(others)},
                      a if s_above[k] > 0 else b) for k in order]


# ---- output --------------------------------------------------------------------------------
def _num(v: float) -> str:
    """Grid values: `61,367` between 100 and 1e7, else three significant digits."""
    return f"{v:,.0f}" if 100 <= abs(v) < 1e7 else f"{v:.3g}"


def _label(name: str) -> str:
    return LABELS.get(name, name)


def _cell(name: str, v: Any) -> str:
    if name == "bound":
        return str(v)
    f = float(v)
    return fmt_value(f if math.isfinite(f) else None, UNITS.get(name, ""))


def _thin(n: int, most: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, most)).round().astype(int))


def render_table(sweeps: Sequence[Sweep]) -> str:
    """One block per program: a header, the grid (thinned past `MAX_ROWS`), the crossovers."""
    out: list[str] = []
    for s in sweeps:
        if out:
            out.append("")
        out.append(f"shardc sweep: {s.program}")
        out.append(f"  chip: {s.hardware or 'none'}   model: {s.model}")
        out.extend(f"  grid: {g.describe()}" for g in s.grids)
        if s.fixed:
            out.append("  fixed: " + " ".join(f"{k}={v:g}" for k, v in s.fixed.items()))
        out.extend(f"  note: {n}" for n in s.notes)
        out.append(f"  {s.points:,} points in {fmt_value(s.seconds, 's')}")
        out.append("")
        out.extend(_table_1d(s) if len(s.grids) == 1 else _table_2d(s))
        if s.crossovers:
            out.append("")
            out.append("crossovers")
            rows = _thin(len(s.crossovers), MAX_ROWS)
            out.extend(f"  {s.crossovers[k].describe()}" for k in rows)
            if len(rows) < len(s.crossovers):
                out.append(f"  ({len(rows)} of {len(s.crossovers)}; --format json for all)")
    return "\n".join(out) + "\n"


def _align(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    return ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]


def _table_1d(s: Sweep) -> list[str]:
    g = s.grids[0]
    keep = _thin(g.n, MAX_ROWS)
    x = g.values
    rows = [[g.name, *(_label(q) for q in s.shown)]]
    rows += [[_num(x[k]), *(_cell(q, s.column(q)[k]) for q in s.shown)] for k in keep]
    lines = _align(rows)
    if len(keep) < g.n:
        lines.append(f"  ({len(keep)} of {g.n} rows; --format csv or json for all)")
    return lines


def _table_2d(s: Sweep) -> list[str]:
    g0, g1 = s.grids
    r, c = _thin(g0.n, MAX_ROWS // 2), _thin(g1.n, MAX_COLUMNS)
    lines: list[str] = []
    for q in s.shown:
        if lines:
            lines.append("")
        lines.append(f"{_label(q)} (rows: {g0.name}, columns: {g1.name})")
        col = s.column(q)
        rows = [[f"{g0.name} \\ {g1.name}", *(_num(g1.values[j]) for j in c)]]
        rows += [[_num(g0.values[i]), *(_cell(q, col[i, j]) for j in c)] for i in r]
        lines.extend(_align(rows))
    if len(r) * len(c) < s.points:
        lines.append(f"  ({len(r)} x {len(c)} of {g0.n} x {g1.n} points; --format csv or "
                     "json for all)")
    return lines


def _flat(s: Sweep) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every point's coordinates and quantities, flattened in C order (first axis slowest)."""
    mesh = np.meshgrid(*(g.values for g in s.grids), indexing="ij")
    return ({g.name: m.ravel() for g, m in zip(s.grids, mesh, strict=True)},
            {q: np.ravel(s.column(q)) for q in s.shown})


def render_csv(sweeps: Sequence[Sweep]) -> str:
    """A header, then a row per point (and a leading `program` column for several programs)."""
    many = len(sweeps) > 1
    lines: list[str] = []
    for s in sweeps:
        grid, qs = _flat(s)
        if not lines:
            lines.append(",".join(["program"] * many + [*grid, *(_csv_name(q) for q in qs)]))
        cols = [np.char.mod("%.10g", v) if v.dtype.kind == "f" else v.astype(str)
                for v in (*grid.values(), *qs.values())]
        prefix = f"{_csv_name(s.program)}," if many else ""
        lines.extend(prefix + ",".join(row) for row in zip(*cols, strict=True))
    return "\n".join(lines) + "\n"


def _csv_name(text: str) -> str:
    return f'"{text.replace(chr(34), chr(34) * 2)}"' if any(c in text for c in ',"') else text


def to_dict(s: Sweep) -> dict[str, Any]:
    """`{"grid": {name: [...]}, "quantities": {name: [...]}, "points": n, "seconds": s, ...}`;
    the lists hold every point, first axis slowest; non-finite numbers are null."""
    grid, qs = _flat(s)
    return {"program": s.program, "hardware": s.hardware, "model": s.model,
            "axes": {g.name: {"start": g.start, "stop": g.stop, "n": g.n, "scale": g.scale}
                     for g in s.grids},
            "fixed": s.fixed,
            "grid": {k: v.tolist() for k, v in grid.items()},
            "quantities": {k: _json_list(v) for k, v in qs.items()},
            "crossovers": [{"quantities": [c.a, c.b], "axis": c.axis, "at": c.at,
                            "where": c.where, "larger_above": c.larger_above}
                           for c in s.crossovers],
            "points": s.points, "seconds": s.seconds}


def _json_list(v: np.ndarray) -> list[Any]:
    if v.dtype.kind != "f":
        return v.tolist()
    out = v.astype(object)
    out[~np.isfinite(v)] = None
    return out.tolist()


def to_json(sweeps: Sequence[Sweep]) -> str:
    """One object for one program, an array of them for several."""
    body = to_dict(sweeps[0]) if len(sweeps) == 1 else [to_dict(s) for s in sweeps]
    return json.dumps(body) + "\n"


# ---- plots (matplotlib, imported here only) ------------------------------------------------
def short_labels(names: Sequence[str]) -> list[str]:
    """Legend labels: program stems without their common prefix and suffix.

    >>> short_labels(["programs/mlp-dp-train.shard", "programs/mlp-fsdp-tp-train.shard"])
    ['dp', 'fsdp-tp']
    """
    stems = [Path(n).stem for n in names]
    if len(stems) < 2:
        return stems
    pre = len(_common([s.split("-") for s in stems]))
    post = len(_common([s.split("-")[::-1] for s in stems]))
    out = []
    for s in stems:
        parts = s.split("-")
        mid = parts[pre:len(parts) - post] if len(parts) > pre + post else parts
        out.append("-".join(mid))
    return out if len(set(out)) == len(out) else stems


def _common(lists: list[list[str]]) -> list[str]:
    out = []
    for items in zip(*lists, strict=False):
        if len(set(items)) != 1:
            break
        out.append(items[0])
    return out


def _figure(width: float = 7.5, height: float = 5.0):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots()


def _loggable(*arrays: np.ndarray) -> bool:
    """No negative values and some positive ones (zeros, e.g. no communication, are masked)."""
    finite = [np.asarray(a)[np.isfinite(a)] for a in arrays]
    return all(np.all(v >= 0) for v in finite) and any(np.any(v > 0) for v in finite)


def plot_lines(sweeps: Sequence[Sweep], path: str | Path, quantities: Sequence[str],
               labels: Sequence[str], title: str | None = None) -> Path:
    """The quantities against the swept size, log-log, one color per program (per quantity
    for one program), T_math dashed, with a dashed vertical line where T_math meets T_comms
    (and T_hbm). A quantity equal in several programs is drawn once."""
    fig, ax = _figure()
    g = sweeps[0].grids[0]
    x = g.values
    many = len(sweeps) > 1
    styles = {"t_math_s": "--", "t_lower_s": ":", "t_upper_s": "-."}
    drawn: list[tuple[str, np.ndarray]] = []
    color_of: dict[tuple[int, str], str] = {}
    for qi, q in enumerate(quantities):
        groups: list[list[int]] = []
        for k, s in enumerate(sweeps):
            for grp in groups:
                if np.allclose(sweeps[grp[0]].values[q], s.values[q], rtol=1e-12, atol=0,
                               equal_nan=True):
                    grp.append(k)
                    break
            else:
                groups.append([k])
        for grp in groups:
            if many:
                shared = len(grp) > 1
                color = ("black" if len(grp) == len(sweeps) else "0.35") if shared else f"C{grp[0]}"
                who = ("all" if len(grp) == len(sweeps) else " & ".join(labels[k] for k in grp)
                       ) if shared else labels[grp[0]]
                label = f"{who}: {_label(q)}"
            else:
                color = "black" if q == "t_math_s" else f"C{qi}"
                label = _label(q)
            y = sweeps[grp[0]].values[q]
            ax.plot(x, y, styles.get(q, "-"), color=color, lw=2, label=label)
            drawn.append((q, y))
            for k in grp:
                color_of[(k, q)] = color
    shown = set(quantities)
    marks = [(k, c) for k, s in enumerate(sweeps) for c in s.crossovers
             if c.a in shown and c.b in shown]
    ax.set_xscale("log" if np.all(x > 0) else "linear")
    if _loggable(*(y for _, y in drawn)):
        ax.set_yscale("log", nonpositive="mask")
    for n, (k, c) in enumerate(marks):
        color = color_of[(k, c.b)] if many else "0.3"
        y_at = np.interp(c.at, x, sweeps[k].values[c.a]) if g.scale == "lin" else np.exp(
            np.interp(np.log(c.at), np.log(x), np.log(np.abs(sweeps[k].values[c.a]) + 1e-300)))
        ax.axvline(c.at, color=color, ls="--", lw=1, alpha=0.8)
        ax.plot([c.at], [y_at], "o", color=color, ms=6, zorder=5)
        text = f"{_label(c.a)} = {_label(c.b)}\n{c.axis} = {_num(c.at)}"
        ax.annotate(text, (c.at, 1 - 0.11 * (n % 4) - 0.02), xycoords=("data", "axes fraction"),
                    xytext=(4, 0), textcoords="offset points", va="top", fontsize=8,
                    color=color, bbox={"facecolor": "white", "alpha": 0.85, "lw": 0, "pad": 1})
    ax.set_xlabel(f"{g.name} ({'global batch size' if g.name == 'B' else 'swept size'})")
    units = {UNITS.get(q) for q in quantities}
    ax.set_ylabel("time per step (s)" if units == {"s"} else ", ".join(map(_label, quantities)))
    s0 = sweeps[0]
    ax.set_title(title or f"{' vs '.join(_label(q) for q in quantities)} against {g.name} "
                 f"({s0.hardware or 'no chip'}, {s0.model} model)", fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", alpha=0.1)
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, path)


def plot_roofline(sweeps: Sequence[Sweep], path: str | Path, labels: Sequence[str],
                  title: str | None = None) -> Path:
    """Achieved FLOP/s (FLOPs / T_lower) against arithmetic intensity (FLOPs per HBM byte) for
    each swept point, under the chip's roofline min(C, intensity * W_hbm) (000 part 1)."""
    roofs = {s.roof for s in sweeps if s.roof is not None}
    if len(roofs) != 1:
        raise SweepError("a roofline needs one chip with C and W_hbm for every program"
                         if not roofs else "a roofline draws one chip: the programs differ")
    (c, w), = roofs
    if not all("intensity" in s.values and "flops_per_s" in s.values for s in sweeps):
        raise SweepError("a roofline needs intensity and flops_per_s to evaluate at every point")
    from matplotlib.colors import LogNorm, Normalize
    from matplotlib.lines import Line2D

    fig, ax = _figure(8.0, 5.2)
    g = sweeps[0].grids[0]
    xs = np.concatenate([s.values["intensity"] for s in sweeps])
    ys = np.concatenate([s.values["flops_per_s"] for s in sweeps])
    xs, ys = xs[np.isfinite(xs) & (xs > 0)], ys[np.isfinite(ys) & (ys > 0)]
    if not len(xs) or not len(ys):
        raise SweepError("no point has a positive intensity and FLOP/s to plot")
    critical = c / w
    lo, hi = min(xs.min(), critical) / 4, max(xs.max(), critical) * 4
    grid = np.geomspace(lo, hi, 400)
    roof = np.minimum(c, grid * w)
    floor = min(ys.min(), roof.min()) / 2
    ax.fill_between(grid, roof, floor, where=grid <= critical, color="#f4b6b6", alpha=0.5,
                    lw=0, label=f"HBM-bandwidth-bound (intensity < {critical:.0f})")
    ax.fill_between(grid, roof, floor, where=grid >= critical, color="#bfe3b4", alpha=0.5,
                    lw=0, label="compute-bound")
    ax.plot(grid, roof, color="black", lw=2.2,
            label=f"roofline min(C, intensity x W_hbm): C = {c:.3g}, W_hbm = {w:.3g}")
    ax.axvline(critical, color="0.3", ls="--", lw=1)
    ax.annotate(f"critical intensity\nC / W_hbm = {critical:.0f}", (critical, floor),
                xytext=(5, 8), textcoords="offset points", fontsize=9, color="0.2")
    x = g.values
    norm = LogNorm(x.min(), x.max()) if g.scale == "log" else Normalize(x.min(), x.max())
    markers = "osD^v<>ph*"
    handles = []
    for k, s in enumerate(sweeps):
        m = markers[k % len(markers)]
        ax.plot(s.values["intensity"], s.values["flops_per_s"], "-", color="0.55", lw=0.8,
                zorder=2)
        points = ax.scatter(s.values["intensity"], s.values["flops_per_s"], c=x, cmap="viridis",
                            norm=norm, marker=m, s=26, edgecolors="black", linewidths=0.3,
                            zorder=3)
        handles.append(Line2D([], [], ls="-", color="0.55", marker=m, markerfacecolor="0.8",
                              markeredgecolor="black", label=labels[k]))
    fig.colorbar(points, ax=ax, label=f"{g.name} (swept)", pad=0.01)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(floor, c * 30)  # room above the roof for the legend
    ax.set_xlabel("arithmetic intensity (FLOPs per HBM byte, per device)")
    ax.set_ylabel("achieved FLOP/s per device (FLOPs / T_lower)")
    s0 = sweeps[0]
    ax.set_title(title or f"Roofline on {s0.hardware}, {g.name} from {_num(x[0])} to "
                 f"{_num(x[-1])} ({s0.model} model)", fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    area, _ = ax.get_legend_handles_labels()
    ax.legend(handles=[*area, *handles], fontsize=8, loc="upper left", framealpha=0.95)
    return _save(fig, path)


def _save(fig, path: str | Path) -> Path:
    out = Path(path)
    fig.savefig(out, dpi=130)
    return out
