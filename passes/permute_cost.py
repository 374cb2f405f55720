"""A CollectivePermute's time as the point-to-point sends it is made of, over the real pairs of
devices: one home for the planner, the report and xla-check's pricing of XLA's permutes.

A permute between two layouts with the same block shape sends each device's block to the device
that holds it in the new layout (`permute_pairs`); `pairs_time` prices any set of (source,
target) pairs: one shift (`Send_{X: +k}`, the busiest link of each physical axis) when every
device sends the same way, else each pair as a point `Send` and the slowest sets the time (pairs
run at once; contention between them ignored). Rule and source: docs/cost-model.md,
"CollectivePermute over its pairs".
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence

import sympy as sp

from shardc.lang.layout import Layout
from shardc.lang.send import SendAxis
from shardc.passes.context import Model
from shardc.passes.cost_model import CollectiveTime, Links, Num, is_number, smax, smin
from shardc.passes.ir import Topology
from shardc.passes.memo import PERMUTE_NEAR, PERMUTE_PAIRS, PERMUTE_TIME, memoized, typed
from shardc.passes.send_cost import by_distance, send_time

Coords = tuple[int, ...]
Pairs = list[tuple[Coords, Coords]]
SendKey = tuple[float, float]
"""A send's bandwidth and latency terms at unit link figures: the order holders are chosen by."""

MAX_DEVICES = 64
"""Devices a permute's pairs are listed for (a 4x4x4 slice; xla-check's meshes are smaller);
past it (and with symbolic axes) the permute keeps the per-axis rule of
`passes.cost_model.ring_level`. Listing them costs: with 4,096, `plan` for LLaMA 3 70B on 8,960
v5p chips spent 12 of its 16 s CPU pricing 310 permutes over up to 4,096 pairs each (180,000
point sends); with 64 it is back near its 3-5 s."""


@memoized(PERMUTE_PAIRS, lambda src, dst, sizes: (src, dst, tuple(sorted(sizes.items()))))
def permute_pairs(
    src: Layout, dst: Layout, sizes: Mapping[str, int]
) -> tuple[tuple[str, ...], Pairs] | None:
    """The axes whose coordinates may change and the (source, target) coordinates on them of a
    CollectivePermute from `src` to `dst`: each device's block goes to the device holding it in
    `dst`. Where a block has replicas, the replica index (the axes `src` leaves free, sorted,
    the first major) is laid out again over the axes `dst` leaves free, so every device sends
    one block and receives one. None when the layouts' blocks differ in shape or partial sums,
    or the devices are too many to list.

    >>> src, dst = Layout.of({"I": ("X",), "K": ("Y",)}), Layout.of({"I": ("X",), "K": ("Z",)})
    >>> axes, pairs = permute_pairs(src, dst, {"X": 2, "Y": 2, "Z": 2})
    >>> axes, [(s, t) for s, t in pairs if s != t]  # Y and Z swap, as XLA's pairs do
    (('X', 'Y', 'Z'), [((0, 0, 1), (0, 1, 0)), ((0, 1, 0), (0, 0, 1)), ((1, 0, 1), (1, 1, 0)),
                       ((1, 1, 0), (1, 0, 1))])
    """
    if src.unreduced != dst.unreduced or set(src.dim_names) != set(dst.dim_names):
        return None
    axes = tuple(sorted({*src.sharding_axes, *dst.sharding_axes}))
    if any(a not in sizes for a in axes):
        return None
    n = {a: int(sizes[a]) for a in axes}
    if math.prod(n.values()) > MAX_DEVICES:
        return None
    dims = dst.dim_names
    if any(
        math.prod(n[a] for a in src.axes_of(d)) != math.prod(n[a] for a in dst.axes_of(d))
        for d in dims
    ):
        return _sub_block_pairs(src, dst, axes, n)
    src_free = [a for a in axes if a not in src.sharding_axes]
    dst_free = [a for a in axes if a not in dst.sharding_axes]
    pairs: Pairs = []
    for coords in itertools.product(*(range(n[a]) for a in axes)):
        c = dict(zip(axes, coords, strict=True))
        out: dict[str, int] = {}
        for d in dims:
            _spread(_index(c, src.axes_of(d), n), dst.axes_of(d), n, out)
        _spread(_index(c, src_free, n), dst_free, n, out)
        pairs.append((coords, tuple(out[a] for a in axes)))
    return axes, pairs


def _sub_block_pairs(
    src: Layout, dst: Layout, axes: tuple[str, ...], n: Mapping[str, int]
) -> tuple[tuple[str, ...], Pairs] | None:
    """The pairs of a permute into finer blocks: each of `dst`'s blocks lies in one of
    `src`'s (every dim splits into a multiple of its shards), so each device slices the block
    it needs locally where it holds it, and otherwise receives it from the holder that agrees
    with it on the axes `src` leaves free: one send of `dst`'s block, as XLA's partitioner
    reshards `[J, K_Y] -> [J_Y, K_X]` on a 4x2 mesh (one collective-permute, not two
    AllToAlls). None where some dim is not so split.

    >>> src, dst = Layout.of({"J": (), "K": ("Y",)}), Layout.of({"J": ("Y",), "K": ("X",)})
    >>> axes, pairs = permute_pairs(src, dst, {"X": 4, "Y": 2})
    >>> [(s, t) for s, t in pairs if s != t][:2]
    [((0, 0), (0, 1)), ((1, 0), (1, 1))]
    """
    ratio: dict[str, int] = {}
    for d in dst.dim_names:
        have = math.prod(n[a] for a in src.axes_of(d))
        want = math.prod(n[a] for a in dst.axes_of(d))
        if want % have:
            return None
        ratio[d] = want // have
    src_free = [a for a in axes if a not in src.sharding_axes]
    pairs: Pairs = []
    for coords in itertools.product(*(range(n[a]) for a in axes)):
        c = dict(zip(axes, coords, strict=True))
        holder: dict[str, int] = {a: c[a] for a in src_free}
        for d in dst.dim_names:
            _spread(_index(c, dst.axes_of(d), n) // ratio[d], src.axes_of(d), n, holder)
        pairs.append((tuple(holder[a] for a in axes), coords))
    return axes, pairs


def _nearest_holders(
    src: Layout,
    dst: Layout,
    axes: tuple[str, ...],
    n: Mapping[str, int],
    cost: Callable[[Coords, Coords], SendKey],
) -> Pairs:
    """The pairs of a permute into finer blocks (`_sub_block_pairs`) with each block's source
    chosen among all the devices that hold it: each holder sends one block (itself included),
    and the costliest send (`cost`, an order on sends) is as cheap as an assignment makes it
    (a bottleneck matching per block of `src`). XLA's partitioner chooses so: on a 4x2 v5e,
    `[J, K_Y] -> [J_Y, K_X]` sends from holders two X-hops away, whose sends leave on both
    axes' ports (8.8 us), not from the neighbour on Y (12.7 us)."""
    ratio = {
        d: math.prod(n[a] for a in dst.axes_of(d)) // math.prod(n[a] for a in src.axes_of(d))
        for d in dst.dim_names
    }
    holders: dict[tuple[int, ...], list[Coords]] = {}
    needers: dict[tuple[int, ...], list[Coords]] = {}
    for coords in itertools.product(*(range(n[a]) for a in axes)):
        c = dict(zip(axes, coords, strict=True))
        holders.setdefault(tuple(_index(c, src.axes_of(d), n) for d in dst.dim_names), []).append(
            coords
        )
        needers.setdefault(
            tuple(_index(c, dst.axes_of(d), n) // ratio[d] for d in dst.dim_names), []
        ).append(coords)
    pairs: Pairs = []
    for block, want in needers.items():
        have = holders[block]
        keys = {(h, r): cost(h, r) for h in have for r in want}
        ranked = sorted(set(keys.values()))
        # each device's holders, cheapest send first (ties in `have`'s order), once per block
        order = {r: sorted(have, key=functools.partial(_send_key, keys, r)) for r in want}
        lo, hi = 0, len(ranked) - 1
        best = _matching(want, order, keys, ranked[hi])
        while lo < hi:  # the least bound on the costliest send that still serves every device
            mid = (lo + hi) // 2
            m = _matching(want, order, keys, ranked[mid])
            if m is None:
                lo = mid + 1
            else:
                hi, best = mid, m
        assert best is not None  # as many holders as devices needing the block
        pairs += [(best[r], r) for r in want]
    return pairs


def _send_key(keys: Mapping[tuple[Coords, Coords], SendKey], r: Coords, h: Coords) -> SendKey:
    return keys[(h, r)]


def _matching(
    want: list[Coords],
    order: Mapping[Coords, list[Coords]],
    keys: Mapping[tuple[Coords, Coords], SendKey],
    bound: SendKey,
) -> dict[Coords, Coords] | None:
    """A source for each device of `want` among its holders (`order`, cheapest send first),
    each holder used once, every send's key at most `bound` (augmenting paths, cheapest sends
    tried first); None where there is none."""
    options = {r: [h for h in order[r] if keys[(h, r)] <= bound] for r in want}
    owner: dict[Coords, Coords] = {}

    def augment(r: Coords, seen: set[Coords]) -> bool:
        for h in options[r]:
            if h not in seen:
                seen.add(h)
                if h not in owner or augment(owner[h], seen):
                    owner[h] = r
                    return True
        return False

    for r in want:
        if not augment(r, set()):
            return None
    return {r: h for h, r in owner.items()}


def _index(c: Mapping[str, int], axes: Sequence[str], n: Mapping[str, int]) -> int:
    """The block (or replica) index the coordinates on `axes` make, the first axis major."""
    i = 0
    for a in axes:
        i = i * n[a] + c[a]
    return i


def _spread(i: int, axes: Sequence[str], n: Mapping[str, int], out: dict[str, int]) -> None:
    """The coordinates on `axes` of index `i`, the first axis major (`_index` undone)."""
    for a in reversed(axes):
        out[a] = i % n[a]
        i //= n[a]


def pairs_time(
    v: Num,
    axes: Sequence[str],
    pairs: Pairs,
    size_of: Callable[[str], Num],
    known: Callable[[str], int | None],
    model: Model,
    topo: Topology | None,
    links: Links,
) -> CollectiveTime:
    """Time of sending `v` bytes from each source to its target (coordinates on `axes`, of
    sizes `known`): one shift when every device sends the same way on every axis, else the
    slowest point Send (the ones no other is at least as slow as in bandwidth and latency;
    several left over symbolically: their Max)."""
    moving = [(s, t) for s, t in pairs if s != t]
    if not moving:
        return CollectiveTime(0, 0, 0, ())
    lengths = [known(a) or 1 for a in axes]
    shifts = [{(t[k] - s[k]) % m for s, t in moving} for k, m in enumerate(lengths)]
    if len(moving) == math.prod(lengths) and all(len(d) == 1 for d in shifts):
        moves = [
            SendAxis(a, shift=d if 2 * d <= m else d - m)
            for a, m, (d,) in zip(axes, lengths, shifts, strict=True)
            if d
        ]
        return send_time(v, moves, size_of, model, topo, links, known)
    # One point Send per distinct price: pairs that move by the same distances along axes
    # priced by distance (`by_distance`), and by the same ends along the others, cost the same.
    near = [by_distance(a, topo) for a in axes]
    points: dict[tuple[object, ...], tuple[SendAxis, ...]] = {}
    for s, t in moving:
        # per axis: the distance, or the ends where they differ (0: it does not move)
        key = tuple(
            [
                abs(j - i) if by else (i, j) if i != j else 0
                for i, j, by in zip(s, t, near, strict=True)
            ]
        )
        if key not in points:
            points[key] = tuple(
                SendAxis(a, src=s[k], dst=t[k]) for k, a in enumerate(axes) if s[k] != t[k]
            )
    times = [send_time(v, point, size_of, model, topo, links, known) for point in points.values()]
    if all(is_number(x.time) for x in times):
        return max(times, key=lambda x: float(x.time))
    slowest = [x for x in times if not any(y is not x and _slower(y, x) for y in times)]
    slowest = list({x.time: x for x in slowest}.values())
    if len(slowest) == 1:
        return slowest[0]
    return CollectiveTime(
        smax(*[x.time for x in slowest]),
        smax(*[x.bandwidth for x in slowest]),
        smax(*[x.latency for x in slowest]),
    )


def _slower(a: CollectiveTime, b: CollectiveTime) -> bool:
    """`a` takes at least `b`'s bandwidth and latency time for every positive size (and is not
    the same)."""
    return a.time != b.time and all(
        _at_least(x, y) for x, y in ((a.bandwidth, b.bandwidth), (a.latency, b.latency))
    )


def _at_least(x: Num, y: Num) -> bool:
    """x >= y for every positive value of the symbols (False where that is not known)."""
    d = x - y
    return d >= 0 if is_number(d) else isinstance(d, sp.Expr) and d.is_nonnegative is True


def _permute_key(
    v: Num,
    src: Layout,
    dst: Layout,
    size_of: Callable[[str], Num],
    known: Callable[[str], int | None],
    model: Model,
    topo: Topology | None,
    links: Links,
) -> tuple[Hashable, ...]:
    axes = sorted({*src.sharding_axes, *dst.sharding_axes})
    return (
        typed(v),
        src,
        dst,
        tuple((a, typed(size_of(a)), known(a)) for a in axes),
        model,
        topo,
        links.memo_key(),
    )


def _nearest_key(
    src: Layout,
    dst: Layout,
    names: tuple[str, ...],
    n: Mapping[str, int],
    pairs: Pairs,
    model: Model,
    topo: Topology | None,
) -> Hashable:
    # The holders depend only on the sharded dims' axes (in any order, under any names): the
    # same reshard of Q, K and V's head dim is matched once. The fixed `pairs` are part of the
    # answer (their costliest send), so of the key too.
    sharded = tuple(
        (src.axes_of(d), dst.axes_of(d)) for d in dst.dim_names if src.axes_of(d) or dst.axes_of(d)
    )
    return (sharded, names, tuple(n.items()), tuple(pairs), model, topo)


@memoized(PERMUTE_NEAR, _nearest_key)
def _nearest(
    src: Layout,
    dst: Layout,
    names: tuple[str, ...],
    n: Mapping[str, int],
    pairs: Pairs,
    model: Model,
    topo: Topology | None,
) -> tuple[Pairs, SendKey, SendKey]:
    """The nearest holders' pairs of a permute into finer blocks (`_nearest_holders`, each send
    ranked by its bandwidth term, then its latency, at unit figures), and the costliest send of
    those and of the fixed `pairs`."""
    unit = Links.uniform(1.0, 1.0)
    known_n = n.get
    sends: dict[tuple[tuple[int, ...], ...], SendKey] = {}
    axes = range(len(names))
    flat = [by_distance(a, topo) for a in names]

    def cost(h: Coords, r: Coords) -> SendKey:
        # by the moving coordinates (a block's holders are many, their sends few), each as
        # `pairs_time` tells sends of one price apart
        moves = tuple(
            (k, abs(r[k] - h[k])) if flat[k] else (k, h[k], r[k]) for k in axes if h[k] != r[k]
        )
        hit = sends.get(moves)
        if hit is None:
            if not moves:
                return (0.0, 0.0)
            point = tuple(SendAxis(names[k], src=h[k], dst=r[k]) for k in axes if h[k] != r[k])
            t = send_time(1.0, point, known_n, model, topo, unit, known_n)
            hit = sends[moves] = (float(t.bandwidth), float(t.latency))
        return hit

    near = _nearest_holders(src, dst, names, n, cost)
    return near, max(cost(h, r) for h, r in near), max(cost(h, r) for h, r in pairs)


@memoized(PERMUTE_TIME, _permute_key)
def permute_time(
    v: Num,
    src: Layout,
    dst: Layout,
    size_of: Callable[[str], Num],
    known: Callable[[str], int | None],
    model: Model,
    topo: Topology | None,
    links: Links,
) -> CollectiveTime | None:
    """A CollectivePermute from `src` to `dst` priced over its pairs (`permute_pairs`,
    `pairs_time`), or None where they cannot be listed (an axis of unknown size, too many
    devices)."""
    axes = {*src.sharding_axes, *dst.sharding_axes}
    sizes = {a: int(k) for a in axes if (k := known(a)) is not None}
    found = permute_pairs(src, dst, sizes)
    if found is None:
        return None
    names, pairs = found
    n = {a: sizes[a] for a in names}
    if any(
        math.prod(n[a] for a in src.axes_of(d)) != math.prod(n[a] for a in dst.axes_of(d))
        for d in dst.dim_names
    ):
        # Into finer blocks: several devices hold each block; the sends are ranked by their
        # bandwidth term, then their latency, at unit figures (the same pairs for a report's
        # formulas and a planner's numbers), and the fixed pairs kept unless beaten.
        near, mine, fixed = _nearest(src, dst, names, n, pairs, model, topo)
        if mine < fixed:
            t_near = pairs_time(v, names, near, size_of, sizes.get, model, topo, links)
            if mine[1] <= fixed[1]:
                return t_near  # no slower in bandwidth nor in latency
            # More ports but more hops: the faster of the two at the size (XLA's pairs for a
            # large block, the neighbour's for a small one), a Min in a formula.
            t_fixed = pairs_time(v, names, pairs, size_of, sizes.get, model, topo, links)
            if is_number(t_near.time) and is_number(t_fixed.time):
                return t_near if t_near.time < t_fixed.time else t_fixed
            return CollectiveTime(
                smin(t_near.time, t_fixed.time),
                smin(t_near.bandwidth, t_fixed.bandwidth),
                smin(t_near.latency, t_fixed.latency),
            )
    return pairs_time(v, names, pairs, size_of, sizes.get, model, topo, links)
