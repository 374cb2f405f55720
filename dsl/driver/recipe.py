"""What a report was compiled from, kept as a value (`Report.recipe`): the source, the options,
and the lowered unit with its context, so that `at` and the regions can lower the program again
with other plans (`relower`) or compile it with more sizes bound (`rerun`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shardc.lang.source import Source
    from shardc.passes.context import Context
    from shardc.passes.derive_cost import ProgramCost
    from shardc.passes.memory import Memory
    from shardc.passes.pipeline import Unit


@dataclass(frozen=True, slots=True)
class Recipe:
    source: Source
    unit: Unit
    ctx: Context
    on: str = "roofline"
    """The conditions' rates (`Report.conditions`): the roofline's or the calibrated ones."""
    shared: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False)
    """Plan searches and op formulas lent from one lowering of the program to the next (the
    whole-program search, `driver.objective`)."""


def relower(recipe: Recipe, chooser: Any) -> tuple[ProgramCost, Memory | None]:
    """The program lowered again with the plans a `passes.symbolic_plans.Chooser` picks, costed."""
    from shardc.lang.diagnostics import Diagnostics
    from shardc.passes.pipeline import relower as again

    unit = again(recipe.unit, dataclasses.replace(recipe.ctx, diagnostics=Diagnostics()), chooser)
    assert unit.cost is not None  # the unit was costed once: costing it again cannot fail
    return unit.cost, unit.memory


def rerun(recipe: Recipe, bindings: Mapping[str, float]) -> Recipe:
    """The program compiled again with `bindings` (the passes' diagnostics in `ctx`)."""
    from shardc.passes.context import Context
    from shardc.passes.objective import Forced
    from shardc.passes.pipeline import PIPELINE, InsertCollectives, configure, run_passes

    options = dataclasses.replace(recipe.ctx.options, bindings=dict(bindings))
    ctx = Context(recipe.source, options=options)
    # the lowering records its options for the whole-program search (`driver.objective`)
    shared: dict[str, Any] = {}
    recorder = shared["recorder"] = Forced(shared=shared)
    passes = tuple(
        InsertCollectives(recorder) if isinstance(p, InsertCollectives) else p for p in PIPELINE
    )
    unit = run_passes(ctx, configure(passes, options))
    return Recipe(recipe.source, unit, ctx, recipe.on, shared)


__all__ = ["Recipe", "relower", "rerun"]
