"""The whole-program objective in the driver: each candidate plan vector is lowered, costed and
evaluated as a report (`passes.objective.search` does the search); the report keeps the
cheapest and says so. Where each program wins over a free size is `driver.objective_regions`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from shardc.passes.objective import OBJECTIVE_TEXT, OBJECTIVES, Objective, default_objective

if TYPE_CHECKING:
    from shardc.driver.recipe import Recipe
    from shardc.driver.report import Report
    from shardc.passes.objective import Forced


def objective_of(r: Report) -> Objective:
    """The objective `r` was chosen for: `--objective`, else by the program (training or not)."""
    name = r.options.get("objective")
    for known in OBJECTIVES:
        if name == known:
            return known
    return default_objective(r.program.backward_line is not None)


def value(r: Report, objective: Objective) -> float | None:
    """`r`'s objective as a number (None where a size or a chip figure has none)."""
    if objective == "statement":
        return None
    if objective == "step":
        return r.scheduled_step()
    name = "t_lower_s" if objective == "t_lower" else "t_upper_s"
    if name in r.totals:
        return r.value(r.totals[name])
    # a search's candidate (`light`): the roofline of its three totals, without building
    # SymPy's Max and sum of them for each candidate
    parts = [r.value(r.totals[k]) for k in ("t_math_s", "t_hbm_s", "t_comms_s")]
    known = [p for p in parts if p is not None]
    if len(known) < len(parts):
        return None
    return max(known) if objective == "t_lower" else sum(known)


def tie_value(r: Report, objective: Objective) -> float | None:
    """What breaks a tie on `r`'s objective (`passes.objective.preferred`): T_upper for T_lower,
    T_lower for T_upper, and for the scheduled step the sum of its ops' times (T_step (sum)):
    of two plans whose step the same collectives bound, the one running less besides them."""
    if objective == "step":
        from shardc.driver.step import step_durations

        durations = step_durations(r)
        return None if durations is None else sum(durations.values())
    return value(r, "t_upper" if objective == "t_lower" else "t_lower")


def varies(r: Report) -> bool:
    """Whether `r`'s plans can change with the sizes it leaves free: a choice planned at
    symbolic sizes (`sized_choices`), or the whole program's search choosing among plan
    vectors (`passes.objective.searchable`) for an objective a free size enters. The report's
    regions, `value` and `at` at a point all ask this, so a size no formula uses leaves the
    report as the compile that binds it (its search ran, `api.run_pipeline`)."""
    if r.program.sized_choices:
        return True
    from shardc.driver.boundaries import free_sizes
    from shardc.passes.objective import searchable
    from shardc.passes.symbols import as_expr

    recorder = None if r.recipe is None else r.recipe.shared.get("recorder")
    if recorder is None or objective_of(r) == "statement" or not searchable(recorder.seen):
        return False
    free = set(free_sizes(r))  # every op's time is in T_upper: the objectives are built of them
    return any(s.name in free for s in as_expr(r.totals["t_upper_s"]).free_symbols)


def light(recipe: Recipe, chooser: Any, totals: bool = True) -> tuple[Any, None]:
    """The program lowered with `chooser`'s plans and costed, nothing a printed report alone
    shows (decision records, memory): the search's candidates. `totals=False`: without
    T_math, T_hbm and T_comms (the scheduled step reads only the ops)."""
    from shardc.lang.diagnostics import Diagnostics
    from shardc.passes.lower.prefixes import Prefixes
    from shardc.passes.pipeline import DeriveCost, FuseElementwise, InsertCollectives, configure

    quick = dataclasses.replace(recipe.ctx, diagnostics=Diagnostics())
    again = recipe.unit
    memo = recipe.shared.setdefault("costs", {})
    # the candidates share the statements before their first different choice
    prefixes = recipe.shared.setdefault("prefixes", Prefixes())
    # unverified: the candidate the search keeps is lowered again, verified (`relower`)
    lowering = InsertCollectives(chooser, verify=False, prefixes=prefixes)
    passes = (lowering, FuseElementwise(), DeriveCost(memo, lean=True, totals=totals))
    for p in configure(passes, dataclasses.replace(recipe.ctx.options, explain=False)):
        again = p.run(again, quick)
    # A vector whose plans leave a later statement no way to compile (an earlier sum on the
    # whole array, where a declared `{U_Y}` needs its slice): not a candidate (None).
    return (None if quick.diagnostics.has_errors else again.cost), None


def _with(r: Report, cost: Any, memory: Any, bindings: Mapping[str, Any] | None = None) -> Report:
    from shardc.driver.caches import Memo

    return dataclasses.replace(
        r,
        cost=cost,
        memory=memory,
        warnings=list(r.warnings),
        bindings=dict(r.bindings if bindings is None else bindings),
        shown_region=None,
        settled=False,
        memo=Memo(),
        objective_note=None,
    )


def choose(r: Report, recorder: Forced, base: Any = None) -> Report:
    """The report of the plan vector that minimizes `r`'s objective (`r` itself, the
    per-statement plans, unless another is strictly cheaper). `recorder` is the chooser `r`
    was lowered with; `base` picks plans whose ranking depends on symbolic sizes (an
    `AtPoint`)."""
    return _choose(r, recorder, base)[0]


def _choose(r: Report, recorder: Forced, base: Any = None) -> tuple[Report, Forced]:
    """`choose`, and the chooser of the plans it returns (what each contraction ran)."""
    from shardc.driver.recipe import relower
    from shardc.passes.lower.prefixes import Prefixes, end_of
    from shardc.passes.objective import search

    objective = objective_of(r)
    recipe = r.recipe
    if objective == "statement" or recipe is None:
        return r, recorder
    # A vector of options names the same plans wherever the options are the same (the
    # report's regions search at many points of one free size): lowered once for them all.
    lowerings: dict[tuple, tuple[Any, None]] = recipe.shared.setdefault("vectors", {})
    known = tuple(sorted(recorder.options.items()))
    # Vectors whose options a contraction lacks run its first there (`Forced.rank`): those
    # that answer every question alike are one program, the one their lowerings end with
    # (`passes.lower.prefixes`), costed and scheduled once (the FSDP step's 64 vectors are 36).
    book = recipe.shared.setdefault("prefixes", Prefixes())
    ends: dict[Any, tuple[tuple[Any, None], Report]] = {}

    def lower(chooser: Forced) -> Report | None:
        seen = recorder.wide
        vector = tuple(
            sorted(
                (k, v) for k in seen if (v := chooser.forced.get(k, chooser.sweep)) < seen[k] and v
            )
        )
        key = (known, vector, objective == "step")
        if key not in lowerings:
            same = ends.get(end_of(book, chooser))
            if same is not None:
                lowerings[key] = same[0]
                return same[1]
            lowerings[key] = light(recipe, chooser, objective != "step")
            if lowerings[key][0] is not None:
                out = _report(lowerings[key])
                ends[end_of(book, chooser)] = (lowerings[key], out)
                return out
        else:
            chooser.seen.update(recorder.seen)  # as the lowering would have recorded them
            chooser.wide.update(seen)
        if lowerings[key][0] is None:
            return None
        return _report(lowerings[key])

    def _report(lowered: tuple[Any, None]) -> Report:
        out = _with(r, *lowered)
        # the same sizes, chip and bindings: the environment of numbers is `r`'s, and so is
        # each formula's number (the vectors share most of their ops' formulas)
        out.memo.env, out.memo.values = r.memo.env, r.memo.values
        return out

    start: tuple[Report | None, Forced] = (r, recorder)
    found = search(
        lower,
        lambda x: None if x is None else value(x, objective),
        base,
        first=start,
        tie=lambda x: None if x is None else tie_value(x, objective),
    )
    if found.chooser is None or found.value is None or found.greedy is None:
        return r, recorder
    out = _with(r, *relower(recipe, found.chooser))  # the pick, with what a report shows
    return (
        dataclasses.replace(out, objective_note=(objective, found.value, found.greedy)),
        found.chooser,
    )


def at_point(r: Report, base: Any, bindings: Mapping[str, Any]) -> Report:
    """`r`'s program at a point (`base`, an `AtPoint`; `bindings`, the report's then): the
    plans a compile with those sizes bound chooses, for the whole program's objective."""
    return at_point_with_chooser(r, base, bindings)[0]


def at_point_with_chooser(
    r: Report, base: Any, bindings: Mapping[str, Any]
) -> tuple[Report, Forced]:
    """`at_point`, and the chooser of the plans it returns (`driver.objective_regions`)."""
    from shardc.driver.recipe import relower
    from shardc.passes.objective import Forced

    assert r.recipe is not None
    recorder = Forced(base, shared=r.recipe.shared)
    cost, memory = relower(r.recipe, recorder)
    first = _with(r, cost, memory, bindings)
    return _choose(first, recorder, base)


def note_text(r: Report) -> str | None:
    """The report's line on plans chosen for the whole program (None where each contraction
    runs its own cheapest plan)."""
    note = getattr(r, "objective_note", None)
    if note is None:
        return None
    from shardc.lang.units import fmt_value

    objective, chosen, greedy = note
    return (
        f"chosen for the whole program's {OBJECTIVE_TEXT[objective]}: "
        f"{fmt_value(chosen, 's')}, where each contraction's own cheapest plan gives "
        f"{fmt_value(greedy, 's')} (--objective)"
    )


__all__ = [
    "at_point",
    "at_point_with_chooser",
    "choose",
    "light",
    "note_text",
    "objective_of",
    "tie_value",
    "value",
    "varies",
]
