"""The whole-program objective: choose each contraction's plan for the program's cost, not its
own.

The lowering plans each contraction for itself: the cheapest plan of that statement (its
collectives' time plus its compute at the chip's peak). What a plan saves or costs elsewhere it
does not see: a layout another statement reuses (the backward pass reads the forward's gathered
activations), a collective the step schedule hides (a prefetched weight gather, an asynchronous
gradient reduction), a term that does not bound `T_lower`. This module searches over the plan
vectors (one plan per contraction) for the one that minimizes a named objective of the whole
program (`OBJECTIVES`), starting from the per-statement choice, which it keeps unless another
vector is strictly cheaper. The search is exact over each contraction's `PRODUCT_OPTIONS` best
plans (`EXHAUSTIVE` vectors), then descends one contraction at a time through its
`MAX_OPTIONS` best (`PASSES`), all within `NEAR` of its cheapest and `WORK` contractions
lowered; docs/cost-model.md says what it can miss.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_args

from shardc.passes.context import Objective
from shardc.passes.symbolic_plans import (
    Candidate,
    Chooser,
    divides,
    evaluate,
    plan_key,
    sourced,
)

OBJECTIVES: tuple[Objective, ...] = get_args(Objective)

OBJECTIVE_TEXT: dict[Objective, str] = {
    "t_lower": "T_lower, the roofline max(T_math, T_hbm, T_comms)",
    "t_upper": "T_upper, the sum T_math + T_hbm + T_comms",
    "step": "T_step of the list schedule (prefetched gathers, asynchronous reductions, "
    "collective matmuls)",
    "statement": "each contraction's own time (no whole-program search)",
}

MAX_OPTIONS = 3
"""Distinct plans ranked per contraction (the decision record lists as many): the first
`PRODUCT_OPTIONS` are searched in every combination, the next by the descent (`search`). Under
`T_lower` the FSDP step's first product ranks its two book plans (gather the weight, move the
activations) second and third behind its F-sharded one on either side of B = 7660, where they
swap: with two options a program left the options there, and its regions split where no two
steps cross."""

PRODUCT_OPTIONS = 2
"""Plans per contraction whose every combination is tried: with three the FSDP step has 729
vectors, each a lowering (2^6 = 64 with two); none of the 729 was cheaper at B = 4096 or 8192
than the best of the 64."""

PASSES = 3
"""Rounds of the descent (`search`): each tries every other option at each contraction in
turn, then at two neighbouring contractions at once, from the cheapest vector so far; it stops
after a round that changes nothing."""

NEAR = 3.0
"""An option is tried only where its own time (the planner's key: communication plus compute at
the chip's peak) is at most this factor of the per-statement choice's: a plan that much slower
for its own statement rarely pays off elsewhere, and each option doubles the vectors. (At 1.5
the FSDP step's mixes left the options at B = 12118, inside the region where they are the
cheapest step, and the regions split there, not where the steps cross.)"""

EXHAUSTIVE = 256
"""At most this many plan vectors (the product of the contractions' option counts) are tried,
all of them: the search is exact over its options, so the plans a compile chooses at a point
are the cheapest of those options there (the regions drawn by `driver.objective_regions.partition`
rely on it). The FSDP step has 2^6 = 64."""

WORK = 4096
"""At most this many contractions lowered by the exhaustive search in all (vectors times
contractions; the descent lowers at most `PASSES` times the options beyond them):
each vector relowers the whole program, so a program of 50 products with two options at 8
of them would cost several compiles (docs/cost-model.md, "What it can miss")."""

REL_TOL = 1e-9
"""A vector replaces the per-statement choice only where it is cheaper by more than this
fraction (ties and float noise keep the per-statement plans)."""


def default_objective(training: bool) -> Objective:
    """The objective a compile takes without `--objective`: a training step's scheduled step
    time, a forward program's `T_lower`.

    >>> default_objective(True), default_objective(False)
    ('step', 't_lower')
    """
    return "step" if training else "t_lower"


def distinct(
    items: Sequence[Any], steps: Callable[[Any], tuple[Any, ...]], limit: int = MAX_OPTIONS
) -> list[Any]:
    """The first `limit` items with distinct reshard steps, in order (plans that move the same
    data the same way are one option).

    >>> distinct([1, 2, 3, 4, 5], lambda x: (x % 2,))
    [1, 2]
    """
    out: list[Any] = []
    seen: set[tuple[Any, ...]] = set()
    for x in items:
        key = steps(x)
        if key not in seen:
            seen.add(key)
            out.append(x)
            if len(out) == limit:
                break
    return out


@dataclass
class Forced:
    """A chooser that runs the `forced[ordinal]`-th option at each contraction it names and the
    `sweep`-th elsewhere (0: the per-statement choice; an option a contraction lacks falls back
    to 0), recording how many options each has (`seen`).

    Options are ranked as the planner ranks plans at `point` (`passes.symbolic_plans.plan_key`, then
    the search's order), distinct by reshard steps, so a symbolic report evaluated at a point
    (`base` an `AtPoint`) and a compile with the point's sizes bound run the same search. Where
    `base` is None, a contraction whose ranking depends on symbolic sizes keeps its default."""

    base: Chooser | None = None
    forced: Mapping[int, int] = field(default_factory=dict)
    sweep: int = 0
    seen: dict[int, int] = field(default_factory=dict)
    shared: dict[str, Any] = field(default_factory=dict)
    """The lowering's plan searches, lent from one lowering of the program to the next
    (`passes.lower.walk.insert_collectives`)."""
    options: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    """Each contraction's options by what they do (reshard steps; an option's place where the
    contraction's sizes are all known), cheapest first."""
    picked: dict[int, Any] = field(default_factory=dict)
    """The option run at each contraction, as `options` names it."""
    wide: dict[int, int] = field(default_factory=dict)
    """How many options each contraction has for the descent (`seen` counts those of the
    exhaustive product)."""
    met: dict[tuple[Any, ...], dict[int, tuple[Any, ...]]] = field(default_factory=dict)
    """`options_at` by point, since the lowering last chose (the report's regions ask it of
    each lowering at each sampled point, for every plan vector they place there)."""

    def rank(
        self, ordinal: int, times: Sequence[float], near: float = NEAR, product: int = 0
    ) -> int:
        """The option to run at a contraction whose options' own times (the planner's key,
        cheapest first) are `times`; options slower than `near` times the first are not run,
        and only the first `product` (all where 0) are in the exhaustive product."""
        options = sum(1 for t in times if t <= times[0] * near)
        self.met.clear()
        self.seen[ordinal] = min(options, product) if product else options
        self.wide[ordinal] = options
        r = self.forced.get(ordinal, self.sweep)
        r = r if r < options else 0
        self.options[ordinal] = tuple(range(options))
        self.picked[ordinal] = r
        return r

    def admits(self, picked: Mapping[int, Any], options: Mapping[int, tuple[Any, ...]]) -> bool:
        """Whether every plan of `picked` (another chooser's `picked`) is among `options`
        (`options_at`), each read as this lowering's contractions meet them."""
        return all(v in options.get(k, (v,)) for k, v in picked.items())

    def runs(self, other: Forced, point: Mapping[str, float]) -> bool:
        """Whether the search at `point`, over this (per-statement) lowering's options there,
        could run `other`'s plan vector. Each contraction's pick is placed among the options
        `other`'s own lowering meets at `point` (a contraction's options depend on the layouts
        the contractions before it leave, so another lowering's would not do), and that place
        must be one the search tries there (`search` forces the k-th option of each: the
        product's, or the descent's, which reaches only some vectors of the latter)."""
        own, ranges = other.options_at(point), self.options_at(point)
        for k, v in other.picked.items():
            options = own.get(k, (v,))
            if v not in options or options.index(v) >= len(ranges.get(k, options)):
                return False
        return True

    candidates: dict[int, Sequence[Candidate]] = field(default_factory=dict)
    """Each contraction's plans whose ranking depends on symbolic sizes (`options_at`)."""

    def choose(self, ordinal: int, candidates: Sequence[Candidate]) -> int | None:
        point = getattr(self.base, "point", None)
        if point is None:
            return self.base.choose(ordinal, candidates) if self.base is not None else None
        self.met.clear()
        self.candidates[ordinal] = candidates
        options = ranked(candidates, point, getattr(self.base, "whole", False))
        if options is None:
            return None
        pick = options[self.rank(ordinal, [t for t, _ in options], product=PRODUCT_OPTIONS)][1]
        self.options[ordinal] = tuple(option(c) for _, c in options[: self.wide[ordinal]])
        self.picked[ordinal] = option(pick)
        return int(pick.order)

    def options_at(self, point: Mapping[str, float]) -> dict[int, tuple[Any, ...]]:
        """`options` as a lowering at `point` would record them, from the candidates this
        lowering met (the same where the contractions' operands are read in the same layouts,
        as where every statement's result has its declared layout)."""
        key = tuple(point.items())
        found = self.met.get(key)
        if found is not None:
            return found
        out = self.met[key] = dict(self.options)
        for k, candidates in self.candidates.items():
            options = ranked(candidates, point)
            if options is not None:
                near = sum(1 for t, _ in options if t <= options[0][0] * NEAR)
                out[k] = tuple(option(c) for _, c in options[:near])
        return out


def option(c: Candidate) -> Any:
    """An option by what it does: its reshard steps, and the copy it reads (`Candidate.source`)
    where it reads one."""
    return (c.source, c.steps) if c.source else c.steps


def ranked(
    candidates: Sequence[Candidate], point: Mapping[str, float], whole: bool = False
) -> list[tuple[float, Candidate]] | None:
    """A contraction's options at `point`: its plans ranked as the planner ranks them there
    (`passes.symbolic_plans.plan_key`, then the search's order), distinct by reshard steps, at most
    `MAX_OPTIONS`, each with its own time (None where a size has no value). The plans with
    roles beyond the book's cases are ranked with the others (`PlanSearch.every`, as where
    every size is known): were they options only where one ranks first, a program using one
    would leave the options where another plan overtakes it for its own product, and the
    regions would split there although the whole step's costs do not cross. With `whole` (a
    point a compile runs at, `AtPoint.whole`), plans whose blocks do not divide there are not
    options (None where none is left)."""
    keyed = []
    mine = sourced(candidates, point, whole)  # the operands, or the copy a compile reads
    if mine is None:
        return None
    for c in mine:
        if whole and not divides(c, point):
            continue  # a layout whose shards do not divide their dims there
        t, f = evaluate(c.time, point), evaluate(c.flops, point)
        if t is None or f is None:
            return None
        keyed.append(((plan_key(t, f, c.collectives), c.order), c))
    if not keyed:
        return None
    keyed.sort(key=lambda k: k[0])
    return [(k[0][0][0], k[1]) for k in distinct(keyed, lambda k: k[1].steps)]


R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Searched:
    """What the search chose: the chooser that lowers it again (None: the per-statement plans
    are the cheapest found), its objective and the per-statement plans'."""

    chooser: Forced | None
    value: float | None
    greedy: float | None
    lowerings: int = 0


def searchable(seen: Mapping[int, int]) -> bool:
    """Whether `search` tries other plan vectors than the per-statement one, given each
    contraction's option count (`Forced.seen`): more than one vector, within `EXHAUSTIVE` and
    `WORK`.

    >>> searchable({0: 2, 1: 1}), searchable({0: 1}), searchable({k: 2 for k in range(9)})
    (True, False, False)
    """
    vectors = math.prod(seen.values())
    return 1 < vectors <= EXHAUSTIVE and vectors * len(seen) <= WORK


def preferred(
    costs: Sequence[float | None], tie: Callable[[int], float | None], first: int | None = 0
) -> int | None:
    """The candidate a compile keeps among plan vectors whose objectives are `costs` (None: no
    number), in the order they were met: the one rule the whole-program search at a point
    (`search`) and the report's regions over a free size (`driver.objective_regions.partition`)
    both apply, so that a region's program is the compile's there. The lowest objective;
    among those within `REL_TOL` of it, the lowest tie-break (`tie`: the other roofline total,
    or for the scheduled step the sum of its ops' times, `driver.objective.tie_value`: a comms
    bound step ties whatever FLOPs its plans run besides), within `REL_TOL` too; among those
    `first` (the per-statement plans) where it is one, else the first met. None where no cost
    has a number.

    >>> preferred([2.0, 1.0, 1.0], lambda i: [0.0, 5.0, 4.0][i])
    2
    >>> preferred([1.0, 1.0], lambda i: 3.0), preferred([None], lambda i: None)
    (0, None)
    """
    known = [(c, i) for i, c in enumerate(costs) if c is not None]
    if not known:
        return None
    low = min(c for c, _ in known)
    tied = [i for c, i in known if c <= low + abs(low) * REL_TOL]
    if len(tied) > 1:
        ties = {i: tie(i) for i in tied}
        values = [v for v in ties.values() if v is not None]
        if values:
            least = min(values)
            tied = [
                i for i in tied if (v := ties[i]) is not None and v <= least + abs(least) * REL_TOL
            ]
    return first if first is not None and first in tied else tied[0]


def search(
    lower: Callable[[Forced], R],
    cost: Callable[[R], float | None],
    base: Chooser | None = None,
    first: tuple[R, Forced] | None = None,
    tie: Callable[[R], float | None] | None = None,
) -> Searched:
    """The plan vector minimizing `cost`, starting from the per-statement choice (`first`,
    lowered already with a `Forced` that recorded its options, or lowered here).

    First every vector of the product of the options (`Forced.seen`: each contraction's
    `PRODUCT_OPTIONS` best), in order (`itertools.product` over the contractions in program
    order, the last varying fastest), the one `preferred` keeps (ties on `cost` broken by
    `tie`, then the per-statement one, then the first in order). Then a descent from it
    through the options beyond (`Forced.wide`, up to `MAX_OPTIONS`): in each of at most
    `PASSES` rounds, each contraction in program order, each of its options in rank order, the
    vector changed there alone (then at two neighbouring contractions to the same option) is
    lowered, unless lowered before, and kept where `preferred` keeps it over the best so far;
    a round that keeps none ends it. So the search never returns a vector costlier than the
    exhaustive product's best. Where the product's vectors number more than `EXHAUSTIVE`, or
    their lowerings would lower more than `WORK` contractions in all, nothing is tried and the
    per-statement plans stand (a search that cannot be exact over its product would make a
    compile at a point and the report's regions disagree). Deterministic: no time budget.
    """
    if first is None:
        recorder = Forced(base)
        first = (lower(recorder), recorder)
    result, recorder = first
    seen = dict(recorder.seen)
    if not searchable(seen):
        return Searched(None, None, None)
    greedy = cost(result)
    if greedy is None:
        return Searched(None, greedy, greedy)
    runs = 0
    ordinals = sorted(seen)
    met: list[tuple[Forced | None, R, float, tuple[int, ...]]] = [
        (None, result, greedy, (0,) * len(ordinals))
    ]
    for vector in itertools.product(*(range(seen[k]) for k in ordinals)):
        if not any(vector):
            continue  # the per-statement plans, lowered already
        c = Forced(base, dict(zip(ordinals, vector, strict=True)), shared=recorder.shared)
        got = lower(c)
        v = cost(got)
        runs += 1
        if v is not None:
            met.append((c, got, v, vector))

    def tied(pair: list[R]) -> Callable[[int], float | None]:
        return (lambda i: tie(pair[i])) if tie is not None else (lambda i: None)

    k = preferred([m[2] for m in met], tied([m[1] for m in met])) or 0
    best, best_report, best_value, current = met[k]
    wide = [max(recorder.wide.get(k, seen[k]), seen[k]) for k in ordinals]
    if wide == [seen[k] for k in ordinals]:
        return Searched(best, best_value, greedy, runs)
    tried: set[tuple[int, ...]] = set()  # beyond the product (which was tried whole)

    # The descent's moves, in order: each contraction (program order) to each of its options
    # (rank order); then each two contractions next to each other in program order to the same
    # option at once (a product's two gradients read the same operand: plans that swap places
    # in one's ranking swap in the other's too). Each is taken from the cheapest vector so far.
    moves = [(i, 1, o) for i in range(len(ordinals)) for o in range(wide[i])]
    moves += [(i, 2, o) for i in range(len(ordinals) - 1) for o in range(min(wide[i], wide[i + 1]))]
    for _ in range(PASSES):
        start = current
        for i, width, option in moves:
            if option in current[i : i + width]:
                continue  # that contraction there already: a smaller move, or none
            vector = (*current[:i], *(option,) * width, *current[i + width :])
            inside = all(x < seen[j] for x, j in zip(vector, ordinals, strict=True))
            if inside or vector in tried:
                continue
            tried.add(vector)
            c = Forced(base, dict(zip(ordinals, vector, strict=True)), shared=recorder.shared)
            got = lower(c)
            v = cost(got)
            runs += 1
            if v is not None and preferred([best_value, v], tied([best_report, got])) == 1:
                best, best_report, best_value, current = c, got, v, vector
        if current == start:
            break
    return Searched(best, best_value, greedy, runs)


__all__ = [
    "EXHAUSTIVE",
    "MAX_OPTIONS",
    "NEAR",
    "OBJECTIVES",
    "OBJECTIVE_TEXT",
    "PASSES",
    "PRODUCT_OPTIONS",
    "WORK",
    "Forced",
    "Objective",
    "Searched",
    "default_objective",
    "distinct",
    "preferred",
    "ranked",
    "search",
    "searchable",
]
