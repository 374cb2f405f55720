"""Where each program is the whole program's choice over a free size: the report's regions
re-drawn for the whole-program objective (`partition`), boundaries found by bisection.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from shardc.driver.objective import (
    at_point_with_chooser,
    objective_of,
    tie_value,
    value,
)

if TYPE_CHECKING:
    from shardc.driver.report import Report


REFINE = 6
"""Rounds of `partition`: the search's picks beside the boundaries found, then the boundaries
again (three rounds missed the FSDP step's narrowest mix, from B = 7491 to 7612)."""

BISECTIONS = 64
"""Sample values of a lone free size at which the candidates are compared (log-spaced through
the sample); each change of winner between two of them is then bisected to a whole size."""


def fixed(r: Report, point: Mapping[str, float]) -> Report:
    """`r`'s program, plans unchanged, with the sizes of `point` bound."""
    return dataclasses.replace(
        r, bindings={**r.bindings, **point}, warnings=list(r.warnings), memo=r.memo.fresh()
    )


def partition(
    r: Report,
    found: tuple[Any, ...],
    points: Mapping[str, Any],
    names: list[str],
    plan_of: Callable[[Report], Any],
) -> tuple[Any, ...]:
    """The regions of `found` (the per-statement plans' regions, `passes.symbolic_plans.variants`)
    re-drawn for the whole program's objective. The candidates are each region's program and
    the programs the search picks (`Report.at`) inside each region and on each side of every
    boundary found so far (those sides probed again), until no new one appears (`REFINE`
    rounds); a size is in the region of the candidate whose objective is lowest there among
    those a compile there could run (each plan among the options the search tries there, as
    the candidate's own lowering ranks them: `Forced.runs`), ties broken as the search at a
    point breaks them (`passes.objective.preferred`), so each boundary is where two
    programs' objectives cross (a whole size, by bisection). The search's picks at the
    sample's ends are candidates too: where no per-statement choice depends on the size, the
    objective still may.

    Only where one size is free; with more, `found` is returned as it is (docs/cost-model.md:
    the report at a point, `Report.at`, still runs the search). `plan_of` tells programs
    apart (`driver.region_totals.plan_of`)."""
    import numpy as np

    from shardc.driver.recipe import relower
    from shardc.passes.objective import Forced, preferred
    from shardc.passes.symbolic_plans import AtPoint, Variant, classify
    from shardc.passes.symbols import size_symbol

    if len(names) != 1 or not found or r.recipe is None:
        return found
    (name,) = names
    objective = objective_of(r)
    if objective == "statement":
        return found
    sample = np.unique(np.asarray(points[name], dtype=float))
    if not len(sample):
        return found
    others = {k: float(v[0]) for k, v in points.items() if k != name and len(v)}
    candidates: list[Report] = [v.result for v in found]
    plans = [plan_of(c) for c in candidates]
    # the chooser of each candidate's lowering: what it runs and the options it met at each
    # contraction (the per-statement regions': not known, a candidate only inside its region)
    vectors: list[Forced | None] = [None] * len(candidates)
    also: dict[int, list[Forced]] = {}  # other choices that run the same program
    picked: set[int] = set()

    def add_pick(x: float) -> bool:
        """The search's program at size x as a candidate; whether it is a new one."""
        if int(x) in picked:
            return False
        picked.add(int(x))
        at = {**others, name: float(x)}
        got, chooser = at_point_with_chooser(
            r, AtPoint(at), {**r.bindings, **at}
        )  # chosen with x bound
        got = dataclasses.replace(
            got, bindings=dict(r.bindings), memo=got.memo.fresh(), objective_note=None
        )  # shown over the free size
        if plan_of(got) in plans:
            k = plans.index(plan_of(got))
            if vectors[k] is None:  # a per-statement region's program: now known what it runs
                vectors[k] = chooser
                return True
            # the same program picked otherwise (a product reading a copy of its operand on
            # one side of a size, the operand itself on the other): the search runs it there
            # too
            known = [vectors[k], *also.get(k, [])]
            if all(v is not None and v.picked != chooser.picked for v in known):
                also.setdefault(k, []).append(chooser)
                return True
            return False
        candidates.append(got)
        plans.append(plan_of(got))
        vectors.append(chooser)
        return True

    def greedy_at(x: float) -> int:
        at = {**{k: np.array([v]) for k, v in others.items()}, name: np.array([float(x)])}
        return int(classify(found, at)[0])

    assert r.recipe is not None
    # the contractions' plans as one lowering meets them, ranked again at each size
    recorder = Forced(
        AtPoint({**others, name: float(sample[len(sample) // 2])}), shared=r.recipe.shared
    )
    relower(r.recipe, recorder)

    won: dict[tuple[float, int, int], int] = {}  # winners by size and candidates known

    def winner(x: float) -> int:
        """The cheapest candidate at x among those the search at x could run (a compile
        with x bound searches only the options it ranks near the best: the others are not
        its choice however cheap), ties broken as the search there breaks them."""
        key = (
            float(x),
            len(candidates),
            sum(v is not None for v in vectors) + sum(map(len, also.values())),
        )
        if key not in won:
            won[key] = _winner(x)
        return won[key]

    def _winner(x: float) -> int:
        at = {**others, name: float(x)}
        greedy = greedy_at(x)
        got = [
            value(fixed(c, at), objective)
            if k == greedy
            or any(v is not None and recorder.runs(v, at) for v in (vec, *also.get(k, ())))
            else float("inf")
            for k, (c, vec) in enumerate(zip(candidates, vectors, strict=True))
        ]
        if any(v is None for v in got):
            return max(greedy, 0)
        best = preferred(  # as the search at x keeps one (`passes.objective.search`)
            got,
            lambda k: tie_value(fixed(candidates[k], at), objective),
            greedy if greedy >= 0 else None,
        )
        return max(greedy, 0) if best is None else best

    which = classify(
        found, {name: sample, **{k: np.full(len(sample), v) for k, v in others.items()}}
    )
    for k in range(len(found)):
        inside = sample[which == k]
        if len(inside):
            add_pick(inside[len(inside) // 2])
    # and at the sample's ends: where no per-statement choice depends on the size (a region of
    # one program), the search's choice may still change with it (comms bound at one end,
    # HBM at the other)
    add_pick(sample[0])
    add_pick(sample[-1])
    probes = sample[np.unique(np.linspace(0, len(sample) - 1, BISECTIONS).round().astype(int))]
    for _ in range(REFINE):
        wins = [winner(x) for x in probes]
        cuts: list[tuple[int, int]] = []  # (first whole size of the new winner, the winner)
        for (lo, a), (hi, b) in pairwise(zip(probes, wins, strict=True)):
            start = int(lo)
            while a != b:  # each change of winner between two probes, in order
                low, high = start, int(hi)  # winner(low) == a, winner(high) != a
                while high - low > 1:
                    mid = (low + high) // 2
                    if winner(mid) == a:
                        low = mid
                    else:
                        high = mid
                a = winner(high)
                cuts.append((high, a))
                start = high
        # the search's picks on each side of each boundary: a mix of the two programs may win
        # near it (FSDP: gather one weight, move the other activations)
        new = [add_pick(x) for c, _ in cuts for x in (c - 1, c)]
        if not any(new):
            break
        # the next round probes each side of each boundary too: a new candidate that wins
        # just beside one (between two probes) is bisected to its own boundaries
        probes = np.unique(
            np.concatenate(
                [probes, np.asarray([x for c, _ in cuts for x in (c - 1, c)], dtype=float)]
            )
        )
    symbol = size_symbol(name)
    starts: list[tuple[int | None, int]] = [(None, wins[0]), *cuts]
    out = []
    for i, (begin, k) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else None
        bounds = tuple(
            b
            for b in (
                (symbol >= begin) if begin is not None else None,
                (symbol < end) if end is not None else None,
            )
            if b is not None
        )
        inside = np.ones(len(sample), dtype=bool)
        if begin is not None:
            inside &= sample >= begin
        if end is not None:
            inside &= sample < end
        out.append(Variant((), bounds, float(inside.mean()), candidates[k]))
    return tuple(sorted(out, key=lambda v: -v.share))


__all__ = ["BISECTIONS", "REFINE", "fixed", "partition"]
