"""Collective time formulas, `book` and `exact`, over numbers or SymPy expressions alike.

A collective over mesh axes is split by network level (ICI/NVLink inside, then PCIe, InfiniBand,
DCN) and costed hierarchically. On ICI each physical axis is a ring (wraparound) or a line; on
switched levels every chip reaches every other. V is the per-device size of the larger side
(the V of "Sharded Matrices and How to Multiply Them"). Every formula and its source:
docs/cost-model.md. Point-to-point sends: `shardc.passes.send_cost`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

import sympy as sp

from shardc.hardware.levels import LEVELS as LEVELS  # re-exported: passes/lower imports it here
from shardc.hardware.levels import SWITCHED
from shardc.passes.context import Model
from shardc.passes.ir import PhysicalAxis, Topology
from shardc.passes.memo import COLLECTIVE_TIME, memoized, typed

Num: TypeAlias = float | int | sp.Expr


def is_number(x: object) -> bool:
    """A plain Python number (not a SymPy expression)."""
    return isinstance(x, (int, float))


def smax(*args: Num) -> Num:
    if all(is_number(a) for a in args):
        return max(args)
    return sp.Max(*args)


def smin(*args: Num) -> Num:
    if all(is_number(a) for a in args):
        return min(args)
    return sp.Min(*args)


def sfloor(x: Num) -> Num:
    return math.floor(x) if is_number(x) else sp.floor(x)


def sprod(xs: Iterable[Num]) -> Num:
    out: Num = 1
    for x in xs:
        out = out * x
    return out


@dataclass(frozen=True, slots=True)
class CollectiveTime:
    """A collective's time, its bandwidth and latency parts, and the time on each level."""

    time: Num
    bandwidth: Num
    latency: Num
    levels: tuple[tuple[str, Num], ...] = field(default=())
    bandwidths: tuple[tuple[str, Num], ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Links:
    """Bandwidth `w[level]` (W_ici: bidirectional per ICI axis; per-chip egress on switched
    levels) and latency `t[level]` (per hop on ICI, per step elsewhere), numbers or symbols."""

    w: Mapping[str, Num]
    t: Mapping[str, Num]
    _key: tuple[Hashable, ...] | None = field(default=None, init=False, compare=False, repr=False)

    def memo_key(self) -> tuple[Hashable, ...]:
        """The figures as a memo key part (`typed`), made once: the mappings are not changed
        after construction."""
        key = self._key
        if key is None:
            key = (
                tuple((lv, typed(x)) for lv, x in self.w.items()),
                tuple((lv, typed(x)) for lv, x in self.t.items()),
            )
            object.__setattr__(self, "_key", key)
        return key

    @staticmethod
    def uniform(w: Num, t: Num) -> Links:
        return Links({lv: w for lv in LEVELS}, {lv: t for lv in LEVELS})


@dataclass(frozen=True, slots=True)
class Ring:
    """The part of a collective on one physical ICI axis: `n` members `stride` chips apart,
    on a ring (wraparound, 3+ chips) or a line."""

    n: Num
    stride: int
    ring: bool


def ring_level(
    op: str, v: Num, rings: Sequence[Ring], total: Num, model: Model, w: Num, t: Num
) -> tuple[Num, Num]:
    """(bandwidth term, latency term) on ICI: the sharding chapter's ring formulas, Pop Quiz 2's
    line."""
    # A ring sends both ways (the bidirectional W); a line, or a ring of two, is limited by
    # one direction (half of it). Interleaved groups (stride s) share each link s ways.
    widths = [(w if r.ring else w / 2) / r.stride for r in rings]
    all_rings = all(r.ring for r in rings)
    if model == "book":
        hops = sum(r.stride * (r.n / 2 if r.ring else r.n - 1) for r in rings)
    else:
        hops = sum(r.stride * (sfloor(r.n / 2) if r.ring else r.n - 1) for r in rings)
    lat = t * hops
    if op == "CollectivePermute":
        # Every device sends its block to one other device along the shortest path, split
        # over one port per physical axis the block moves along, each one direction of a link
        # (W/2), as a point-to-point Send is priced (passes/send_cost.py); contention ignored;
        # latency: the longest path.
        return v / sum(w / (2 * r.stride) for r in rings), lat
    if op == "AllToAll":
        # The sharding chapter prices an AllToAll of the whole array (bytes_total = N v) at
        # bytes_total / (4 W); v here is one device's block, so the N cancels: v * n / (4 w) on each
        # axis.
        if model == "book":
            bw = smax(*[v * r.n / (4 * wp) for r, wp in zip(rings, widths, strict=True)])
        else:
            bw = smax(
                *[
                    v * sfloor(r.n * r.n / 4) / (r.n * wp)
                    for r, wp in zip(rings, widths, strict=True)
                ]
            )
        return bw, lat
    frac = 1 if (model == "book" and all_rings) else (total - 1) / total
    bw = v * frac / sum(widths)
    if op == "AllReduce":
        return 2 * bw, 2 * lat
    return bw, lat


def switched_level(op: str, v: Num, n: Num, model: Model, w: Num, t: Num) -> tuple[Num, Num]:
    """(bandwidth term, latency term) on a switched level: ring algorithm, per-chip egress."""
    if op == "CollectivePermute":
        return v / w, t
    frac = 1 if model == "book" else (n - 1) / n
    bw = v * frac / w
    lat = t * (n - 1)
    if op == "AllReduce":
        return 2 * bw, 2 * lat
    return bw, lat


def combine(model: Model, bw: Num, lat: Num) -> Num:
    """The book's max(bandwidth, latency), or their sum (`exact`)."""
    return smax(bw, lat) if model == "book" else bw + lat


def _collective_key(
    op: str,
    v: Num,
    axes: Sequence[str],
    size_of: Callable[[str], Num],
    model: Model,
    topo: Topology | None,
    links: Links,
) -> tuple[Hashable, ...]:
    return (
        op,
        typed(v),
        tuple(axes),
        tuple(typed(size_of(a)) for a in axes),
        model,
        topo,
        links.memo_key(),
    )


@memoized(COLLECTIVE_TIME, _collective_key)
def collective_time(
    op: str,
    v: Num,
    axes: Sequence[str],
    size_of: Callable[[str], Num],
    model: Model,
    topo: Topology | None,
    links: Links,
) -> CollectiveTime:
    """Time of `op` moving `v` bytes over mesh `axes`, level by level.

    Hierarchical (the sharding chapter for ICI; the usual reduce-inside, across, then inside again):
    an AllGather gathers the outer level first on the smaller data, a ReduceScatter the inner one
    first; an AllReduce reduce-scatters inside, all-reduces across, all-gathers inside; an
    AllToAll pays every level on the full V.
    """
    parts: dict[str, list[tuple[str, Num]]] = {}
    symbolic = any(not is_number(size_of(a)) for a in axes)
    for a in axes:
        n = size_of(a)
        if is_number(n) and n == 1:
            continue
        link = topo.link(a) if topo is not None else None
        if link is not None and link.size == 1:
            continue  # one device: no ring and no links (`AllGather_ZX` with Z=1 is AllGather_X)
        level = link.level if link is not None else "ici"
        if link is not None and level == "nvlink" and link.inner is not None:
            # The axis crosses NVLink domains: `inner` devices per domain, the rest over IB.
            inner = link.inner if is_number(n) else sp.Integer(link.inner)
            if inner > 1:
                parts.setdefault("nvlink", []).append((a, inner))
            outer = n // inner if is_number(n) else n / inner
            if not (is_number(outer) and outer == 1):
                parts.setdefault("ib", []).append((a, outer))
            continue
        parts.setdefault(level, []).append((a, n))
    order = [lv for lv in LEVELS if lv in parts]
    if not order:
        return CollectiveTime(0, 0, 0, ())
    sizes = {lv: sprod(n for _, n in parts[lv]) for lv in order}

    def level_terms(kind: str, lv: str, vol: Num) -> tuple[Num, Num]:
        if lv in SWITCHED:
            return switched_level(kind, vol, sizes[lv], model, links.w[lv], links.t[lv])
        return ring_level(
            kind, vol, _rings(parts[lv], topo, symbolic), sizes[lv], model, links.w[lv], links.t[lv]
        )

    per_level: list[tuple[str, Num, Num]] = []
    if op in ("AllToAll", "CollectivePermute"):
        for lv in order:
            bw, lat = level_terms(op, lv, v)
            per_level.append((lv, bw, lat))
    elif op == "AllReduce":
        shrink: Num = 1
        for i, lv in enumerate(order):
            vol = v / shrink
            if i < len(order) - 1:
                bw, lat = level_terms("ReduceScatter", lv, vol)
                per_level.append((lv, 2 * bw, 2 * lat))
            else:
                bw, lat = level_terms("AllReduce", lv, vol)
                per_level.append((lv, bw, lat))
            shrink = shrink * sizes[lv]
    else:
        shrink = 1
        for lv in order:
            bw, lat = level_terms(op, lv, v / shrink)
            per_level.append((lv, bw, lat))
            shrink = shrink * sizes[lv]
    bw_total = sum(b for _, b, _ in per_level)
    lat_total = sum(x for _, _, x in per_level)
    levels = tuple((lv, combine(model, b, x)) for lv, b, x in per_level)
    time = sum(t for _, t in levels) if len(levels) > 1 else levels[0][1]
    return CollectiveTime(
        time, bw_total, lat_total, levels, tuple((lv, b) for lv, b, _ in per_level)
    )


def _rings(
    parts: list[tuple[str, Num]], topo: Topology | None, symbolic: bool = False
) -> list[Ring]:
    """Group the ICI axes of a collective by physical axis."""
    if topo is None:
        return [Ring(n, 1, True) for _, n in parts]
    # physical axis -> (members, stride, the axis, the members' count where known)
    groups: dict[str, tuple[Num, int, PhysicalAxis, int | None]] = {}
    for a, n in parts:
        link = topo.link(a)
        phys = link.physical or (a,)
        if len(phys) > 1:  # one mesh axis spanning several physical axes: each is a full axis
            for p in phys:
                pa = topo.phys(p)
                groups[p] = (
                    pa.length if pa.length is not None else n ** sp.Rational(1, len(phys)),
                    1,
                    pa,
                    pa.length,
                )
            continue
        pa = topo.phys(phys[0])
        if phys[0] in groups:
            m, stride, _, known = groups[phys[0]]
            groups[phys[0]] = (
                m * n,
                min(stride, link.stride),
                pa,
                None if known is None or link.size is None else known * link.size,
            )
        else:
            groups[phys[0]] = (n, link.stride, pa, link.size)
    rings = []
    for n, stride, pa, known in groups.values():
        # A group closes a ring only if it goes all the way round: the 2 inner chips of an
        # 8-chip ring (stride 1) are a line of 2, joined by one link, not a ring.
        around = pa.length is None or known is None or known * stride == pa.length
        ring = pa.wrap and (pa.length is None or pa.length >= 3) and around
        if symbolic and is_number(n):
            n = sp.Integer(n)  # keep formulas exact: 7/8, not 0.875
        rings.append(Ring(n, stride, ring))
    return rings


def ring_collective_time(
    op: str, v: Num, sizes: list[Num], model: Model, w: Num, t: Num
) -> CollectiveTime:
    """`op` over full rings of the given sizes (the first, topology-free model of the sharding
    chapter).

    >>> ring_collective_time("AllGather", 2 * 1024 * 4096 / 4, [4], "book", 9e10, 1e-6).time
    2.33...e-05
    """
    names = [f"a{i}" for i in range(len(sizes))]
    by = dict(zip(names, sizes, strict=True))
    return collective_time(op, v, names, by.__getitem__, model, None, Links.uniform(w, t))
