"""The cheapest reshard: an A* search over intermediate layouts, each edge one step priced by the
cost model, bounded by the fixed-order plan, which it returns unless it finds a strictly cheaper
one.

The moves (the sharding chapter's rules, `passes.reshard_rules`), restricted to the mesh axes the
two layouts use and the dims either shards, and pruned where a move cannot help:
- a free local slice of an axis the target shards, onto the dim the target gives it, or onto
  another dim that stays no finer than the target shards it (then a permute gives the axis its
  place: `[I_X, K] -> [I_X, K_YZ] -> [I_Z, K_YX]`, as XLA's partitioner reshards);
- a free local slice of a mesh axis neither layout uses onto a dim that still has axes to
  gather (then one AllGather over both uses the links of both: `[J, K_X] -> [J, K_XY] -> [J, K]`
  on a 4x2 mesh costs V (7/8) / 2w where AllGather_X alone costs V (3/4) / w);
- AllGather of the innermost axes of any dims, past the prefix a dim shares with the target
  (gathering more than needed and slicing again is one of these);
- AllToAll of a dim's innermost axes to a dim the target gives one of them;
- ReduceScatter of partial sums onto the dim the target gives them (with partial sums the
  target shards nowhere, gathered after); AllReduce of any of them;
- CollectivePermute to a layout with the same number of shards in every dim (the same block
  shape: only which device holds which block changes) that is the target, or one step from it:
  the target with extra innermost axes (then gathered), with an innermost run moved to another
  dim (then an AllToAll), or without an innermost run of partial sums (then a ReduceScatter).
  A permute may follow or precede any other move, so slice-permute-gather and AllToAll-permute
  are paths of the search. Under the exact model a permute may also go straight to the target
  where its blocks are finer (each lies in one block of the layout it leaves): each device
  slices its block where it holds it, or receives it in one send (`passes.permute_cost`), or
  to a layout one AllToAll from the target in finer blocks (`[I_Z, K] -> [I_YX, K_Z] ->
  [I_Y, K_ZX]`: two latency hops where AllToAll_Z over four devices takes three).
An AllGather, an AllReduce or a CollectivePermute does not follow one of its kind on ICI: one
step over the union of their axes costs no more (a collective over more axes has more links).
On a switched level (NVLink, InfiniBand, ...) under the exact model an AllGather or an
AllReduce may follow one of its kind: a ring over all N devices pays N - 1 latency steps for the
bytes that rings over each axis in turn move in sum(n_i - 1). The
estimate of what is left (`_Search.estimate`) counts the AllGathers that must still lower the
number of shards and the reductions the partial sums still need. Intermediate layouts keep
blocks whole in every dim whose size is known. The search expands at most `MAX_EXPANDED`
layouts, so it always ends quickly; on large meshes it may then miss a cheaper plan, never
return a dearer one.

Inside the search a layout is a tuple of strings, one character per mesh axis (`_Search.code`),
cheap to hash and slice; a search takes a few hundred microseconds, and `lower_bound` (the
estimate at the start) lets a caller skip searches that cannot matter (`passes.einsum_plan`).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence

from shardc.lang.layout import DimSharding, Layout
from shardc.passes.layout_cost import Pricing
from shardc.passes.memo import MAX_ENTRIES, RESHARD_BYTES, RESHARD_COSTS
from shardc.passes.reshard_rules import Step

MAX_EXPANDED = 64
"""Layouts expanded per search; past it the cheapest plan found so far (or the bound) is kept."""
MAX_EXTRA = 3
"""Axes a permute's target may carry beyond the final layout's (gathered right after)."""
TIE = 1e-9
"""Relative margin a plan must beat the bound by: ties keep the fixed order."""

Dims = tuple[str, ...]
"""The axes of each dim (one character each), in the target's dim order."""
State = tuple[Dims, frozenset[str]]
"""A layout: its dims' axes and its partial-sum axes."""
Move = tuple[str, str, int | None, State, float, float]
"""(kind, axes, dim index, the layout after, the step's time, the shards after)."""


def cheapest_plan(
    src: Layout, dst: Layout, sizes: Mapping[str, float], pricing: Pricing, bound: Sequence[Step]
) -> list[Step]:
    """The cheapest steps from `src` to `dst` the search finds under `pricing` with the mesh
    axes at `sizes` (every axis of both layouts), or `bound` (a valid plan) when none is
    strictly cheaper.

    >>> s, d = Layout.of({"L": ("Y",)}), Layout.of({"L": ("X",)})
    >>> gather = [Step("AllGather", ("Y",), None, s, Layout.of({"L": ()})),
    ...           Step("slice", ("X",), None, Layout.of({"L": ()}), d)]
    >>> plan = cheapest_plan(s, d, {"X": 4, "Y": 2}, Pricing("f32", ()), gather)
    >>> [(st.kind, st.axes, st.dst.format("A")) for st in plan]  # into finer blocks
    [('CollectivePermute', ('Y', 'X'), 'A[L_X]')]
    """
    search = _Search(src, dst, sizes, pricing)
    limit = search.time(bound) * (1 - TIE)
    if limit <= 0:
        return list(bound)
    path = search.run(limit)
    best = list(bound) if path is None else path
    return _fewer_bytes(src, dst, sizes, pricing, search, best)


def _fewer_bytes(
    src: Layout,
    dst: Layout,
    sizes: Mapping[str, float],
    pricing: Pricing,
    search: _Search,
    best: list[Step],
) -> list[Step]:
    """`best`, or a plan of the same time (within `TIE`) that moves fewer bytes over the links:
    where latency bounds the steps, plans of equal time differ in their bandwidth terms (on a
    2x3 mesh `[I, J_X]{U_Y} -> [I, J]` as AllReduce_Y then AllGather_X, or as
    ReduceScatter_Y onto J then AllGather_XY: five hops of latency each), and the one with
    the fewer bytes is the one that wins once the sizes grow, the plan a report with a size
    left symbolic chooses (priced at typical sizes), whose conditions (bandwidth terms) must
    be the compile's at every point. Searched again without latency, bounded by `best`; kept
    only where its time is `best`'s. Only for a plan with an AllReduce and another collective
    (each search costs about a millisecond)."""
    kinds = [s.kind for s in best if s.kind != "slice"]
    if "AllReduce" not in kinds or len(kinds) < 2 or not any(t for _, t in pricing.t):
        # Where the ties arise: an AllReduce is a ReduceScatter and an AllGather, the same
        # hops as a ReduceScatter and a gather joined to the plan's other gather (over both
        # axes' links: fewer bytes). Without latency the time is the bandwidth terms already.
        return best
    flat = dataclasses.replace(pricing, t=tuple((lv, 0.0) for lv, _ in pricing.t))
    lean = _Search(src, dst, sizes, flat)
    t_best, b_best = search.time(best), lean.time(best)
    if t_best <= b_best * (1 + TIE) or b_best <= 0:
        return best  # every step bandwidth bound: a plan with fewer bytes takes less time
    limit = b_best * (1 - TIE)
    path = lean.run(limit)
    if path is None or search.time(path) > t_best * (1 + TIE):
        return best
    return path


def lower_bound(
    src: Layout, dst: Layout, sizes: Mapping[str, float], pricing: Pricing, bound: Sequence[Step]
) -> float:
    """A lower bound on the time of `cheapest_plan(src, dst, sizes, pricing, bound)`: the
    search's estimate at the start, at most the bound's own time."""
    search = _Search(src, dst, sizes, pricing)
    start = search.start
    return min(search.time(bound), search.estimate(search.prod("".join(start[0])), start[1]))


class _Search:
    """The target, the sizes, the moves from one layout (the module's docstring), and the run."""

    def __init__(self, src: Layout, dst: Layout, sizes: Mapping[str, float], pricing: Pricing):
        self.pricing = pricing
        self.order = dst.dim_names
        held = {d.dim: d.axes for d in src.dims}
        # Mesh axes neither layout uses may be in `sizes` (`passes.reshard`): an idle axis
        # may be sliced onto a dim about to be gathered, so one AllGather runs over the links
        # of both axes (the sharding chapter's multi-axis rule, `V / (W_ici N_axes)`).
        names = sorted({*dst.sharding_axes, *src.sharding_axes, *src.unreduced, *sizes})
        self.names = names
        self.code = {a: chr(0x41 + i) for i, a in enumerate(names)}
        self.sizes = {a: float(sizes[a]) for a in names}
        self.size = {self.code[a]: n for a, n in self.sizes.items()}
        self.products: dict[str, float] = {"": 1.0}
        self.every = "".join(self.code[a] for a in names)
        self.target: Dims = tuple(self.encode(d.axes) for d in dst.dims)
        self.start: State = (
            tuple(self.encode(held[d]) for d in self.order),
            frozenset(self.encode(src.unreduced)),
        )
        self.goal: State = (self.target, frozenset(self.encode(dst.unreduced)))
        self.kept_sums = self.goal[1]
        self.wanted = "".join(self.target)
        self.home = {a: i for i, axes in enumerate(self.target) for a in axes}
        self.idle = "".join(
            self.code[a]
            for a in names
            if a not in {*dst.sharding_axes, *src.sharding_axes, *src.unreduced, *dst.unreduced}
        )
        self.dims = [i for i, axes in enumerate(self.target) if axes or self.start[0][i]]
        known = dict(pricing.dims)
        self.extent = [known.get(d) for d in self.order]
        self.target_shape = tuple(self.prod(t) for t in self.target)
        self.target_shards = self.prod(self.wanted)
        # Times depend on V, not on which array: arrays of one machine share them.
        context = (pricing.model, pricing.topology, pricing.w, pricing.t, tuple(self.sizes.items()))
        machine = RESHARD_COSTS.get(context)
        if machine is None:
            machine = RESHARD_COSTS[context] = (pricing.links(), {})
        self.links, self.costs = machine
        whole = RESHARD_BYTES.get((pricing, self.order))
        if whole is None:
            whole = RESHARD_BYTES[pricing, self.order] = pricing.block_bytes(self.order, 1.0)
        self.whole_bytes: float = whole
        # On a switched level (NVLink, PCIe, InfiniBand, DCN) a ring over N devices pays N - 1
        # latency steps, and rings over each axis in turn sum(n_i - 1) for the same bytes:
        # there an AllGather or an AllReduce may follow one of its kind (the exact model).
        self.repeat = (
            pricing.model == "exact"
            and pricing.topology is not None
            and sum(
                1
                for x in pricing.topology.links
                if x.level != "ici" and self.sizes.get(x.axis, 1) > 1
            )
            > 1
        )
        # Permutes into finer blocks (the exact model; the book's has no such collective):
        # priced over their pairs, so only where those can be listed.
        self.finer = pricing.model == "exact" and math.prod(self.sizes.values()) <= 64
        # With `finer`, the dims neither layout shards, where an idle axis may be sliced too
        # (then gathered): `[I, J_XY] -> [I, J_Y]` on 16 H100s slices Z onto I, gathers XY
        # (a quarter of the bytes over the slow X), slices Y and gathers Z.
        self.spare = (
            [i for i in range(len(self.target)) if i not in self.dims]
            if self.finer and self.idle
            else []
        )
        self._gather_bound: dict[float, float] = {}
        self._reduce_bound: dict[frozenset[str], float] = {}
        self._layouts: dict[State, Layout] = {}

    # ---- sizes, layouts and costs ---------------------------------------------------------
    def encode(self, axes: Sequence[str] | frozenset[str]) -> str:
        return "".join(
            self.code[a] for a in (sorted(axes) if isinstance(axes, frozenset) else axes)
        )

    def decode(self, axes: str) -> tuple[str, ...]:
        return tuple(self.names[ord(c) - 0x41] for c in axes)

    def prod(self, axes: str) -> float:
        """The number of shards `axes` make."""
        out = self.products.get(axes)
        if out is None:
            out = 1.0
            for a in axes:
                out *= self.size[a]
            self.products[axes] = out
        return out

    def fits(self, i: int, shards: float) -> bool:
        """Dim i splits into whole blocks `shards` ways (or its size is not known)."""
        n = self.extent[i]
        return n is None or n % shards == 0

    def layout(self, state: State) -> Layout:
        out = self._layouts.get(state)
        if out is None:
            dims, sums = state
            out = self._layouts[state] = Layout(
                tuple(
                    DimSharding(d, self.decode(a)) for d, a in zip(self.order, dims, strict=True)
                ),
                frozenset(self.decode("".join(sums))),
            )
        return out

    def time(self, steps: Sequence[Step]) -> float:
        """The time of `steps`, step by step as `cost` prices them."""
        total = 0.0
        for step in steps:
            if step.kind == "CollectivePermute":
                total += self.pricing.collective(
                    step.kind,
                    step.axes,
                    self.whole_bytes / self.prod(self.encode(step.dst.sharding_axes)),
                    self.sizes,
                    self.links,
                    step.src,
                    step.dst,
                )
            elif step.kind != "slice":
                side = step.dst if step.kind == "AllGather" else step.src
                total += self.cost(
                    step.kind, self.encode(step.axes), self.prod(self.encode(side.sharding_axes))
                )
        return total

    def cost(self, kind: str, axes: str, shards: float) -> float:
        """A collective's time: V is the block of the layout with `shards` shards (the result
        of an AllGather, the source of anything else)."""
        v = self.whole_bytes / shards
        key = (kind, axes, v)
        c = self.costs.get(key)
        if c is None:
            if len(self.costs) >= MAX_ENTRIES:
                self.costs.clear()
            c = self.costs[key] = self.pricing.collective(
                kind, self.decode(axes), v, self.sizes, self.links
            )
        return c

    def permute_cost(self, state: State, new: Dims, moved: str, shards: float) -> float:
        """A CollectivePermute's time from `state` to `new` (its partial sums kept): it
        depends on which device sends to which, not only on the axes (`passes.permute_cost`)."""
        return self._permute(
            ("CollectivePermute", state, new),
            self.whole_bytes / shards,
            moved,
            state,
            (new, state[1]),
        )

    def sub_block_cost(self, state: State, moved: str) -> float:
        """A CollectivePermute from `state` to the goal in finer blocks: V is the goal's."""
        return self._permute(
            ("sub-block", state, self.goal),
            self.whole_bytes / self.target_shards,
            moved,
            state,
            self.goal,
        )

    def _permute(
        self, key: tuple[object, ...], v: float, moved: str, source: State, target: State
    ) -> float:
        """A CollectivePermute of `v` bytes a device from `source` to `target`, memoized in
        `costs` under `key` and `v`."""
        key = (*key, v)
        c = self.costs.get(key)
        if c is None:
            if len(self.costs) >= MAX_ENTRIES:
                self.costs.clear()
            c = self.costs[key] = self.pricing.collective(
                "CollectivePermute",
                self.decode(moved),
                v,
                self.sizes,
                self.links,
                self.layout(source),
                self.layout(target),
            )
        return c

    def estimate(self, shards: float, sums: frozenset[str]) -> float:
        """A lower bound on what is left from a layout with `shards` shards and partial sums
        `sums`: only AllGathers lower the number of shards, and the ones still needed cost at
        least one AllGather over axes that make enough shards into the target's block, the
        cheapest such (gathering in several steps costs more than in one, into a bigger block
        more than into a smaller one); the partial sums the target does not keep
        need a reduction, at least a ReduceScatter of them on the smallest block they can have
        (on switched levels, where collectives over each axis in turn may cost less, neither).
        Admissible under the cost model's formulas as far as tests/passes/test_reshard_and_plans.py
        checks it; were it not somewhere, the search could miss a cheaper plan there, never
        return a dearer one."""
        out = 0.0
        need = shards / self.target_shards
        if need > 1 + TIE and not self.repeat:  # (with `repeat`, gathers in turn may cost less)
            lb = self._gather_bound.get(need)
            if lb is None:
                # Shared by the searches of one machine and mesh: it depends on V and `need`.
                key = ("gather-bound", need, self.whole_bytes / self.target_shards)
                lb = self.costs.get(key)
                if lb is None:
                    lb = math.inf
                    for r in range(1, len(self.every) + 1):
                        for axes in itertools.combinations(self.every, r):
                            run = "".join(axes)
                            n = self.prod(run)
                            if n >= need * (1 - TIE):  # its result is at least the target's block
                                lb = min(lb, self.cost("AllGather", run, self.target_shards))
                    self.costs[key] = lb
                self._gather_bound[need] = lb
            out += lb
        free = sums - self.kept_sums
        if free and not self.repeat:  # (with `repeat`, reductions in turn may cost less)
            lb = self._reduce_bound.get(free)
            if lb is None:
                most = self.prod("".join(a for a in self.size if a not in free))
                lb = self._reduce_bound[free] = self.cost(
                    "ReduceScatter", "".join(sorted(free)), most
                )
            out += lb
        return out

    # ---- the search -----------------------------------------------------------------------
    def run(self, limit: float) -> list[Step] | None:
        """A* from the start with `estimate`, pruned at `limit`: the cheapest path to the goal
        (fewer collectives on ties), or the cheapest one met when the expansions run out."""
        start, goal = self.start, self.goal
        shards0 = self.prod("".join(start[0]))
        h0 = self.estimate(shards0, start[1])
        if h0 >= limit:
            return None
        best: dict[State, tuple[float, int]] = {start: (0.0, 0)}
        parent: dict[State, tuple[State, str, str, int | None]] = {}
        heap: list[tuple[float, int, int, float, State, float]] = [(h0, 0, 0, 0.0, start, shards0)]
        pushed = expanded = 0
        estimate = self.estimate
        while heap:
            _, n, _, g, state, shards = heapq.heappop(heap)
            if best[state] < (g, n):
                continue  # reached more cheaply since it was queued
            if state == goal:
                return self.steps(parent)
            expanded += 1
            if expanded > MAX_EXPANDED:
                break
            last = parent[state][1] if state in parent else ""
            for kind, axes, dim, after, c, after_shards in self.moves(
                state, shards, last, limit - g
            ):
                g2, n2 = g + c, n + (kind != "slice")
                if best.get(after, (math.inf, 0)) <= (g2, n2):
                    continue
                f2 = g2 + estimate(after_shards, after[1])
                if f2 >= limit:
                    continue
                best[after] = (g2, n2)
                parent[after] = (state, kind, axes, dim)
                pushed += 1
                heapq.heappush(heap, (f2, n2, pushed, g2, after, after_shards))
        if goal in best:  # queued, not reached: still cheaper than the bound
            return self.steps(parent)
        return None

    def steps(self, parent: dict[State, tuple[State, str, str, int | None]]) -> list[Step]:
        """The path to the goal as steps (consecutive slices merged). Each collective is
        `transfer`'s rule by construction (tests/passes/test_reshard_and_plans.py checks it)."""
        path: list[tuple[State, str, str, int | None, State]] = []
        state = self.goal
        while state != self.start:
            prev, kind, axes, dim = parent[state]
            path.append((prev, kind, axes, dim, state))
            state = prev
        out: list[Step] = []
        for prev, kind, axes, dim, after in reversed(path):
            src, dst = self.layout(prev), self.layout(after)
            names = self.decode(axes)
            if kind == "slice" and out and out[-1].kind == "slice":
                out[-1] = Step("slice", out[-1].axes + names, None, out[-1].src, dst)
                continue
            out.append(Step(kind, names, None if dim is None else self.order[dim], src, dst))
        return out

    # ---- moves ----------------------------------------------------------------------------
    def moves(self, state: State, shards: float, last: str, budget: float) -> Iterator[Move]:
        """The moves from `state` (with `shards` shards) that cost less than `budget`, each with
        its cost and the shards after it; `last` is the kind of move that reached `state`."""
        dims, sums = state
        size, target, home, cost, prod, fits = (
            self.size,
            self.target,
            self.home,
            self.cost,
            self.prod,
            self.fits,
        )
        shape = [prod(axes) for axes in dims]
        used = set("".join(dims)) | sums
        kept = [
            len(axes) if axes == t else _common(axes, t)
            for axes, t in zip(dims, target, strict=True)
        ]
        ts = self.target_shape
        for a in self.wanted:  # free slices
            if a not in used:
                for i in self.dims:
                    # onto the dim the target gives `a`, or onto another that stays no finer
                    # than the target shards it (the block shape a permute to it needs)
                    finer = shape[i] * size[a]
                    if (i == home[a] or ts[i] % finer == 0) and fits(i, finer):
                        yield (
                            "slice",
                            a,
                            None,
                            (_put(dims, i, dims[i] + a), sums),
                            0.0,
                            shards * size[a],
                        )
        gathers = any(kept[i] < len(dims[i]) for i in self.dims)
        for a in self.idle:  # an idle axis onto a dim that still gathers (then both at once)
            if a not in used:  # or, with `finer`, onto any dim while another gathers
                for i in (*self.dims, *(self.spare if gathers else ())):
                    if (kept[i] < len(dims[i]) or self.finer and gathers) and fits(
                        i, shape[i] * size[a]
                    ):
                        yield (
                            "slice",
                            a,
                            None,
                            (_put(dims, i, dims[i] + a), sums),
                            0.0,
                            shards * size[a],
                        )
        if last != "AllGather" or self.repeat:  # the innermost axes of dims past their prefix
            ranges = [
                range(len(dims[i]) - kept[i] + 1) if i in self.dims or dims[i] else range(1)
                for i in range(len(dims))
            ]
            for ks in itertools.islice(itertools.product(*ranges), 1, None):
                gone = "".join(axes[len(axes) - k :] for axes, k in zip(dims, ks, strict=True))
                after = shards / prod(gone)
                c = cost("AllGather", gone, after)
                if c < budget:
                    new = tuple(axes[: len(axes) - k] for axes, k in zip(dims, ks, strict=True))
                    yield "AllGather", gone, None, (new, sums), c, after
        for i in self.dims:  # AllToAll of an innermost run to a dim the target gives it
            for k in range(1, len(dims[i]) - kept[i] + 1):
                run = dims[i][-k:]
                # (with `finer`, to any other dim: `[I_YZ, J_X] -> [I_XZY, J]` on 16 H100s
                # AllToAlls YZ to J, then XYZ back to I, where a permute crosses the slow X)
                homes = {home[a] for a in run if a in home}
                for j in sorted((set(self.dims) if self.finer else homes) - {i}):
                    if fits(j, shape[j] * prod(run)):
                        c = cost("AllToAll", run, shards)
                        if c < budget:
                            new = _put(_put(dims, i, dims[i][:-k]), j, dims[j] + run)
                            yield "AllToAll", run, j, (new, sums), c, shards
        free = sums - self.kept_sums
        if free:
            # ReduceScatter onto the dim the target gives the axes, joined by partial sums the
            # target shards nowhere (gathered after: RS_XY then AllGather_Y beats RS_X then
            # AllReduce_Y, one scatter over more links)
            # Or onto another dim than their own, moved home by an AllToAll after:
            # `[I, K]{U_XY} -> [I_Y, K_X]` on a 2x4 v5e as RS_YX onto I, then AllToAll X.
            spare = [a for a in sorted(free) if a not in self.wanted]
            for j in self.dims:
                cand = [a for a in target[j] if a in free]
                cand += [a for a in sorted(free) if a not in cand and a in self.wanted] + spare
                for r in range(1, len(cand) + 1):
                    for perm in itertools.permutations(cand, r):
                        run = "".join(perm)
                        n = prod(run)
                        if fits(j, shape[j] * n):
                            c = cost("ReduceScatter", run, shards)
                            if c < budget:
                                yield (
                                    "ReduceScatter",
                                    run,
                                    j,
                                    (_put(dims, j, dims[j] + run), sums - set(run)),
                                    c,
                                    shards * n,
                                )
            if last != "AllReduce" or self.repeat:
                ordered = sorted(free)
                for r in range(1, len(ordered) + 1):
                    for comb in itertools.combinations(ordered, r):
                        run = "".join(comb)
                        c = cost("AllReduce", run, shards)
                        if c < budget:
                            yield "AllReduce", run, None, (dims, sums - set(run)), c, shards
        if last != "CollectivePermute":
            for moved, new in self._permutes(dims, sums, free, shape):
                c = self.permute_cost(state, new, moved, shards)
                if c < budget:
                    yield "CollectivePermute", moved, None, (new, sums), c, shards
            # Straight to the target in finer blocks: each device slices its block where it
            # holds it and receives it otherwise (`permute_cost`: one send of the target's
            # block; XLA's `[J, K_Y] -> [J_Y, K_X]`).
            if (
                sums == self.goal[1]
                and dims != target
                and self.finer
                and all(t % s == 0 for t, s in zip(ts, shape, strict=True))
                and any(t > s for t, s in zip(ts, shape, strict=True))
            ):
                moved = "".join(dict.fromkeys("".join(dims) + "".join(target)))
                c = self.sub_block_cost(state, moved)
                if c < budget:
                    yield "CollectivePermute", moved, None, self.goal, c, self.target_shards
            # Or to the target with idle axes added, in finer blocks, then gathered: on a 4x4
            # v5e `[I_X, J] -> [I_Y, J_X]` (each block from the nearest of its four holders)
            # costs less than slicing Y onto J and permuting `[I_X, J_Y]`, whose blocks have
            # one holder each.
            # Or to one AllToAll from the target, in finer blocks: on a 2x2x4 H100 mesh
            # (X across InfiniBand) `[I_Z, K] -> [I_Y, K_ZX]` permutes to `[I_YX, K_Z]` (one
            # latency hop) and AllToAlls X (one more), where AllToAll_Z costs three.
            if sums == self.goal[1] and self.finer:
                near = self._finer_near(dims, shape)
                if self.idle:
                    near = itertools.chain(near, self._finer_with_idle(dims, shape))
                for new in near:
                    shards_new = self.prod("".join(new))
                    moved = "".join(dict.fromkeys("".join(dims) + "".join(new)))
                    c = self._permute(
                        ("sub-block", state, new),
                        self.whole_bytes / shards_new,
                        moved,
                        state,
                        (new, sums),
                    )
                    if c < budget:
                        yield "CollectivePermute", moved, None, (new, sums), c, shards_new

    def _finer(self, new: Dims, shape: list[float]) -> bool:
        """Whether every block of `new` lies in one block of a layout of `shape` (each dim
        whole), and some dim is finer."""
        new_shape = [self.prod(x) for x in new]
        return all(
            n % s == 0 and self.fits(k, n)
            for k, (n, s) in enumerate(zip(new_shape, shape, strict=True))
        ) and any(n > s for n, s in zip(new_shape, shape, strict=True))

    def _finer_near(self, dims: Dims, shape: list[float]) -> Iterator[Dims]:
        """The target with an innermost run of one dim moved to the end of another (an
        AllToAll of the run reaches the target), where it is finer than `dims` (`_finer`)."""
        t = self.target
        for j in self.dims:
            for k in range(1, len(t[j]) + 1):
                for i in self.dims:
                    if i != j:
                        new = _put(_put(t, j, t[j][:-k]), i, t[i] + t[j][-k:])
                        if new != dims and self._finer(new, shape):
                            yield new

    def _finer_with_idle(self, dims: Dims, shape: list[float]) -> Iterator[Dims]:
        """The target with one idle axis (not in `dims`) appended to one of its dims, where
        every block of the result lies in one block of `dims` and some dim is finer."""
        used = set("".join(dims))
        for a in self.idle:
            if a in used:
                continue
            for i in self.dims:
                new = _put(self.target, i, self.target[i] + a)
                if self._finer(new, shape):
                    yield new

    def _permutes(
        self, dims: Dims, sums: frozenset[str], free: frozenset[str], shape: list[float]
    ) -> Iterator[tuple[str, Dims]]:
        """Permutes to the target or a layout one step from it, in this layout's block shape:
        the target itself; with an innermost run of dim j on dim i (then AllToAll it back);
        without an innermost run of partial sums (then ReduceScatter it); with this layout's
        extra axes appended (then AllGather them). Yields (the axes that move, the dims)."""
        t, ts, prod = self.target, self.target_shape, self.prod
        diff = [i for i in range(len(t)) if shape[i] != ts[i]]
        targets: list[Dims] = []
        clash = not sums.isdisjoint(self.wanted)
        if not diff and not clash:
            targets.append(t)
        elif len(diff) == 2 and not clash:
            for j, i in (diff, diff[::-1]):
                p = ts[j] / shape[j]
                if p > 1 and shape[i] == ts[i] * p:
                    targets.extend(
                        _put(_put(t, j, t[j][:-k]), i, t[i] + t[j][-k:])
                        for k in range(1, len(t[j]) + 1)
                        if prod(t[j][-k:]) == p
                    )
        elif len(diff) == 1:
            j = diff[0]
            p = ts[j] / shape[j]
            for k in range(1, len(t[j]) + 1):
                run = t[j][-k:]
                if (
                    prod(run) == p
                    and free.issuperset(run)
                    and sums.isdisjoint(set(self.wanted) - set(run))
                ):
                    targets.append(_put(t, j, t[j][:-k]))
        extra = "".join(a for a in "".join(dims) if a not in self.home)
        if extra and len(extra) <= MAX_EXTRA and not clash:
            need = [s / x for s, x in zip(shape, ts, strict=True)]
            targets.extend(self._with_extra(extra, need, shape))
        seen = {dims}
        for new in targets:
            if new in seen:
                continue
            seen.add(new)
            changed = [i for i in range(len(dims)) if dims[i] != new[i]]
            moved = "".join(
                dict.fromkeys(
                    [*(a for i in changed for a in dims[i]), *(a for i in changed for a in new[i])]
                )
            )
            yield moved, new

    def _with_extra(self, extra: str, need: list[float], shape: list[float]) -> Iterator[Dims]:
        """The target with `extra` appended to dims so that each dim has `need` times its
        shards (then an AllGather of `extra` reaches the target), in `shape`."""

        def place(k: int, left: list[float], where: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
            if k == len(extra):
                if all(x == 1 for x in left):
                    yield where
                return
            n = self.size[extra[k]]
            for i in self.dims:
                if left[i] % n == 0:
                    left[i] /= n
                    yield from place(k + 1, left, (*where, i))
                    left[i] *= n

        for where in place(0, list(need), ()):
            if all(self.fits(i, shape[i]) for i in set(where)):
                new = list(self.target)
                for a, i in zip(extra, where, strict=True):
                    new[i] = new[i] + a
                yield tuple(new)


def _common(axes: str, target: str) -> int:
    """Length of the common prefix: the axes of a dim that stay where they are."""
    k = 0
    while k < min(len(axes), len(target)) and axes[k] == target[k]:
        k += 1
    return k


def _put(dims: Dims, i: int, axes: str) -> Dims:
    return (*dims[:i], axes, *dims[i + 1 :])
