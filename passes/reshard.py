"""Plan the collectives that take an array from one layout to another.

Rules (the sharding chapter; `passes.reshard_rules`, re-exported here): AllGather removes a
subscript, AllToAll moves one to another dim, ReduceScatter turns partial sums into a sharding,
AllReduce removes partial sums, adding a subscript to a replicated dim is a free local slice, and
a CollectivePermute changes only which device holds which block. Axes of a dim are major first,
so only the trailing (minor) axes of a dim can be gathered or moved without touching other
devices' blocks.

The book's fixed order (`plan_in_order`, below) needs no sizes: free slices, ReduceScatters,
AllToAlls, AllReduces, then AllGathers (a layout change that reorders axes gathers the trailing
run and slices again). With every mesh axis of the two layouts sized, `plan_reshard` returns
instead the cheapest sequence an A* search over intermediate layouts finds
(`passes.reshard_search`), each step priced by the cost model, unless the fixed order is one
collective straight into the target (`_final`). Where an axis is symbolic the fixed order stays:
the plan must hold at every size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from shardc.lang.layout import DimSharding, Layout
from shardc.passes.layout_cost import Pricing
from shardc.passes.memo import RESHARD_FLOOR, RESHARD_IN_ORDER, RESHARD_PLAN, memoized
from shardc.passes.reshard_rules import Refusal, Step, transfer
from shardc.passes.reshard_search import cheapest_plan, lower_bound

__all__ = ["Refusal", "Step", "plan_in_order", "plan_reshard", "reshard_floor", "transfer"]

BYTES = Pricing("f32", ())
"""The pricing of a caller that gives sizes but no machine: bytes over W, topology-free."""


def plan_reshard(
    src: Layout,
    dst: Layout,
    sizes: Mapping[str, float] | None = None,
    pricing: Pricing | None = None,
    search: bool = True,
) -> list[Step] | None:
    """Steps from `src` to `dst` (same dims, any order), or None when impossible.

    Impossible means `dst` holds partial sums that `src` does not: no collective creates them.
    When `sizes` gives every mesh axis the two layouts use, the plan is the cheapest under
    `pricing` (default: bytes over W) that the search finds, never dearer than the fixed order
    (ties keep it); otherwise, or with `search=False`, it is the fixed order, which needs no
    sizes. Only the sizes of those axes and the pricing matter; each distinct question is
    answered once per process (`passes.memo`).

    >>> s = Layout.of({"I": ("X",), "J": ()}); d = Layout.of({"I": (), "J": ("X",)})
    >>> [(st.kind, st.axes, st.dim) for st in plan_reshard(s, d)]
    [('AllToAll', ('X',), 'J')]
    >>> s = Layout.of({"K": ("X",), "J": ("Y",)}); d = Layout.of({"K": (), "J": ("X", "Y")})
    >>> [(st.kind, st.axes) for st in plan_reshard(s, d)]  # symbolic sizes: the fixed order
    [('AllGather', ('X', 'Y')), ('slice', ('X', 'Y'))]
    >>> [(st.kind, st.axes, st.dst.format("A")) for st in plan_reshard(s, d, {"X": 4, "Y": 4})]
    [('AllToAll', ('X',), 'A[K, J_YX]'), ('CollectivePermute', ('Y', 'X'), 'A[K, J_XY]')]
    """
    steps = (
        _planned(src, dst, _axes(src, dst, sizes, pricing), pricing or BYTES)
        if search
        else _in_order(src, dst, _axes(src, dst, sizes))
    )
    return None if steps is None else list(steps)


AxisSizes = tuple[tuple[str, float | None], ...]
"""A memo key's part of the sizes: (axis, its size or None where symbolic), by name."""


def reshard_floor(
    src: Layout,
    dst: Layout,
    sizes: Mapping[str, float] | None = None,
    pricing: Pricing | None = None,
) -> float | None:
    """A lower bound on the time of `plan_reshard`'s plan under `pricing`, cheaper to find
    than the plan (`passes.reshard_search.lower_bound`); None where that plan is the fixed
    order's (a symbolic axis, a plan the search cannot beat) or there is none.

    >>> s, d = Layout.of({"I": ("X", "Y")}), Layout.of({"I": ("Y",)})
    >>> sizes = {"X": 2, "Y": 2}
    >>> reshard_floor(s, d, sizes) <= Pricing("f32", ()).time(plan_reshard(s, d, sizes), sizes)
    True
    >>> reshard_floor(s, Layout.of({"I": ("X",)}), sizes) is None  # one AllGather: final
    True
    """
    return _floor(src, dst, _axes(src, dst, sizes, pricing), pricing or BYTES)


def _axes(
    src: Layout, dst: Layout, sizes: Mapping[str, float] | None, pricing: Pricing | None = None
) -> AxisSizes | None:
    """The memo key's part of `sizes`: the sizes of the axes the two layouts use, and of the
    mesh axes (`pricing`'s topology) of more than one device they leave idle, where the plan
    gathers (the search may slice one onto the gathered dim and gather over both)."""
    if not sizes:
        return None
    used = {*src.sharding_axes, *dst.sharding_axes, *src.unreduced}
    idle: set[str] = set()
    if (
        pricing is not None
        and pricing.topology is not None
        and (
            not set(src.sharding_axes) <= set(dst.sharding_axes)  # something to gather
            or pricing.model == "exact"
            and src.dims != dst.dims
        )
    ):  # or to move
        idle = {
            x.axis
            for x in pricing.topology.links
            if x.axis not in used and x.axis not in dst.unreduced and (sizes.get(x.axis) or 1) > 1
        }
    return tuple((a, sizes.get(a)) for a in sorted(used | idle))


def _used(src: Layout, dst: Layout, axes: AxisSizes | None) -> AxisSizes | None:
    """`axes` without the idle ones (`_axes`): the fixed order does not use them."""
    if axes is None:
        return None
    used = {*src.sharding_axes, *dst.sharding_axes, *src.unreduced}
    return tuple((a, n) for a, n in axes if a in used)


def _idle(src: Layout, dst: Layout, axes: AxisSizes | None) -> bool:
    return axes is not None and len(_used(src, dst, axes) or ()) < len(axes)


def _known(axes: AxisSizes | None) -> dict[str, float] | None:
    """Every size in `axes`, or None when one is symbolic."""
    if axes is None or any(n is None for _, n in axes):
        return None
    return {a: n for a, n in axes if n is not None}


@memoized(RESHARD_IN_ORDER, lambda src, dst, axes: (src, dst, axes))
def _in_order(src: Layout, dst: Layout, axes: AxisSizes | None) -> tuple[Step, ...] | None:
    sizes = None if axes is None else {a: n for a, n in axes if n is not None}
    steps = plan_in_order(src, dst, sizes or None)
    return None if steps is None else tuple(steps)


def _splits(steps: tuple[Step, ...], pricing: Pricing) -> bool:
    """Whether a step is a collective (but a permute) over several axes of a switched level
    under the exact model: rings over each axis in turn may cost less (`reshard_search`;
    `[I_XY, J] -> [I, J_XY]` on an h100 2x4: AllToAll_Y, AllToAll_X and a permute, 5.0 us,
    where AllToAll_XY pays 7 latency steps, 7.0 us)."""
    if pricing.model != "exact" or pricing.topology is None:
        return False
    switched = {x.axis for x in pricing.topology.links if x.level != "ici"}
    return any(
        s.kind != "CollectivePermute" and len(s.axes) > 1 and switched.issuperset(s.axes)
        for s in steps
    )


def _final(steps: tuple[Step, ...], idle: bool = False) -> bool:
    """A fixed-order plan kept without a search: free slices, then at most one collective that
    lands on the target. Any other plan also needs a collective over those axes (to remove,
    move or reduce them) and only adds steps; on the LLaMA 3 plan's 5,400 reshards the search
    never beat one."""
    kinds = [s.kind for s in steps]
    while kinds and kinds[0] == "slice":
        kinds.pop(0)
    if idle and ("AllGather" in kinds or "AllToAll" in kinds):
        # an idle axis may join the gather (`_axes`), or, sliced on, make an AllToAll a
        # permute and a gather over both axes' links (`reshard_search`)
        return False
    return len(kinds) <= 1


@memoized(RESHARD_PLAN, lambda src, dst, axes, pricing: (src, dst, axes, pricing))
def _planned(
    src: Layout, dst: Layout, axes: AxisSizes | None, pricing: Pricing
) -> tuple[Step, ...] | None:
    steps = _in_order(src, dst, _used(src, dst, axes))
    sizes = _known(axes)
    if (
        steps is None
        or sizes is None
        or (_final(steps, _idle(src, dst, axes)) and not _splits(steps, pricing))
    ):
        return steps
    return tuple(cheapest_plan(src, dst, sizes, pricing, steps))


@memoized(RESHARD_FLOOR, lambda src, dst, axes, pricing: (src, dst, axes, pricing))
def _floor(src: Layout, dst: Layout, axes: AxisSizes | None, pricing: Pricing) -> float | None:
    steps = _in_order(src, dst, _used(src, dst, axes))
    sizes = _known(axes)
    if (
        steps is None
        or sizes is None
        or (_final(steps, _idle(src, dst, axes)) and not _splits(steps, pricing))
    ):
        return None
    return lower_bound(src, dst, sizes, pricing, steps)


def _layout(cur: dict[str, list[str]], order: tuple[str, ...], unreduced: set[str]) -> Layout:
    return Layout(tuple(DimSharding(d, tuple(cur[d])) for d in order), frozenset(unreduced))


def _prefix_of(cur: list[str], target: list[str]) -> bool:
    """True when `cur` is a prefix of `target`: the dim only has axes left to acquire."""
    return len(cur) <= len(target) and target[: len(cur)] == cur


def _kept(cur: list[str], target: list[str]) -> int:
    """Length of the common prefix: the axes of a dim that stay where they are."""
    k = 0
    while k < min(len(cur), len(target)) and cur[k] == target[k]:
        k += 1
    return k


def _permute(src: Layout, dst: Layout, sizes: Mapping[str, float] | None) -> Step | None:
    """One CollectivePermute when only the assignment of blocks to devices changes.

    That is when the same axes shard the array and every dim keeps its number of shards:
    `I_XY -> I_YX`, or `[I_X, J_Y] -> [I_Y, J_X]` with |X| = |Y|.
    """
    if src.unreduced != dst.unreduced or sorted(src.sharding_axes) != sorted(dst.sharding_axes):
        return None
    same_sets = all(set(src.axes_of(d)) == set(dst.axes_of(d)) for d in dst.dim_names)
    if not same_sets:
        if sizes is None or not all(a in sizes for a in src.sharding_axes):
            return None
        for d in dst.dim_names:
            if math.prod(sizes[a] for a in src.axes_of(d)) != math.prod(
                sizes[a] for a in dst.axes_of(d)
            ):
                return None
    # A block's new owner can differ in every axis of a dim whose tuple changes (L_XYZ ->
    # L_ZY moves data across Y too, though Y keeps its place), so the group is all of them.
    changed = {d for d in dst.dim_names if src.axes_of(d) != dst.axes_of(d)}
    moved = tuple(
        a
        for a in src.sharding_axes
        if src.dim_of_axis(a) in changed or dst.dim_of_axis(a) in changed
    )
    return Step("CollectivePermute", moved, None, src, dst) if moved else None


def _size_one_relabel(src: Layout, dst: Layout, sizes: Mapping[str, float] | None) -> Step | None:
    """A free local slice when `src` and `dst` differ only in where axes of size 1 sit.

    An axis of size 1 splits nothing, so moving it between dims moves no data
    (`[I_X, J] -> [I, J_X]` with X=1): every device already holds the whole target block.
    """
    if not sizes or src.unreduced != dst.unreduced:
        return None
    ones = {a for a in (*src.sharding_axes, *dst.sharding_axes) if sizes.get(a) == 1}
    if not ones:
        return None

    def without(lay: Layout) -> Layout:
        return Layout(
            tuple(DimSharding(d.dim, tuple(a for a in d.axes if a not in ones)) for d in lay.dims),
            lay.unreduced,
        )

    if without(src) != without(dst.reordered(src.dim_names)):
        return None
    moved = tuple(
        a
        for a in (*src.sharding_axes, *dst.sharding_axes)
        if a in ones and src.dim_of_axis(a) != dst.dim_of_axis(a)
    )
    return Step("slice", tuple(dict.fromkeys(moved)), None, src, dst) if moved else None


def plan_in_order(
    src: Layout, dst: Layout, sizes: Mapping[str, float] | None = None
) -> list[Step] | None:
    """The book's fixed order (the module's docstring), or None when impossible: the plan where
    sizes are symbolic, and the bound the search must beat where they are known.

    >>> s, d = Layout.of({"I": ("X", "Y")}), Layout.of({"I": ("Y",)})
    >>> [(st.kind, st.axes) for st in plan_in_order(s, d)]
    [('AllGather', ('X', 'Y')), ('slice', ('Y',))]
    """
    order = dst.dim_names
    cur = {d.dim: list(d.axes) for d in src.dims}
    target = {d.dim: list(d.axes) for d in dst.dims}
    if set(cur) != set(target):
        return None
    cur_u = set(src.unreduced)
    t_u = set(dst.unreduced)
    if not t_u <= cur_u:
        return None
    relabel = _size_one_relabel(src, dst, sizes)
    if relabel is not None:
        return [relabel]
    permute = _permute(src, dst.reordered(src.dim_names), sizes)
    if permute is not None:
        return [Step("CollectivePermute", permute.axes, None, src, dst)]
    target_dim = {a: d for d, axes in target.items() for a in axes}
    steps: list[Step] = []

    def prefix_ok(d: str) -> bool:
        return _prefix_of(cur[d], target[d])

    def next_acq(d: str) -> str | None:
        return target[d][len(cur[d])] if prefix_ok(d) and len(cur[d]) < len(target[d]) else None

    def in_use(a: str) -> bool:
        return a in cur_u or any(a in axes for axes in cur.values())

    def emit(kind: str, axes: tuple[str, ...], dim: str | None, before: Layout) -> None:
        # A slice is already applied to `cur`; a collective's effect is `transfer`'s rule.
        after = _layout(cur, order, cur_u) if kind == "slice" else transfer(before, kind, axes, dim)
        assert isinstance(after, Layout), after
        for d in after.dims:
            cur[d.dim][:] = d.axes
        cur_u.clear()
        cur_u.update(after.unreduced)
        steps.append(Step(kind, axes, dim, before, after))

    for _ in range(64):
        if all(cur[d] == target[d] for d in order) and cur_u == t_u:
            return steps
        before = _layout(cur, order, cur_u)
        # 1. Free local slices: shrink first so every later collective moves fewer bytes.
        sliced: list[str] = []
        for d in order:
            while (a := next_acq(d)) is not None and not in_use(a):
                cur[d].append(a)
                sliced.append(a)
        if sliced:
            emit("slice", tuple(sliced), None, before)
            continue
        # 2. ReduceScatter partial sums straight into the dim that wants the axis.
        done = False
        for d in order:
            run: list[str] = []
            if prefix_ok(d):
                for a in target[d][len(cur[d]) :]:
                    if a not in cur_u or a in t_u:
                        break
                    run.append(a)
            if run:
                emit("ReduceScatter", tuple(run), d, before)
                done = True
                break
        if done:
            continue
        # 3. AllToAll: move the trailing axes of one dim to the dim that wants them next, in order.
        for d1 in order:
            if prefix_ok(d1) or not cur[d1]:
                continue
            d2 = target_dim.get(cur[d1][-1])
            if d2 is None or d2 == d1 or not prefix_ok(d2):
                continue
            want = target[d2][len(cur[d2]) :]
            tail = 0
            for k in range(1, len(cur[d1]) + 1):
                if cur[d1][-k:] == want[:k] and k <= len(cur[d1]) - _kept(cur[d1], target[d1]):
                    tail = k
            if tail:
                moved = cur[d1][-tail:]
                emit("AllToAll", tuple(moved), d2, before)
                done = True
                break
        if done:
            continue
        # 4. AllReduce partial sums no dim wants.
        reduce = sorted(a for a in cur_u - t_u if a not in target_dim)
        if reduce:
            emit("AllReduce", tuple(reduce), None, before)
            continue
        # 5. AllGather: the trailing run of each dim whose axes go nowhere; failing that, every
        #    axis past the part each dim keeps (it is sliced back where it belongs afterwards).
        gather: list[str] = []
        for d in order:
            kept = list(cur[d])
            while kept and not _prefix_of(kept, target[d]) and kept[-1] not in target_dim:
                gather.append(kept.pop())
        if not gather:
            for d in order:
                kept = list(cur[d])
                while kept and not _prefix_of(kept, target[d]):
                    gather.append(kept.pop())
        rank = {a: i for i, a in enumerate(src.sharding_axes)}
        gather.sort(key=lambda a: rank.get(a, len(rank)))
        if not gather:
            # Partial sums wanted by a dim that still has axes to release: reduce now, slice later.
            pending = sorted(cur_u - t_u)
            if pending:
                emit("AllReduce", tuple(pending), None, before)
                continue
            return None
        emit("AllGather", tuple(gather), None, before)
    raise AssertionError(f"reshard planner did not converge: {src} -> {dst}")
