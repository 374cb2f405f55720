"""The caches of one report, in one object (`Report.memo`): numbers by formula, the
environment, names, compiled functions and JSON quantities. A report is a value; these only
remember what was computed from it. The process-wide tables are `passes.memo`'s."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from shardc.passes.memo import Table

POINTS = 64
"""Points a report keeps `at`'s reports for: a loop of `value` calls over one point's totals
compiles the point once, and a loop over many points holds at most this many reports."""


@dataclass(slots=True)
class Memo:
    values: dict[sp.Expr, float | None] = field(default_factory=dict)
    """Each formula's number under the report's environment (None: no finite number)."""
    env: dict[sp.Symbol, float] | None = None
    names: dict[str, sp.Symbol] | None = None
    functions: dict[sp.Expr, tuple[tuple[sp.Symbol, ...], Callable[..., Any]]] = field(
        default_factory=dict
    )
    """`sp.lambdify` of a formula, by formula (`value` with bindings); shared by the reports
    `at` derives, whose formulas are the same objects."""
    q: dict[Any, dict[str, Any]] = field(default_factory=dict)
    q_by_id: dict[int, tuple[Any, dict[str, Any]]] = field(default_factory=dict)
    """`q` by object (kept with it, so a reused id never matches): a report asks for the same
    few objects tens of thousands of times, and a SymPy hash is a Python call."""
    schedules: dict[bool, float | None] = field(default_factory=dict)
    """T_step of the list schedule (`step.scheduled_step`), by `expected`."""
    utilization: dict[bool, dict[str, float] | None] = field(default_factory=dict)
    exposed: dict[bool, dict[int, float] | None] = field(default_factory=dict)
    """MFU and HFU, and each collective's exposed seconds, by `expected` (`shardc.driver.step`):
    the summary and the JSON writer's step figures both ask for them."""
    points: Table[tuple[tuple[str, float], ...], Any] = field(
        default_factory=lambda: Table("report.points", POINTS, "`Report.at`'s report")
    )
    """`Report.at`'s reports, by the bindings it was given (`driver.points.at`; `value` of a
    total at a point reads the report there): the last `POINTS` points used."""
    regions: Any = False
    """`regions.find`'s answer once asked (False: not yet)."""

    def fresh(self) -> Memo:
        """The caches for the same formulas under other numbers: only what numbers do not
        change (the names, the compiled functions, the regions found) is kept."""
        return Memo(names=self.names, functions=self.functions, regions=self.regions)


__all__ = ["POINTS", "Memo"]
