"""Totals by region: the whole program lowered in each region of its symbolic sizes
(`Report.regions`, `passes.symbolic_plans.variants`), written by `shardc.driver.sections.regions`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import sympy as sp

from shardc.driver.boundaries import free_sizes
from shardc.driver.decision_regions import relation_text
from shardc.driver.objective import varies
from shardc.lang.input_limits import MAX_REGIONS, REGIONS_STATEMENTS
from shardc.passes.symbols import as_expr

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.passes.symbolic_plans import Variant


class Shown(NamedTuple):
    """`Report.shown_region`: where the plan the report's sections show holds (`B > 7659.4`,
    the chip's figures as exact numbers), its share of the sample, and `past`, the limit the
    regions went past where the report shows one plan instead of them: "regions" (more than
    `MAX_REGIONS`), "statements" (more than `REGIONS_STATEMENTS` to lower) or "seconds" (the
    CPU net, `REGIONS_NET_SECONDS`); None below the cap."""

    where: str
    share: float
    past: str | None = None


TOTALS = (
    ("T_lower", "t_lower_s", "s"),
    ("T_expected", "t_expected_s", "s"),
    ("T_comms", "t_comms_s", "s"),
    ("T_math", "t_math_s", "s"),
    ("comm bytes", "comm_bytes", "B"),
)


def find(r: Report, points: Mapping[str, Any] | None = None) -> tuple[Variant, ...] | None:
    """`Report.regions`: one `Variant` per combination of plans that some point of the sample
    (or of `points`, arrays of values per size name) reaches, its `result` the report of the
    program with those plans; () where the report's own plans hold at every point, None for
    too many. One variant where a single plan wins everywhere but it is not the report's
    default (the book's rule at symbolic sizes): the numbers a compile at any point gives are
    that variant's, not the report's."""
    return find_past(r, points)[0]


def statements(r: Report) -> int:
    """What `REGIONS_STATEMENTS` counts of one lowering: `r`'s assignments, the backward's too."""
    from shardc.lang.syntax import Assign

    assert r.recipe is not None and r.recipe.unit.program is not None
    return sum(isinstance(s, Assign) for s in r.recipe.unit.program.statements)


def find_past(
    r: Report, points: Mapping[str, Any] | None = None
) -> tuple[tuple[Variant, ...] | None, str | None]:
    """`find`, and where it found too many, the limit it stopped at (`Shown.past`, which
    `render.writer.past_text` words): `sweep`'s note names it as the report does."""
    from shardc.passes.symbolic_plans import TooMany, variants

    free = free_sizes(r)
    if not free or r.recipe is None or not varies(r):
        return (), None

    def lower(chooser):
        return lowered(r, chooser)

    from shardc.driver.objective_regions import partition
    from shardc.passes.symbolic_plans import sample_points

    points = sample_points(free, frozenset(r.program.mesh_axes)) if points is None else points
    mesh = frozenset(r.program.mesh_axes)
    found = variants(lower, free, mesh, points=points, statements=statements(r))
    if isinstance(found, TooMany):
        return None, found.past
    # where the whole program's objective, not each statement, decides
    found = partition(r, found, points, free, plan_of)
    if len(found) == 1 and plan_of(found[0].result) == plan_of(r):
        return (), None
    return found, None


def settle(r: Report) -> Report:
    """The report a compile gives by default: where a plan depends on sizes left symbolic, never
    the default plans of each choice on their own (a mix no size runs), but

    - the plan every point of the sample runs, where one plan wins everywhere;
    - with several regions, the plan of the largest region in every section, labelled, and the
      totals as `Piecewise` formulas over the regions (each region's totals, `regions()`);
    - past `MAX_REGIONS` regions (or `REGIONS_STATEMENTS`), the plan of the region holding most of
      the sample (at each choice, the plan that wins on most of the points left), labelled with
      the region it holds in (exact numbers, `boundaries.boundary`) and the limit hit
      (`Shown.past`).

    Programs whose plans depend on no symbolic size are returned as they are."""
    from shardc.passes.sizes import known_sizes
    from shardc.passes.symbolic_plans import Majority, TooMany, Variant, sample_points, variants

    free = free_sizes(r)
    if not free or r.recipe is None or not varies(r):
        return r
    import numpy as np

    points = sample_points(free, frozenset(r.program.mesh_axes))
    size = len(next(iter(points.values())))
    # Sizes bound after the compile (`Report.at` with some left free) are constants here.
    for name, value in known_sizes((*r.program.dims, *r.program.mesh), r.bindings).items():
        points.setdefault(name, np.full(size, float(value)))

    def lower(chooser) -> Report:
        return lowered(r, chooser)

    most = Majority(points, {})
    largest = lower(most)
    n = statements(r)
    from shardc.driver.objective_regions import partition

    found: tuple[Variant, ...] | None = None
    past = None
    if most.splits == 0:
        # One plan per statement everywhere; the whole program's objective may still split.
        alone = (Variant((), (), 1.0, largest),)
        found = partition(r, alone, points, free, plan_of)
        if len(found) == 1 and plan_of(found[0].result) == plan_of(largest):
            return r if plan_of(largest) == plan_of(r) else dataclasses.replace(largest, settled=())
    # The enumeration lowers the program at least once per region (1 + splits of them): where
    # that is past the cap, or would lower more statements than the budget, the report keeps
    # the one plan (a 200-statement program: 1 lowering, not 17).
    elif 1 + most.splits > MAX_REGIONS:
        past = "regions"
    elif (1 + most.splits) * n > REGIONS_STATEMENTS:
        past = "statements"
    else:
        mesh = frozenset(r.program.mesh_axes)
        enumerated = variants(lower, free, mesh, points=points, statements=n)
        if isinstance(enumerated, TooMany):  # which limit `variants` stopped at
            past = enumerated.past
        else:  # where the whole program's objective, not each statement, decides
            found = partition(r, enumerated, points, free, plan_of)
    if found is None:
        from shardc.driver.boundaries import boundary

        # Each bound with exact numbers, built from the chip's symbols (`boundary`), not the
        # lowering's floats.
        bounds = dict.fromkeys(most.bounds)
        rels = [boundary(r, b, most.sides.get(b)).relation for b in bounds]
        where = " and ".join(relation_text(b) for b in rels) or "elsewhere"
        return dataclasses.replace(
            largest, settled=None, shown_region=Shown(where, float(most.mask.mean()), past)
        )
    if len(found) == 1:
        return dataclasses.replace(found[0].result, settled=())
    from shardc.driver.boundaries import condition, solve_all

    found = solve_all(r, found)
    base: Report = found[0].result
    totals = dict(base.totals)
    conditions = [condition(r, v) for v in found]
    for key in dict.fromkeys(k for v in found for k in v.result.totals):
        pieces = [
            (as_expr(v.result.totals.get(key, 0)), c)
            for v, c in zip(found, conditions, strict=True)
        ]
        if len({e for e, _ in pieces}) > 1:
            totals[key] = disjoint(pieces)
        else:  # a total some region lacks (0 there) is still a total of every region
            totals.setdefault(key, pieces[0][0])
    return dataclasses.replace(
        lowered(r, None, base.memory),
        cost=dataclasses.replace(base.cost, totals=totals),
        settled=found,
        shown_region=Shown(condition_text(found[0]), found[0].share),
    )


def lowered(r: Report, chooser: Any, memory: Any = False) -> Report:
    """`r` lowered again with the plans `chooser` picks (`recipe.relower`), a new report with
    `r`'s chip, bindings and options; `chooser=None`: `r`'s own costs, with `memory`."""
    from shardc.driver.caches import Memo
    from shardc.driver.recipe import relower

    assert r.recipe is not None
    cost, mem = relower(r.recipe, chooser) if chooser is not None else (r.cost, memory)
    return dataclasses.replace(
        r,
        cost=cost,
        bindings=dict(r.bindings),
        warnings=list(r.warnings),
        memory=mem,
        options=dict(r.options),
        shown_region=None,
        settled=False,
        memo=Memo(),
    )


def plan_of(r: Report) -> tuple[tuple[Any, ...], ...]:
    """What a program does, op by op (kinds, collectives, layouts), without the prose."""
    return tuple((c.kind, c.op, c.axes, c.array, c.src, c.dst) for c in r.ops)


def piecewise(r: Report, name: str) -> sp.Expr:
    """`Report.piecewise`: a total as a SymPy `Piecewise` over the regions (a settled report's
    totals already are)."""
    if isinstance(as_expr(r.totals.get(name, 0)), sp.Piecewise):
        return as_expr(r.totals[name])
    regions = r.regions()
    if not regions:
        return r.formula(name)
    from shardc.driver.boundaries import condition

    pieces = [(as_expr(v.result.totals.get(name, 0)), condition(r, v)) for v in regions]
    return disjoint(pieces)


def disjoint(pieces: list[tuple[sp.Expr, Any]]) -> sp.Expr:
    """A `Piecewise` over regions whose conditions do not overlap, the last one as `True`. Not
    evaluated: SymPy's collapse of the conditions distributes And over Or, exponential in the
    relations of three or more free sizes (a CI property example ran for over 15 minutes), and
    disjoint regions leave it nothing to merge. At a point every condition is a boolean."""

    def canonical(c: Any) -> Any:  # each relation as an evaluated Piecewise writes it
        return c.replace(lambda e: e.is_Relational, lambda e: e.canonical) if c is not True else c

    args = [(e, canonical(c)) for e, c in pieces[:-1]]
    return sp.Piecewise(*args, (pieces[-1][0], True), evaluate=False)


def condition_text(v: Variant) -> str:
    """`B > 7659.4`, several bounds joined by `and`; `elsewhere` for the last region (and
    `everywhere` for the only one)."""
    return " and ".join(relation_text(b) for b in v.bounds) or (
        "everywhere" if v.share == 1.0 and not v.forced else "elsewhere"
    )


def collectives(r: Report) -> str:
    """The program's collectives in order, as `AllGather_X(W_in) x2, ReduceScatter_X(dW)`."""
    seen: dict[str, int] = {}
    for c in r.ops:
        if c.kind == "collective":
            name = f"{c.op}_{''.join(c.axes)}({c.array})"
            seen[name] = seen.get(name, 0) + 1
    return ", ".join(f"{n} x{k}" if k > 1 else n for n, k in seen.items()) or "none"


def shown_text(r: Report) -> str | None:
    """The report's note on the plan its sections show, where plans depend on symbolic sizes
    (`settle`), or on plans chosen for the whole program (`driver.objective`); None where
    each contraction runs its own cheapest plan everywhere."""
    if r.shown_region is None:
        from shardc.driver.objective import note_text

        return note_text(r)
    where, share, past = r.shown_region
    regions = r.regions()
    if regions is None:
        from shardc.driver.render.writer import past_text

        return (
            f"{past_text(past)}: every section shows the plan that holds where {where} "
            f"({share:.0%} of the sample), not a plan for every size (bind sizes with --set "
            "for another)"
        )
    return (
        f"{len(regions)} regions of the symbolic sizes: the totals are piecewise (totals "
        f"by region at the end); decisions, conditions, memory and ops show the plan where "
        f"{where} ({share:.0%} of the sample)"
    )


def has_lines(r: Report) -> bool:
    """Whether the report prints its regions: several of them, or too many (`settle`)."""
    return r.shown_region is not None or bool(r.regions())


__all__ = [
    "Shown",
    "collectives",
    "condition_text",
    "find",
    "find_past",
    "free_sizes",
    "has_lines",
    "lowered",
    "piecewise",
    "plan_of",
    "settle",
    "shown_text",
    "statements",
]
