"""The cost report as a value: the costs (`passes.derive_cost.ProgramCost`), chip, bindings,
memory, options, regions and warnings of one compile, with what it was compiled from
(`recipe`). Numbers come from `shardc.driver.values`, figures of the step from
`shardc.driver.step`, another point from `shardc.driver.points`; the methods here delegate to
those functions, and the writers (`shardc.driver.render`) print the report.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sympy as sp

from shardc.driver import overlap, points, step, values
from shardc.driver.caches import Memo
from shardc.driver.json_report import (
    SCHEMA,
    formula_json,
    report_dict,
    report_json,
    topology_dict,
)
from shardc.driver.points import OVERFLOW_NOTE, overflows
from shardc.driver.recipe import Recipe
from shardc.driver.render import write
from shardc.passes.derive_cost import ProgramCost

if TYPE_CHECKING:
    from shardc.driver.region_totals import Shown
    from shardc.hardware import Chip
    from shardc.passes.memory import Memory


@dataclass(frozen=True, repr=False)
class Report:
    """Costs of one compiled program; formulas are SymPy, numbers come from `value`."""

    cost: ProgramCost
    chip: Chip | None
    bindings: dict[str, float]
    warnings: list[str] = field(default_factory=list)
    memory: Memory | None = None
    """The training step's memory (parameters, gradients, optimizer, activations), if any."""
    options: dict[str, str] = field(default_factory=dict)
    recipe: Recipe | None = field(default=None, compare=False)
    """What the report was compiled from (set by `compile`): `at` and the regions lower or
    compile the program again from it. None for a report built by hand."""
    shown_region: Shown | None = None
    """Where the plan this report's ops, decisions and conditions show holds, its share of the
    sample and, past the cap, the limit hit, when the plans depend on sizes left symbolic
    (`shardc.driver.region_totals.settle`); None where one plan holds everywhere."""
    settled: Any = False
    """The regions `regions.settle` found when it chose the plans this report shows
    (`passes.symbolic_plans.Variant`s; None: too many; False: not settled, `regions()` finds them
    on first use)."""
    objective_note: tuple[str, float, float] | None = None
    """(objective, its value, the per-statement plans' value) where the whole-program search
    chose other plans (`driver.objective.choose`)."""
    memo: Memo = field(default_factory=Memo, compare=False)
    """What was computed from the report (its numbers by formula, ...): `caches.Memo`."""

    # ---- accessors ---------------------------------------------------------------------------
    @property
    def program(self):
        return self.cost.program

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def model(self) -> str:
        return self.cost.model

    @property
    def ops(self):
        return self.cost.ops

    @property
    def totals(self) -> dict[str, sp.Expr]:
        return self.cost.totals

    @property
    def conditions(self):
        """The compute-bound conditions: on the roofline, or with `on="expected"` (`--on
        expected`) on the calibrated rates (`passes.symbols.on_expected`)."""
        return step.conditions(self)

    @property
    def decisions(self):
        """The decision records with their cases (`shardc.driver.decisions.Decisions`)."""
        from shardc.driver.decisions import Decisions

        return Decisions.of(self.program.decisions, self.ops)

    @property
    def hardware_name(self) -> str | None:
        return self.chip.name if self.chip is not None else None

    @property
    def calibrated(self) -> bool:
        """Whether the chip has a calibration (else T_expected is the roofline's T_lower)."""
        return step.calibrated(self)

    @property
    def _functions(self) -> dict[sp.Expr, tuple[tuple[sp.Symbol, ...], Callable[..., Any]]]:
        return self.memo.functions

    # ---- numbers (shardc.driver.values) ------------------------------------------------------
    def value(self, expr: sp.Expr | str | float | int, **bindings: float) -> float | None:
        """Evaluate an expression, a total's name (`"t_math_s"`) or a formula's text with the
        report's bindings, and `bindings` on top (`value("t_comms_s", B=8192)`).

        Returns None when a symbol has no value (no chip, or a size left symbolic). Raises
        `KeyError` for a name that is neither a total nor a name of this report.
        """
        return points.value(self, expr, **bindings)

    def formula(self, name_or_text: str) -> sp.Expr:
        """The SymPy formula of a total (`t_comms_s`, `flops`, ...) or of a formula over this
        report's names (`t_math_s / t_comms_s`, `2*B*D`).

        Raises `KeyError` naming what is unknown (a typo is an error, not a default), and
        `shardc.driver.user_expr.ExprError` for text that is not a formula.
        """
        return values.formula(self, name_or_text)

    def environment(self) -> dict[sp.Symbol, float]:
        """Numbers for every bound symbol: sizes, chip figures, then --set overrides (a copy)."""
        return values.environment(self)

    def names(self) -> dict[str, sp.Symbol]:
        """Every name a binding or a formula may use (dims, mesh axes, hardware figures)."""
        return values.names(self)

    def parse(self, text: str) -> sp.Expr:
        """Parse a formula over this program's names (`N`, `S`, `E` stay sizes, not SymPy's):
        hardware names are the chip's symbols, any other name a size. The grammar is
        `grammar/expr.lark`; raises `shardc.driver.user_expr.ExprError`."""
        from shardc.driver.user_expr import formula

        return formula(text, self.symbol)

    def symbol(self, name: str) -> sp.Symbol:
        """The symbol a name stands for in this report: a hardware figure, else a size."""
        return values.symbol(self, name)

    def function(self, expr: sp.Expr) -> tuple[tuple[sp.Symbol, ...], Callable[..., Any]]:
        """`expr` compiled once (`sp.lambdify` over numpy) with its arguments, sorted by name:
        the report's cache behind `value` with bindings and `at`."""
        return values.function(self, expr)

    def all_expressions(self, conditions: bool = True) -> list[sp.Expr]:
        """Every formula of the report (`conditions=False`: not the conditions' sides)."""
        return values.all_expressions(self, conditions)

    def any_unfinite(self) -> bool:
        return values.any_unfinite(self)

    def evaluate(self, conditions: bool = True) -> Report:
        """Compute every number of the report at once; `conditions=False` leaves the
        conditions to be derived when something reads them."""
        values.evaluate_all(self, values.all_expressions(self, conditions))
        return self

    def at(self, **bindings: float) -> Report:
        """This report with `bindings` added to its own (`r.at(B=8192, X=16)`), every number
        evaluated. The formulas are the same objects; names are checked as `value` checks."""
        return points.at(self, **bindings)

    # ---- figures of the step (shardc.driver.step) -------------------------------------------
    def holds(self, rel) -> bool | None:
        return step.holds(self, rel)

    def bound(self) -> str | None:
        return step.bound(self)

    def step_durations(self, expected: bool = False) -> dict[int, float] | None:
        return step.step_durations(self, expected)

    def busy_after(self) -> dict[int, float]:
        return step.busy_after(self)

    def mesh_sizes(self) -> dict[str, float]:
        return step.mesh_sizes(self)

    def scheduled_step(self, expected: bool = False) -> float | None:
        return step.scheduled_step(self, expected)

    def exposed(self, expected: bool = False) -> dict[int, float] | None:
        return step.exposed(self, expected)

    def expected_schedule(
        self, durations: dict[int, float] | None = None, blocking: Collection[int] = ()
    ) -> tuple[float, dict[int, float]] | None:
        """The calibrated step and each collective's exposed part, over each op's expected
        time or `durations`, the collectives in `blocking` holding the compute
        (`shardc.driver.overlap.expected_schedule`)."""
        return overlap.expected_schedule(self, durations, blocking)

    def prefetch_ahead(self, durations: Mapping[int, float]) -> dict[int, float]:
        """Each parameter gather's seconds ahead of its use (`shardc.driver.overlap`)."""
        return overlap.prefetch_ahead(self, durations)

    def utilization(self, expected: bool = False) -> dict[str, float] | None:
        return step.utilization(self, expected)

    def op_bound(self, c) -> str | None:
        return step.op_bound(self, c)

    # ---- regions (shardc.driver.region_totals) -----------------------------------------------
    def regions(self) -> tuple[Any, ...] | None:
        """The whole program in each region of its symbolic sizes (`passes.symbolic_plans.Variant`s,
        largest share first; `shardc.driver.region_totals.find`); empty with one region, None past
        the limits."""
        if self.settled is not False:
            return self.settled
        if self.memo.regions is False:
            from shardc.driver.region_totals import find

            self.memo.regions = find(self)
        return self.memo.regions

    def piecewise(self, name: str) -> sp.Expr:
        """A total as a `Piecewise` over the regions; the total itself with one region."""
        from shardc.driver.region_totals import piecewise

        return piecewise(self, name)

    # ---- output (shardc.driver.render, shardc.driver.json_report) ---------------------------
    def q(self, expr) -> dict[str, Any]:
        """A formula as JSON: `{"expr", "latex", "value"}`; one (shared) dict per distinct
        formula of this report."""
        return formula_json(self, expr)

    def to_dict(self) -> dict[str, Any]:
        return report_dict(self)

    def topology_dict(self) -> list[dict[str, Any]]:
        return topology_dict(self)

    def to_json(self, indent: int | None = 2, regions: bool = False) -> str:
        """The report as `shardc.report/1` JSON (`regions` is the default now: kept as a
        spelling)."""
        return report_json(self, indent)

    def to_text(self, regions: bool = False, only: Iterable[str] | None = None) -> str:
        """The text report; `only`: the header and just these sections
        (`shardc.driver.document.SECTIONS`: summary, memory, ...). The totals by region are
        the default now (`regions` is kept as a spelling)."""
        return write(self, "text", only)

    def to_markdown(self, regions: bool = False) -> str:
        return write(self, "md")

    def to_latex(self, regions: bool = False) -> str:
        """The LaTeX report, with the totals as cases over the regions."""
        return write(self, "latex")

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        from shardc.driver.notebook import render_html

        return render_html(self)  # the HTML writer's report, then the sharding pictures

    def __repr__(self) -> str:
        from shardc.driver.notebook import short_repr

        return short_repr(self)

    def ops_frame(self) -> Any:
        """The ops as a pandas DataFrame (pandas is optional: ImportError without it)."""
        from shardc.driver.notebook import ops_frame

        return ops_frame(self)

    def arrays_frame(self) -> Any:
        """The arrays as a pandas DataFrame (pandas is optional: ImportError without it)."""
        from shardc.driver.notebook import arrays_frame

        return arrays_frame(self)

    def sharding(self, *arrays: str, ops: bool = False, max_blocks: int | None = None) -> Any:
        """Which mesh devices hold which block of each array (or of `arrays`), and with `ops`
        of each value a collective makes, as `jax.debug.visualize_array_sharding` draws it:
        `shardc.driver.show.Pictures` (text with `str`, HTML in a notebook); `max_blocks`
        blocks along a side at most (default 8) before the middle ones are elided."""
        from shardc.driver.show import sharding

        return sharding(self, arrays, ops, max_blocks)

    def __str__(self) -> str:
        return self.to_text()


__all__ = ["OVERFLOW_NOTE", "SCHEMA", "Report", "overflows"]
