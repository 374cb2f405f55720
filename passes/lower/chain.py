"""Chains of contractions in one statement (`In ·_J W1 ·_K W2`): the layout each intermediate
result is left in is chosen for the whole chain, not for one product at a time. A shortest path
(Viterbi) over the intermediates' layouts: a step's cost is the time of a plan of that
contraction that leaves its result in the next layout, as the planner ranks plans.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shardc.lang.layout import DimSharding, Layout
from shardc.lang.units import fmt_value

CHAIN_STATES = 8
"""Intermediate layouts kept per step of the chain (the cheapest, and always the one planning
one product at a time reaches): the search stays linear in the chain's length."""

Option = tuple[Layout, float, "Layout | None"]
"""One way to run a step: the layout it leaves the result in, its time, and the hint of the
plan search that found it (None: the plain search, `passes.einsum_plan.search_plans`)."""


@dataclass(frozen=True, slots=True)
class JointPick:
    """How one intermediate contraction of a chain is run: the cheapest plan of the search
    with `hint` that leaves `final`; `joint` and `alone` are the whole chain's time planned
    jointly and one product at a time (the planner's units: seconds, or bytes over W_ici)."""

    final: Layout
    hint: Layout | None
    joint: float
    alone: float

    def reason(self, seconds: bool) -> str:
        """The words inserted collectives carry (`beat_text`'s place)."""
        return chain_note(self.joint, self.alone, seconds)


def chain_note(joint: float, alone: float, seconds: bool) -> str:
    """Why a product's plan is not the cheapest for it alone, as its collectives and its
    decision record say it.

    >>> chain_note(384.0, 448.0, False)  # doctest: +NORMALIZE_WHITESPACE
    'chosen with the contractions that consume its result: the chain costs 384 B / W_ici
    planned together, 448 B / W_ici one product at a time'
    """
    unit, tail = ("s", "") if seconds else ("B", " / W_ici")
    return (
        f"chosen with the contractions that consume its result: the chain costs "
        f"{fmt_value(joint, unit)}{tail} planned together, {fmt_value(alone, unit)}{tail} "
        f"one product at a time"
    )


def consumer_hint(out_dims: Sequence[str], consumer: Layout) -> Layout:
    """The layout of a result with `out_dims` that shards each dim it shares with the
    consumer's other operand as that operand does.

    >>> consumer_hint(("I", "K"), Layout.of({"K": ("Z", "Y"), "L": ()})).format("C")
    'C[I, K_ZY]'
    """
    return Layout(
        tuple(
            DimSharding(d, consumer.axes_of(d) if d in consumer.dim_names else ()) for d in out_dims
        )
    )


def request_hint(out_dims: Sequence[str], requested: Layout) -> Layout:
    """The layout of an intermediate result with `out_dims` that shards each dim the chain's
    result keeps as the statement requests it: slicing before a product rather than after
    (XLA's partitioner slices the operands so; a product on the slices does a fraction of the
    FLOPs).

    >>> request_hint(("I", "N", "K"), Layout.of({"N": ("X",), "K": ("Y",), "M": ()})).format("T")
    'T[I, N_X, K_Y]'
    """
    return Layout(
        tuple(
            DimSharding(d, requested.axes_of(d) if d in requested.dim_names else ())
            for d in out_dims
        )
    )


def stage_hints(
    out_dims: Sequence[str], consumer: Layout, requested: Layout | None
) -> list[Layout]:
    """The layouts an intermediate result of a chain is steered toward besides the plain
    search's: the consumer's (`consumer_hint`), the request's (`request_hint`), and both
    together where they do not clash (each mesh axis on one dim)."""
    hints = [consumer_hint(out_dims, consumer)]
    if requested is not None:
        req = request_hint(out_dims, requested)
        both = Layout(
            tuple(
                DimSharding(c.dim, c.axes or r.axes)
                for c, r in zip(hints[0].dims, req.dims, strict=True)
            )
        )
        hints.append(req)
        axes = [a for d in both.dims for a in d.axes]
        if len(axes) == len(set(axes)):
            hints.append(both)
    return [h for i, h in enumerate(hints) if h.sharding_axes and h not in hints[:i]]


def plan_chain(
    start: Layout,
    steps: int,
    options: Callable[[int, Layout], Sequence[Option]],
    keep: int = CHAIN_STATES,
) -> list[JointPick] | None:
    """The picks of the chain's first `steps - 1` contractions, or None where planning each
    product alone (each step's first option, from the layout the previous one left) is as
    cheap. `options(i, layout)` lists step i's ways from an operand in `layout`, the plain
    search's best first.

    >>> a, b, c = (Layout.of({"I": (x,)}) for x in "XYZ")
    >>> opts = {(0, a): [(b, 1.0, None), (c, 2.0, None)], (1, b): [(a, 5.0, None)],
    ...         (1, c): [(a, 1.0, None)]}
    >>> [(p.final.format("T"), p.joint, p.alone)
    ...  for p in plan_chain(a, 2, lambda i, lay: opts[(i, lay)])]
    [('T[I_Z]', 3.0, 6.0)]
    """
    alone, here = 0.0, start
    greedy: list[Layout] = []
    for i in range(steps):
        first = options(i, here)
        if not first:
            return None
        here, t, _ = first[0]
        alone += t
        greedy.append(here)
    states: dict[Layout, tuple[float, tuple[tuple[Layout, Layout | None], ...]]] = {
        start: (0.0, ())
    }
    for i in range(steps):
        new: dict[Layout, tuple[float, tuple[tuple[Layout, Layout | None], ...]]] = {}
        for lay, (cost, path) in states.items():
            for final, t, hint in options(i, lay):
                v = cost + t
                if final not in new or v < new[final][0]:
                    new[final] = (v, (*path, (final, hint)))
        cheapest = sorted(new, key=lambda f: new[f][0])[:keep]
        if greedy[i] not in cheapest and greedy[i] in new:
            cheapest.append(greedy[i])
        states = {f: new[f] for f in cheapest}
    joint, path = min(states.values(), key=lambda s: s[0])
    if not joint < alone * (1 - 1e-9):
        return None
    return [JointPick(final, hint, joint, alone) for final, hint in path[:-1]]
