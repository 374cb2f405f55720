"""A sweep as text: aligned tables (one dim: a column per quantity; two: a grid), CSV and JSON.
The renderers of `shardc sweep --format`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from shardc.lang.units import fmt_value

if TYPE_CHECKING:
    pass
from shardc.driver.json_text import strict_dumps
from shardc.lang.units import fmt_grid
from shardc.tools.sweep import MAX_COLUMNS, MAX_ROWS, UNITS, Sweep, label_of

SCHEMA = "shardc.sweep/1"
"""The `schema` of `to_dict`, described by `shardc/driver/schemas/sweep.schema.json`."""


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
        if s.plans:
            out.append("")
            out.append("plans")
            out.extend(
                f"  {p.letter}: {p.collectives}   ({p.share:.0%} of the points)" for p in s.plans
            )
        out.extend(_listing("plan changes", s.plan_changes))
        out.extend(_listing("crossovers", s.crossovers))
    return "\n".join(out) + "\n"


def _listing(title: str, items: Sequence[Any]) -> list[str]:
    """A titled list of `describe()` lines, thinned to MAX_ROWS."""
    if not items:
        return []
    rows = _thin(len(items), MAX_ROWS)
    out = ["", title, *(f"  {items[k].describe()}" for k in rows)]
    if len(rows) < len(items):
        out.append(f"  ({len(rows)} of {len(items)}; --format json for all)")
    return out


def _align(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    return ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]


def _table_1d(s: Sweep) -> list[str]:
    g = s.grids[0]
    keep = _thin(g.n, MAX_ROWS)
    x = g.values
    which = s.plan
    rows = [[g.name, *(label_of(q) for q in s.shown), *([] if which is None else ["plan"])]]
    rows += [
        [
            fmt_grid(x[k]),
            *(_cell(q, s.column(q)[k]) for q in s.shown),
            *([] if which is None else [_letter(s, which[k])]),
        ]
        for k in keep
    ]
    lines = _align(rows)
    if len(keep) < g.n:
        lines.append(f"  ({len(keep)} of {g.n} rows; --format csv or json for all)")
    return lines


def _table_2d(s: Sweep) -> list[str]:
    g0, g1 = s.grids
    r, c = _thin(g0.n, MAX_ROWS // 2), _thin(g1.n, MAX_COLUMNS)
    lines: list[str] = []
    for q in (*s.shown, *(["plan"] if s.plan is not None else [])):
        if lines:
            lines.append("")
        lines.append(f"{label_of(q)} (rows: {g0.name}, columns: {g1.name})")
        if q == "plan":
            assert s.plan is not None
            table = [[_letter(s, s.plan[i, j]) for j in c] for i in r]
        else:
            col = s.column(q)
            table = [[_cell(q, col[i, j]) for j in c] for i in r]
        rows = [[f"{g0.name} \\ {g1.name}", *(fmt_grid(g1.values[j]) for j in c)]]
        rows += [[fmt_grid(g0.values[i]), *cells] for i, cells in zip(r, table, strict=True)]
        lines.extend(_align(rows))
    if len(r) * len(c) < s.points:
        lines.append(
            f"  ({len(r)} x {len(c)} of {g0.n} x {g1.n} points; --format csv or json for all)"
        )
    return lines


def _letter(s: Sweep, k: Any) -> str:
    return s.plans[int(k)].letter if int(k) >= 0 else "?"


def _flat(s: Sweep) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every point's coordinates and quantities, flattened in C order (first axis slowest)."""
    mesh = np.meshgrid(*(g.values for g in s.grids), indexing="ij")
    qs = {q: np.ravel(s.column(q)) for q in s.shown}
    return ({g.name: m.ravel() for g, m in zip(s.grids, mesh, strict=True)}, qs)


def _plan_letters(s: Sweep) -> np.ndarray:
    """Each point's plan letter, flattened like `_flat` ("?" outside every plan found)."""
    assert s.plan is not None
    letters = np.array([p.letter for p in s.plans] + ["?"], dtype=object)
    return letters[np.ravel(s.plan)]


def render_csv(sweeps: Sequence[Sweep]) -> str:
    """A header, then a row per point (and a leading `program` column for several programs)."""
    many = len(sweeps) > 1
    lines: list[str] = []
    for s in sweeps:
        grid, qs = _flat(s)
        if s.plan is not None:  # a column only where the grid reaches several plans
            qs["plan"] = _plan_letters(s)
        if not lines:
            lines.append(",".join(["program"] * many + [*grid, *(_csv_name(q) for q in qs)]))
        cols = [
            np.char.mod("%.10g", v) if v.dtype.kind == "f" else v.astype(str)
            for v in (*grid.values(), *qs.values())
        ]
        prefix = f"{_csv_name(s.program)}," if many else ""
        lines.extend(prefix + ",".join(row) for row in zip(*cols, strict=True))
    return "\n".join(lines) + "\n"


def _csv_name(text: str) -> str:
    return f'"{text.replace(chr(34), chr(34) * 2)}"' if any(c in text for c in ',"') else text


def to_dict(s: Sweep) -> dict[str, Any]:
    """`{"grid": {name: [...]}, "quantities": {name: [...]}, "points": n, "seconds": s, ...}`;
    the lists hold every point, first axis slowest; non-finite numbers are null. Where the grid
    reaches several plans, `plan` holds each point's letter (null with one plan), `plans` what
    each letter does and `plan_changes` where it changes along the first axis."""
    grid, qs = _flat(s)
    return {
        "schema": SCHEMA,
        "program": s.program,
        "hardware": s.hardware,
        "model": s.model,
        "axes": {
            g.name: {"start": g.start, "stop": g.stop, "n": g.n, "scale": g.scale} for g in s.grids
        },
        "fixed": s.fixed,
        "grid": {k: v.tolist() for k, v in grid.items()},
        "quantities": {k: _json_list(v) for k, v in qs.items()},
        "crossovers": [
            {
                "quantities": [c.a, c.b],
                "axis": c.axis,
                "at": c.at,
                "where": c.where,
                "larger_above": c.larger_above,
                "plan_changes_here": c.jump,
            }
            for c in s.crossovers
        ],
        "plan": None if s.plan is None else _plan_letters(s).tolist(),
        "plans": [
            {
                "plan": p.letter,
                "collectives": p.collectives,
                "condition": p.condition,
                "share_of_points": round(p.share, 4),
            }
            for p in s.plans
        ],
        "plan_changes": [
            {"axis": c.axis, "at": c.at, "where": c.where, "before": c.before, "after": c.after}
            for c in s.plan_changes
        ],
        "points": s.points,
        "seconds": s.seconds,
    }


def _json_list(v: np.ndarray) -> list[Any]:
    if v.dtype.kind != "f":
        return v.tolist()
    out = v.astype(object)
    out[~np.isfinite(v)] = None
    return out.tolist()


def to_json(sweeps: Sequence[Sweep]) -> str:
    """One object for one program, an array of them for several."""
    body = to_dict(sweeps[0]) if len(sweeps) == 1 else [to_dict(s) for s in sweeps]
    return strict_dumps(body) + "\n"
