"""Search the ways to run one sharded contraction and rank them by cost.

Each mesh axis touching the einsum gets a role: shard one of its dims or stay unused. The roles
fix what each operand must be resharded to, what the local product yields (partial sums over
axes that shard a contracted dim) and what the result needs to reach its requested layout. The
four cases of the sharding chapter are all points of this space: Case 1 keeps every role, Case 2
gathers the operand (or slices the other and reduces, the sharding chapter's Question 4), Case 3
reduces or scatters the partial sums, Case 4 gathers one of the two operands.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from shardc.lang.layout import DimSharding, Layout
from shardc.passes.cost_model import Num
from shardc.passes.layout_cost import Pricing
from shardc.passes.reshard import Step, plan_reshard, reshard_floor


@dataclass(frozen=True, slots=True)
class EinsumPlan:
    roles: tuple[tuple[str, str | None], ...]
    lhs_target: Layout
    rhs_target: Layout
    local_out: Layout
    final: Layout
    lhs_steps: tuple[Step, ...]
    rhs_steps: tuple[Step, ...]
    out_steps: tuple[Step, ...]

    @property
    def collectives(self) -> list[tuple[str, Step]]:
        return [
            (side, s)
            for side, steps in (
                ("lhs", self.lhs_steps),
                ("rhs", self.rhs_steps),
                ("out", self.out_steps),
            )
            for s in steps
            if s.kind != "slice"
        ]


def output_dims(
    lhs: tuple[str, ...], rhs: tuple[str, ...], contract: tuple[str, ...]
) -> tuple[str, ...]:
    """Einsum convention: the left operand's kept dims, then the right's new ones."""
    return tuple(d for d in lhs if d not in contract) + tuple(
        d for d in rhs if d not in contract and d not in lhs
    )


Pricings = tuple[Pricing | None, Pricing | None, Pricing | None]
"""How the reshards of the left operand, the right one and the result are priced."""
Floors = tuple[float | None, float | None, float | None]
"""Lower bounds on the time of the three reshards (`reshard_floor`)."""
NO_PRICING: Pricings = (None, None, None)
Layouts = tuple[Layout, Layout, Layout, Layout]
"""A plan's layouts: the two operands' targets, the local result and the final one."""
Rank = tuple[Num, ...]
"""An objective's value for a plan (`rank_plans`: the lowest first)."""
Signature = tuple[tuple[str, str, tuple[str, ...], str | None], ...]
"""What a listing shows of a plan (`plan_signature`)."""

PLAN_SEARCH_LIMIT = 4096
"""Role assignments searched exhaustively; past it the search is local and says so."""


@dataclass(frozen=True, slots=True)
class _Space:
    """The roles each involved mesh axis may take, and how a choice of roles becomes a plan."""

    lhs: Layout
    rhs: Layout
    contract: tuple[str, ...]
    out_dims: tuple[str, ...]
    requested: Layout | None
    mesh_order: tuple[str, ...]
    divisible: Callable[[str, tuple[str, ...]], bool]
    keep_partial: bool
    sizes: Mapping[str, float] | None
    involved: tuple[str, ...]
    choices: tuple[tuple[str | None, ...], ...]
    pass_l: frozenset[str]
    pass_r: frozenset[str]
    pricings: Pricings
    idle: frozenset[str] = frozenset()
    """Mesh axes neither operand nor the request uses (`_idle_axes`): they may split the
    product, and leave an unrequested result as the other axes make it."""
    hint: Layout | None = None
    """The layout the contraction consuming an unrequested result would like it in (its
    other operand's axes on the dims they share): each axis it uses may also shard that dim,
    and the result keeps it (`passes.lower.chain`)."""
    extra: frozenset[tuple[str, str | None]] = frozenset()
    """The (axis, dim) roles beyond the book's cases (`_space`: any free dim of the product,
    under the exact model). A plan using one is kept in a ranking only where it wins, so the
    alternatives a decision lists stay the book's strategies where those win."""

    reorder: bool = False
    """Also try every order of the axes on a dim that several share (the exact model): the
    fixed order follows the request, then the left operand, so
    `[I, J_YX] ·_J [J_XY, K]` permuted the right operand where permuting the smaller left
    one costs less."""
    reordered: set[Layouts] = dataclasses.field(default_factory=set)
    """The (targets, local and final layouts) of plans found only by `reorder`."""
    loose: frozenset[tuple[str, str | None]] = frozenset()
    """The roles of `extra` that move an axis onto a free dim no operand holds it on (`_space`):
    their plans come after the others (ties keep their winner) and bound no refinement
    (`_refine_best`), so the alternatives a decision lists stay as without them."""

    def is_loose(self, p: EinsumPlan) -> bool:
        return bool(self.loose) and any(r in self.loose for r in p.roles)

    def widened(self, p: EinsumPlan) -> bool:
        """Whether `p` gives some axis a role beyond the book's cases (`extra`) or orders a
        dim's axes otherwise than the fixed order (`reorder`)."""
        return (bool(self.extra) and any(r in self.extra for r in p.roles)) or (
            bool(self.reordered)
            and (p.lhs_target, p.rhs_target, p.local_out, p.final) in self.reordered
        )

    def keep(self, ranked: list[EinsumPlan]) -> list[EinsumPlan]:
        """`ranked` without the widened plans unless one of them wins."""
        if not (self.extra or self.reordered) or not ranked or self.widened(ranked[0]):
            return ranked
        return [p for p in ranked if not self.widened(p)]

    def reorderings(self, combo: tuple[str | None, ...]) -> list[dict[str, tuple[str, ...]]]:
        """Other orders of the axes of each dim `combo` gives several (the fixed order's, by
        `order_key`, excluded): the orders the operands or the request hold it in."""
        if not self.reorder:
            return []
        shared: dict[str, list[str]] = {}
        for a, d in zip(self.involved, combo, strict=True):
            if d is not None:
                shared.setdefault(d, []).append(a)
        options = []
        for d, axes in shared.items():
            if len(axes) < 2:
                continue
            # Only the orders the operands and the request already hold the dim in: moving
            # the permute from one operand to the other is what a different order buys.
            held = {
                lay.axes_of(d)
                for lay in (self.lhs, self.rhs, self.requested)
                if lay is not None and d in lay.dim_names and sorted(lay.axes_of(d)) == sorted(axes)
            }
            axes.sort(key=functools.partial(self.order_key, d))
            first = tuple(axes)
            if held - {first}:  # `[J, K_XY]` is held, the request's `K_Y` orders Y first
                options.append([(d, first), *((d, o) for o in sorted(held) if o != first)])
        if not options:
            return []
        return [dict(pick) for pick in itertools.product(*options)][1:]

    @property
    def size(self) -> int:
        return math.prod(len(c) for c in self.choices)

    def order_key(self, d: str, a: str) -> tuple[int, int, int, int, int]:
        def pos(lay: Layout | None) -> int:
            if lay is None or d not in lay.dim_names:
                return 99
            axes = lay.axes_of(d)
            return axes.index(a) if a in axes else 99

        order = self.mesh_order
        return (
            pos(self.requested),
            pos(self.hint),
            pos(self.lhs),
            pos(self.rhs),
            order.index(a) if a in order else 99,
        )

    def plan(
        self,
        combo: tuple[str | None, ...],
        seen: set[Layouts],
        search: bool = True,
        reshards: dict[tuple[str | Layout, ...], list[Step] | None] | None = None,
        orders: Mapping[str, tuple[str, ...]] | None = None,
    ) -> EinsumPlan | None:
        """The plan for one role per involved axis; None if invalid or already in `seen`.
        Its reshards are the cheapest found (`plan_reshard`), or with `search=False` the fixed
        order's (`refine` searches later). `reshards` keeps them by target for the plans of
        one enumeration (with one `search`): many role assignments give an operand the same
        target."""
        all_dims = dict.fromkeys((*self.lhs.dim_names, *self.rhs.dim_names))
        assigned: dict[str, list[str]] = {d: [] for d in all_dims}
        for a, d in zip(self.involved, combo, strict=True):
            if d is not None:
                assigned[d].append(a)
        for d, axes in assigned.items():
            if len(axes) > 1:
                axes.sort(key=functools.partial(self.order_key, d))
                if orders and d in orders:
                    axes[:] = orders[d]
            if axes and not self.divisible(d, tuple(axes)):
                return None

        def layout_for(dims: tuple[str, ...], unreduced: frozenset[str]) -> Layout:
            return Layout(tuple(DimSharding(d, tuple(assigned[d])) for d in dims), unreduced)

        passthrough = self.pass_l | self.pass_r
        lhs_t = layout_for(self.lhs.dim_names, self.pass_l)
        rhs_t = layout_for(self.rhs.dim_names, self.pass_r)
        local_u = frozenset(a for k in self.contract for a in assigned[k]) | passthrough
        local_out = layout_for(self.out_dims, local_u)
        if self.requested is not None:
            final = self.requested
        else:
            final = Layout(
                tuple(
                    DimSharding(d.dim, tuple(a for a in d.axes if a not in self.idle))
                    for d in local_out.dims
                ),
                local_out.unreduced - self.idle if self.keep_partial else frozenset(),
            )
        key = (lhs_t, rhs_t, local_out, final)
        if key in seen:
            return None
        seen.add(key)
        pl, pr, po = self.pricings
        known = {} if reshards is None else reshards

        def reshard(
            key: tuple[str | Layout, ...], src: Layout, dst: Layout, pricing: Pricing | None
        ) -> list[Step] | None:
            if key not in known:
                known[key] = plan_reshard(src, dst, self.sizes, pricing, search)
            return known[key]

        ls = reshard(("lhs", lhs_t), self.lhs, lhs_t, pl)
        rs = reshard(("rhs", rhs_t), self.rhs, rhs_t, pr)
        os_ = reshard(("out", local_out, final), local_out, final, po)
        if ls is None or rs is None or os_ is None:
            return None
        return EinsumPlan(
            tuple(zip(self.involved, combo, strict=True)),
            lhs_t,
            rhs_t,
            local_out,
            final,
            tuple(ls),
            tuple(rs),
            tuple(os_),
        )

    def refine(self, p: EinsumPlan) -> EinsumPlan:
        """`p` with the cheapest reshards the search finds (the same roles and layouts)."""
        pl, pr, po = self.pricings
        steps = (
            plan_reshard(self.lhs, p.lhs_target, self.sizes, pl),
            plan_reshard(self.rhs, p.rhs_target, self.sizes, pr),
            plan_reshard(p.local_out, p.final, self.sizes, po),
        )
        assert all(s is not None for s in steps)  # the fixed order found them
        return dataclasses.replace(
            p,
            lhs_steps=tuple(steps[0] or ()),
            rhs_steps=tuple(steps[1] or ()),
            out_steps=tuple(steps[2] or ()),
        )

    def floors(self, p: EinsumPlan) -> Floors:
        """A lower bound on the time of each of `refine(p)`'s reshards (None: it keeps `p`'s)."""
        pl, pr, po = self.pricings
        return (
            reshard_floor(self.lhs, p.lhs_target, self.sizes, pl),
            reshard_floor(self.rhs, p.rhs_target, self.sizes, pr),
            reshard_floor(p.local_out, p.final, self.sizes, po),
        )


def _space(
    lhs: Layout,
    rhs: Layout,
    contract: tuple[str, ...],
    out_dims: tuple[str, ...],
    requested: Layout | None,
    mesh_order: tuple[str, ...],
    divisible: Callable[[str, tuple[str, ...]], bool],
    keep_partial: bool,
    sizes: Mapping[str, float] | None,
    pricings: Pricings = NO_PRICING,
    idle: bool = True,
    hint: Layout | None = None,
    wide: bool = False,
) -> _Space:
    # Partial sums of one operand pass through the product when the other does not touch them.
    pass_l = lhs.unreduced if not (lhs.unreduced & rhs.used_axes) else frozenset()
    pass_r = rhs.unreduced if not (rhs.unreduced & lhs.used_axes) else frozenset()
    passthrough = pass_l | pass_r
    involved: list[str] = []
    for a in (
        *lhs.sharding_axes,
        *rhs.sharding_axes,
        *lhs.unreduced,
        *rhs.unreduced,
        *(requested.sharding_axes if requested else ()),
        *(sorted(requested.unreduced) if requested else ()),
        *(hint.sharding_axes if hint else ()),
    ):
        if a not in involved and a not in passthrough:
            involved.append(a)
    involved.sort(key=lambda a: mesh_order.index(a) if a in mesh_order else len(mesh_order))
    choices: list[tuple[str | None, ...]] = []
    extra: frozenset[tuple[str, str | None]] = frozenset()
    loose: frozenset[tuple[str, str | None]] = frozenset()
    for a in involved:
        opts: list[str | None] = []
        for lay in (lhs, rhs, requested, hint):
            if lay is not None and (d := lay.dim_of_axis(a)) is not None and d not in opts:
                opts.append(d)
        wants_sum = requested is not None and a in requested.unreduced
        shards_contract = any(lay.dim_of_axis(a) in contract for lay in (lhs, rhs))
        if wants_sum or shards_contract:
            opts.extend(k for k in contract if k not in opts)
        opts.append(None)
        choices.append(tuple(opts))
    model = next((p.model for p in pricings if p is not None), "exact")
    if idle and wide and model == "exact" and requested is not None and requested.sharding_axes:
        # An axis may shard more dims of the product (after the roles above, so ties keep
        # their winner): `C[I, K_X] = A[I, J_X] ·_J B` AllToAlls A to `[I_X, J]`, multiplies
        # and AllToAlls the result, moving 1/X of what reducing C's partial sums moves. The
        # book's model keeps the roles the book's cases give, and so does a result left to the
        # planner or requested whole (the book's answers compare the strategies that leave
        # it so: its Question 4's two regions). A size left symbolic or bound by `--set`
        # gets them too (a report's regions and a compile at a point rank the same plans as
        # a compile declaring the size: the FSDP step's F-sharded plans at B = 8192), except
        # under `--objective statement`, whose regions stay the book's two strategies.
        # Each axis an operand holds may move within it (an AllToAll) to any of its dims, or
        # to a contracted dim of the product (partial sums reduced after).
        # An axis may also leave its operand's dim for a free dim of the other operand,
        # sliced there for free (`C[I_X, K] = A[I_YZ, J] ·_J B[J_X, K]` on 16 H100s moves
        # Y and Z onto B's K: A is resharded to `[I_X, J]`, B gathers J over X alone).
        free = [d for d in (*lhs.dim_names, *rhs.dim_names) if d not in contract]

        def more(a: str) -> tuple[str, ...]:
            held = [d for lay in (lhs, rhs) if a in lay.used_axes for d in lay.dim_names]
            return tuple(dict.fromkeys((*(d for d in held if d not in contract), *contract)))

        widened = [
            (*c, *(d for d in more(a) if d not in c))
            for a, c in zip(involved, choices, strict=True)
        ]
        loose = frozenset(
            (a, d) for a, w in zip(involved, widened, strict=True) for d in free if d not in w
        )
        widened = [
            (*w, *(d for d in free if d not in w)) for a, w in zip(involved, widened, strict=True)
        ]
        extra = frozenset(
            (a, d) for a, c, w in zip(involved, choices, widened, strict=True) for d in w[len(c) :]
        )
        choices = widened
    unused = (
        _idle_axes(mesh_order, {*involved, *passthrough}, sizes)
        if idle and model == "exact"
        else []
    )
    if sizes is not None and not (idle and model == "exact"):
        # Nor do the reshards slice an idle axis onto a dim they gather (`passes.reshard`):
        # the book's model and `idle_axes=False` leave idle axes idle.
        sizes = {
            k: v
            for k, v in sizes.items()
            if k not in mesh_order or k in involved or k in passthrough
        }
    if unused:
        # No role first: the plans without them keep their order (and ties their winner).
        every = tuple(
            d for d in dict.fromkeys((*lhs.dim_names, *rhs.dim_names)) if d not in contract
        )
        involved += unused
        choices += [(None, *every)] * len(unused)
        order = sorted(range(len(involved)), key=lambda i: mesh_order.index(involved[i]))
        involved, choices = [involved[i] for i in order], [choices[i] for i in order]
    return _Space(
        lhs,
        rhs,
        contract,
        out_dims,
        requested,
        mesh_order,
        divisible,
        keep_partial,
        sizes,
        tuple(involved),
        tuple(choices),
        pass_l,
        pass_r,
        pricings,
        frozenset(unused),
        hint,
        extra,
        idle and wide and model == "exact",
        loose=loose,
    )


def _idle_axes(
    mesh_order: tuple[str, ...], used: set[str], sizes: Mapping[str, float] | None
) -> list[str]:
    """The mesh axes of known size above 1 that the contraction does not use. Under the exact
    cost model (the book's model leaves them idle, as its answers do) each may shard a dim of
    the product, as XLA's partitioner does: an operand that holds the dim whole slices
    its block for free before the product, so each device computes 1/n of it, and the result
    is gathered (or its partial sums reduced) after, where that costs less than the FLOPs it
    saves (or, XLA's way to `C[K, I] = A[I, J_Y] ·_J B[J, K_Y]` on a 4x4 mesh, moves fewer
    bytes).

    >>> (_idle_axes(("X", "Y", "Z"), {"X"}, {"X": 2, "Y": 4, "Z": 1}),
    ...  _idle_axes(("X",), set(), None))
    (['Y'], [])
    """
    if not sizes:
        return []
    return [a for a in mesh_order if a not in used and (sizes.get(a) or 1) > 1]


def enumerate_plans(
    lhs: Layout,
    rhs: Layout,
    contract: tuple[str, ...],
    out_dims: tuple[str, ...],
    requested: Layout | None,
    mesh_order: tuple[str, ...],
    divisible: Callable[[str, tuple[str, ...]], bool],
    keep_partial: bool = False,
    sizes: Mapping[str, float] | None = None,
    *,
    pricings: Pricings = NO_PRICING,
    search: bool = True,
    idle: bool = True,
    hint: Layout | None = None,
) -> list[EinsumPlan]:
    """Every valid plan (deduplicated), in a stable order that lists keeping roles first.

    Exponential in the involved axes: `search_plans` calls it only below PLAN_SEARCH_LIMIT.
    """
    return _enumerate(
        _space(
            lhs,
            rhs,
            contract,
            out_dims,
            requested,
            mesh_order,
            divisible,
            keep_partial,
            sizes,
            pricings,
            idle,
            hint,
        ),
        search,
    )


def _enumerate(space: _Space, search: bool) -> list[EinsumPlan]:
    seen: set[Layouts] = set()
    reshards: dict[tuple[str | Layout, ...], list[Step] | None] = {}
    out: list[EinsumPlan] = []
    combos: Iterable[tuple[str | None, ...]] = itertools.product(*space.choices)
    if space.loose:  # the loose roles' plans after the others (`_Space.loose`)
        combos = sorted(combos, key=lambda c: any(r in space.loose for r in _roles(space, c)))
    for combo in combos:
        p = space.plan(combo, seen, search, reshards)
        if p is not None:
            out.append(p)
        for orders in space.reorderings(combo):
            q = space.plan(combo, seen, search, reshards, orders)
            if q is not None:
                space.reordered.add((q.lhs_target, q.rhs_target, q.local_out, q.final))
                out.append(q)
    return out


def _roles(space: _Space, combo: tuple[str | None, ...]) -> Iterable[tuple[str, str | None]]:
    return zip(space.involved, combo, strict=True)


@dataclass(frozen=True, slots=True)
class PlanSearch:
    """The ranked plans of one contraction, and how they were found."""

    ranked: list[EinsumPlan]
    space: int  # role assignments in all
    tried: int  # role assignments evaluated
    capped: bool  # True: too many to try all; a local search from the current layouts
    plans: tuple[EinsumPlan, ...] = ()  # every plan met, in enumeration order (ties' order)
    widened: tuple[bool, ...] = ()
    """By `plans`: whether each gives an axis a role beyond the book's cases (`_Space.widened`)."""
    every: tuple[EinsumPlan, ...] = ()
    """Every plan ranked, the widened ones kept (`ranked` drops them where one does not win):
    the whole-program search's options (`passes.objective`)."""

    def note(self) -> str:
        """What the decision record says about the search ("" when it was exhaustive)."""
        if not self.capped:
            return ""
        return (
            f"search capped: {self.tried:,} of {self.space:,} role assignments tried "
            f"(local search from the current layouts and from gathering everything; "
            f"exhaustive up to {PLAN_SEARCH_LIMIT:,})"
        )


def search_plans(
    lhs: Layout,
    rhs: Layout,
    contract: tuple[str, ...],
    out_dims: tuple[str, ...],
    requested: Layout | None,
    mesh_order: tuple[str, ...],
    divisible: Callable[[str, tuple[str, ...]], bool],
    keep_partial: bool,
    sizes: Mapping[str, float] | None,
    objective: Callable[[EinsumPlan], Rank],
    limit: int = PLAN_SEARCH_LIMIT,
    *,
    pricings: Pricings = NO_PRICING,
    floor: Callable[[EinsumPlan, Floors], Rank] | None = None,
    idle: bool = True,
    hint: Layout | None = None,
    wide: bool = False,
) -> PlanSearch:
    """The plans ranked by `objective`: all of them when there are at most `limit` role
    assignments, otherwise the best found by changing one axis's role at a time (evaluating at
    most PLAN_SEARCH_LIMIT assignments). `pricings` price the reshards of the left operand,
    the right one and the result (`plan_reshard`).

    With `floor` (a lower bound on the objective of a plan whose reshards cost at least the
    given floors, or their own time where None), the reshards are searched only for the plans
    that may rank among the first `KEPT` distinct ones (`_refine_best`); the others keep the
    fixed order's. `hint` (only where nothing is requested) widens the roles toward the layout
    the result's consumer wants (`_Space.hint`)."""
    space = _space(
        lhs,
        rhs,
        contract,
        out_dims,
        requested,
        mesh_order,
        divisible,
        keep_partial,
        sizes,
        pricings,
        idle,
        hint,
        wide,
    )
    total = space.size
    if total <= limit:
        plans = _enumerate(space, floor is None)
        if floor is not None:
            plans = _refine_best(space, plans, objective, floor)
        every = rank_plans(plans, objective)
        return PlanSearch(
            space.keep(every),
            total,
            total,
            False,
            tuple(plans),
            tuple(space.widened(p) for p in plans),
            tuple(every),
        )
    plans, tried = _local_search(space, objective, PLAN_SEARCH_LIMIT)
    every = rank_plans(plans, objective)
    return PlanSearch(
        space.keep(every),
        total,
        tried,
        True,
        tuple(plans),
        tuple(space.widened(p) for p in plans),
        tuple(every),
    )


KEPT = 3
"""Distinct plans the decision record lists: `_refine_best` settles these exactly."""


def _refine_best(
    space: _Space,
    plans: list[EinsumPlan],
    objective: Callable[[EinsumPlan], Rank],
    floor: Callable[[EinsumPlan, Floors], Rank],
) -> list[EinsumPlan]:
    """Branch and bound over the plans (with the fixed order's reshards), cheapest first:
    refine a plan (search its reshards) unless `KEPT` distinct refined plans already rank below
    a lower bound on its refined objective: its objective with no communication, then with each
    reshard at its floor. A plan left unrefined cannot rank among the first `KEPT`; it keeps
    the fixed order's reshards (a valid plan, never cheaper than refined)."""
    out = list(plans)
    best: dict[Signature, Rank] = {}  # signature -> the lowest objective of a refined plan
    free: Floors = (0.0, 0.0, 0.0)
    for i in sorted(range(len(plans)), key=lambda i: (objective(plans[i]), i)):
        p = plans[i]
        kept = sorted(best.values())[:KEPT]
        if len(kept) == KEPT and (
            floor(p, free) > kept[-1] or floor(p, space.floors(p)) > kept[-1]
        ):
            continue
        out[i] = refined = space.refine(p)
        if not space.is_loose(p):
            sig, value = plan_signature(refined), objective(refined)
            best[sig] = min(best.get(sig, value), value)
    return out


def plan_signature(p: EinsumPlan) -> Signature:
    """What `describe_plan` shows of a plan (each step's kind, axes and dim; a slice's dim is not
    shown): plans with the same signature read the same and are listed once."""
    return tuple(
        (side, s.kind, s.axes, None if s.kind == "slice" else s.dim)
        for side, steps in (("lhs", p.lhs_steps), ("rhs", p.rhs_steps), ("out", p.out_steps))
        for s in steps
    )


def _local_search(
    space: _Space, objective: Callable[[EinsumPlan], Rank], limit: int
) -> tuple[list[EinsumPlan], int]:
    """Coordinate descent over the roles from two seeds (keep every role; gather everything):
    take the first single-axis change that improves the objective until none does, or until
    `limit` assignments have been evaluated. Returns the valid plans met and the count tried."""
    seen: set[Layouts] = set()
    found: dict[tuple[str | None, ...], tuple[EinsumPlan | None, Rank | None]] = {}
    plans: list[EinsumPlan] = []

    def score(combo: tuple[str | None, ...]) -> Rank | None:
        if combo not in found:
            p = space.plan(combo, seen)
            found[combo] = (p, objective(p) if p is not None else None)
            if p is not None:
                plans.append(p)
        return found[combo][1]

    seeds = [tuple(c[0] for c in space.choices), tuple(c[-1] for c in space.choices)]
    for current in seeds:
        best = score(current)
        improved = True
        while improved and len(found) < limit:
            improved = False
            for i, opts in enumerate(space.choices):
                for d in opts:
                    if d == current[i] or len(found) >= limit:
                        continue
                    cand = (*current[:i], d, *current[i + 1 :])
                    s = score(cand)
                    if s is not None and (best is None or s < best):
                        current, best, improved = cand, s, True
    return plans, len(found)


def rank_plans(
    plans: list[EinsumPlan], objective: Callable[[EinsumPlan], tuple[Num, ...]]
) -> list[EinsumPlan]:
    """Sort by the objective; ties keep enumeration order (current layouts first)."""
    return [
        p
        for _, _, p in sorted(
            ((objective(p), i, p) for i, p in enumerate(plans)), key=lambda t: (t[0], t[1])
        )
    ]


CaseKind = Literal[
    "same-contracted",
    "one-contracted",
    "both-contracted",
    "both-free",
    "same-free",
    "one-free",
    "unused",
]


@dataclass(frozen=True, slots=True)
class AxisCase:
    """Which of the sharding chapter's four cases one mesh axis puts a contraction in, with the
    facts behind it.

    `kind` is the finer fact: "same-contracted" (Case 3: both operands shard the same contracted
    dim), "one-contracted" (Case 2: a contracted dim of one operand), "both-contracted" (Case 2
    twice: different contracted dims), "both-free" (Case 4: different free dims of both),
    "same-free" (a batch dim sharded alike), "one-free" (Case 1: a free dim of one operand) and
    "unused" (neither operand uses the axis to shard).
    """

    axis: str
    kind: CaseKind
    lhs_dim: str | None
    rhs_dim: str | None
    contracted_side: str | None = None  # "one-contracted": "lhs"/"rhs", whose dim it is

    @property
    def case(self) -> int:
        """The book's case number: 2 for a contracted dim of one side, 3 for both, 4 for free
        dims of both, 1 otherwise (batch dims sharded alike are kept, as in Case 1)."""
        return {
            "same-contracted": 3,
            "one-contracted": 2,
            "both-contracted": 2,
            "both-free": 4,
        }.get(self.kind, 1)

    @property
    def contracted_dim(self) -> str | None:
        """The contracted dim the axis shards (the left operand's when both shard one)."""
        if self.kind in ("same-contracted", "both-contracted"):
            return self.lhs_dim
        return {"lhs": self.lhs_dim, "rhs": self.rhs_dim}.get(self.contracted_side or "")


def classify_axis(axis: str, lhs: Layout, rhs: Layout, contract: tuple[str, ...]) -> AxisCase:
    """The case `axis` puts the contraction `lhs ·_contract rhs` in (the sharding chapter, the four
    cases).

    >>> l = Layout.of({"I": ("X",), "J": ("Y",)}); r = Layout.of({"J": ("Y",), "K": ("X",)})
    >>> [(c.kind, c.case) for c in (classify_axis(a, l, r, ("J",)) for a in "XY")]
    [('both-free', 4), ('same-contracted', 3)]
    """
    dl, dr = lhs.dim_of_axis(axis), rhs.dim_of_axis(axis)
    kl, kr = dl is not None and dl in contract, dr is not None and dr in contract
    kind: CaseKind
    if dl is None and dr is None:
        kind = "unused"
    elif dl == dr:
        kind = "same-contracted" if kl else "same-free"
    elif kl and kr:
        kind = "both-contracted"
    elif kl or kr:
        return AxisCase(axis, "one-contracted", dl, dr, "lhs" if kl else "rhs")
    elif dl is not None and dr is not None:
        kind = "both-free"
    else:
        kind = "one-free"
    return AxisCase(axis, kind, dl, dr)


def case_label(lhs: Layout, rhs: Layout, contract: tuple[str, ...]) -> str:
    """`Case 1`, `Case 2+3`, ...: the cases the operands' sharding axes put the product in.

    >>> case_label(Layout.of({"I": ("X",), "J": ()}), Layout.of({"J": (), "K": ()}), ("J",))
    'Case 1'
    """
    cases = {
        classify_axis(a, lhs, rhs, contract).case for a in lhs.sharding_axes + rhs.sharding_axes
    }
    return "Case " + "+".join(str(c) for c in sorted(cases or {1}))


def book_roles(c: AxisCase) -> set[str | None] | None:
    """The roles the sharding chapter's rule gives an axis in case `c` (None: the axis is free to
    take any).

    Case 1 (a free dim of one operand): keep it. Case 2 (a contracted dim of one operand):
    gather that operand, keeping whatever the other operand shards with the axis. Case 3 (the
    same contracted dim in both): keep it, reduce after. Case 4 (free dims of both): keep one
    of the two. Batch dims sharded alike: keep. Different contracted dims: gather both.
    """
    match c.kind:
        case "unused":
            return None  # only the requested output uses it: any role follows the request
        case "same-contracted" | "same-free":
            return {c.lhs_dim}
        case "both-contracted":
            return {None}
        case "one-contracted":
            return {c.rhs_dim if c.contracted_side == "lhs" else c.lhs_dim}
        case _:
            return {d for d in (c.lhs_dim, c.rhs_dim) if d is not None}


def book_departures(
    plan: EinsumPlan,
    lhs: Layout,
    rhs: Layout,
    contract: tuple[str, ...],
    requested: Layout | None = None,
) -> int:
    """How many mesh axes the plan treats differently from the sharding chapter's rule for their
    case (`book_roles`). Used to pick the default when sizes are symbolic and the numbers cannot
    decide.

    Where the rule gathers an axis (no role) and the requested result shards a dim with it,
    sharding that dim is the rule too: the result is sliced over the axis either way, and
    slicing the operands before the product (free, as XLA's partitioner does) instead of the
    result after it leaves each device 1/n of the FLOPs; the cost at typical sizes, then the
    FLOPs, rank the two."""
    n = 0
    for a, role in plan.roles:
        ok = book_roles(classify_axis(a, lhs, rhs, contract))
        if ok is not None:
            if requested is not None and None in ok:
                ok = ok | {requested.dim_of_axis(a)}
            n += role not in ok
    return n
