"""The whole-program objective: choose each contraction's plan for the program's cost, not its
own.

The lowering plans each contraction for itself: the cheapest plan of that statement (its
collectives' time plus its compute at the chip's peak). What a plan saves or costs elsewhere it
does not see: a layout another statement reuses (the backward pass reads the forward's gathered
activations), a collective the step schedule hides (a prefetched weight gather, an asynchronous
gradient reduction), a term that does not bound `T_lower`. This module searches over the plan
vectors (one plan per contraction) for the one that minimizes a named objective of the whole
program (`OBJECTIVES`), starting from the per-statement choice, which it keeps unless another
vector is strictly cheaper. The search is bounded (`MAX_OPTIONS` plans per contraction,
`MAX_LOWERINGS` lowerings); docs/cost-model.md says what it can miss.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args

from shardc.passes.regions import Candidate, Chooser, evaluate, plan_key

Objective = Literal["t_lower", "t_upper", "step", "statement"]
"""`--objective`: what the plans of a program are chosen to minimize (`statement`: each
contraction's own time, no search: the plans of a planner without this module)."""

OBJECTIVES: tuple[Objective, ...] = get_args(Objective)

OBJECTIVE_TEXT: dict[Objective, str] = {
    "t_lower": "T_lower, the roofline max(T_math, T_hbm, T_comms)",
    "t_upper": "T_upper, the sum T_math + T_hbm + T_comms",
    "step": "T_step of the list schedule (prefetched gathers, asynchronous reductions, "
            "collective matmuls)",
    "statement": "each contraction's own time (no whole-program search)",
}

MAX_OPTIONS = 3
"""Distinct plans tried per contraction: the per-statement choice and the next two by its key
(the decision record lists the same three)."""

MAX_LOWERINGS = 48
"""Lowerings the search may run beyond the per-statement one (each costs about one compile
without parsing)."""

NEAR = 1.5
"""An option is tried only where its own time (the planner's key: communication plus compute at
the chip's peak) is at most this factor of the per-statement choice's: a plan that much slower
for its own statement rarely pays off elsewhere, and each option tried costs a lowering."""

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


def distinct(items: Sequence[Any], steps: Callable[[Any], tuple], limit: int = MAX_OPTIONS
             ) -> list[Any]:
    """The first `limit` items with distinct reshard steps, in order (plans that move the same
    data the same way are one option).

    >>> distinct([1, 2, 3, 4, 5], lambda x: (x % 2,))
    [1, 2]
    """
    out: list[Any] = []
    seen: set[tuple] = set()
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

    Options are ranked as the planner ranks plans at `point` (`passes.regions.plan_key`, then
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

    def rank(self, ordinal: int, times: Sequence[float]) -> int:
        """The option to run at a contraction whose options' own times (the planner's key,
        cheapest first) are `times`; options slower than `NEAR` times the first are not run."""
        options = sum(1 for t in times if t <= times[0] * NEAR)
        self.seen[ordinal] = options
        r = self.forced.get(ordinal, self.sweep)
        return r if r < options else 0

    def choose(self, ordinal: int, candidates: Sequence[Candidate]) -> int | None:
        point = getattr(self.base, "point", None)
        if point is None:
            return self.base.choose(ordinal, candidates) if self.base is not None else None
        keyed = []
        for c in candidates:
            t, f = evaluate(c.time, point), evaluate(c.flops, point)
            if t is None or f is None:
                return None
            keyed.append(((plan_key(t, f, c.collectives), c.order), c))
        keyed.sort(key=lambda k: k[0])
        options = distinct(keyed, lambda k: k[1].steps)
        if not options:
            return None
        return options[self.rank(ordinal, [k[0][0][0] for k in options])][1].order


R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Searched:
    """What the search chose: the chooser that lowers it again (None: the per-statement plans
    are the cheapest found), its objective and the per-statement plans'."""

    chooser: Forced | None
    value: float | None
    greedy: float | None
    lowerings: int = 0


def search(lower: Callable[[Forced], R], cost: Callable[[R], float | None],
           base: Chooser | None = None, first: tuple[R, Forced] | None = None,
           budget: int = MAX_LOWERINGS) -> Searched:
    """The plan vector minimizing `cost` among those the search visits, starting from the
    per-statement choice (`first`, lowered already with a `Forced` that recorded its options,
    or lowered here):

    1. sweeps: the r-th option at every contraction (r = 1, 2), which finds a strategy every
       statement must share to pay off (FSDP's activations, reused by the backward pass);
    2. a coordinate pass from each of those vectors, the cheapest first: each contraction in
       program order, each of its options, kept where strictly cheaper than the pass's vector
       so far.

    Deterministic: no time budget, `budget` lowerings at most.
    """
    if first is None:
        recorder = Forced(base)
        first = (lower(recorder), recorder)
    result, recorder = first
    greedy = cost(result)
    seen = dict(recorder.seen)
    if greedy is None or not any(n > 1 for n in seen.values()):
        return Searched(None, greedy, greedy)
    best_value = greedy
    best: Forced | None = None
    runs = 0

    tried: dict[tuple, tuple[float | None, Forced]] = {}

    def run(forced: dict[int, int], sweep: int) -> tuple[float | None, Forced]:
        nonlocal runs
        key = (tuple(sorted(forced.items())), sweep)
        if key not in tried:  # passes from two starts meet at the same vectors
            runs += 1
            c = Forced(base, forced, sweep, shared=recorder.shared)
            tried[key] = (cost(lower(c)), c)
        return tried[key]

    starts: list[tuple[Forced, float]] = [(recorder, greedy)]
    for sweep in range(1, MAX_OPTIONS):
        if runs >= budget or not any(n > sweep for n in seen.values()):
            break
        v, c = run({}, sweep)
        if v is None:
            continue
        starts.append((c, v))
        if v < best_value * (1 - REL_TOL):
            best_value, best = v, c
    # A coordinate pass from each start (the per-statement plans and each sweep), on the
    # start's explicit vector: a plan near one strategy is found from that strategy.
    for start, here in sorted(starts, key=lambda s: s[1]):
        vector = {k: (start.sweep if start.sweep < n else 0) for k, n in start.seen.items()}
        for k in sorted(start.seen):
            for r in range(start.seen[k]):
                if r == vector.get(k, 0) or runs >= budget:
                    continue
                v, c = run({**vector, k: r}, 0)
                if v is None:
                    continue
                if v < here * (1 - REL_TOL):
                    here = v
                    vector = {**{j: 0 for j in c.seen}, **vector, k: r}
                if v < best_value * (1 - REL_TOL):
                    best_value, best = v, c
    return Searched(best, best_value, greedy, runs)


__all__ = ["MAX_LOWERINGS", "MAX_OPTIONS", "OBJECTIVES", "OBJECTIVE_TEXT", "Forced", "Objective",
           "Searched", "default_objective", "distinct", "search"]
