"""Point-to-point sends (`Send_{X: i -> j}(A)`, `Send_{X: +k}(A)`): their time over the ICI,
NVLink and switched levels, over numbers or SymPy expressions alike.

A Send moves one block per device along the axes it names (dsl/lang/send.py). On ICI the point form
takes the shortest way (min(d, n-d) hops on a ring, |d| on a line) and the source splits the block
over one port per axis that moves (two where both ways round a ring are as short), each one
direction of a link (W_ici/2); in the shift form every device sends at once, routed in dimension
order, and the busiest link of each physical axis sets the bandwidth term. On a switched level a
Send is one step through the switch at the chip's egress. Levels add, as for the hierarchical
collectives. Formulas and sources: docs/cost-model.md, "Point-to-point sends".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sympy as sp

from shardc.hardware.levels import LEVELS, SWITCHED
from shardc.passes.context import Model
from shardc.passes.cost_model import CollectiveTime, Links, Num, combine, is_number, smax, smin
from shardc.passes.ir import AxisLink, Topology

if TYPE_CHECKING:
    from shardc.lang.send import SendAxis


@dataclass(frozen=True, slots=True)
class _Leg:
    """A Send's movement along one physical ICI axis: the hops of its longest path, and the
    point form's ports or the shift form's load (blocks over the busiest link one way)."""

    phys: str
    hops: Num
    ports: int = 0
    load: Num = 0


def send_time(
    v: Num,
    moves: Sequence[SendAxis],
    size_of: Callable[[str], Num],
    model: Model,
    topo: Topology | None,
    links: Links,
    known: Callable[[str], int | None] | None = None,
) -> CollectiveTime:
    """Time of a Send of `v` bytes per device; `moves` are its `shardc.lang.send.SendAxis` entries.

    `size_of` gives each axis's size as it appears in formulas (a symbol, or a number); `known`
    its number where there is one: the point form's distances and ports and the shift form's
    short way round depend on it. Without `known`, the numbers `size_of` gives are used.

    >>> from shardc.lang.send import SendAxis
    >>> q5 = [SendAxis("X", src=0, dst=3), SendAxis("Y", src=0, dst=3)]
    >>> t = send_time(1.6e7, q5, {"X": 4, "Y": 4}.__getitem__, "book", None,
    ...               Links.uniform(9e10, 1e-6))
    >>> round(t.latency * 1e6, 9), t.bandwidth == 1.6e7 / 9e10  # rings of 4: 1 hop per axis
    (2.0, True)
    """
    if known is None:

        def known(a: str) -> int | None:
            n = size_of(a)
            return int(n) if is_number(n) else None

    ici: list[_Leg] = []
    switched: set[str] = set()
    shift = any(m.shift is not None for m in moves)
    for m in moves:
        n_known = known(m.axis)
        if n_known == 1:
            continue
        link = topo.link(m.axis) if topo is not None else None
        level = link.level if link is not None else "ici"
        if link is not None and level == "nvlink" and link.inner is not None:
            switched.update(_domain_levels(m, n_known, link.inner))
        elif level in SWITCHED:
            switched.add(level)
        else:
            ici.extend(_legs(m, size_of(m.axis), n_known, link, topo))
    per_level: list[tuple[str, Num, Num]] = []
    if ici:
        w, t = links.w["ici"], links.t["ici"]
        if shift:
            loads: dict[str, Num] = {}
            for leg in ici:
                loads[leg.phys] = loads.get(leg.phys, 0) + leg.load
            bw = smax(*[2 * x * v / w for x in loads.values()])
        else:
            ports = sum(leg.ports for leg in ici)
            bw = 2 * v / (ports * w) if ports else 0
        lat = t * sum(leg.hops for leg in ici)
        if bw != 0:
            per_level.append(("ici", bw, lat))
    per_level.extend((lv, v / links.w[lv], links.t[lv]) for lv in LEVELS if lv in switched)
    if not per_level:
        return CollectiveTime(0, 0, 0, ())
    levels = tuple((lv, combine(model, b, x)) for lv, b, x in per_level)
    time = sum(x for _, x in levels) if len(levels) > 1 else levels[0][1]
    return CollectiveTime(
        time,
        sum(b for _, b, _ in per_level),
        sum(x for _, _, x in per_level),
        levels,
        tuple((lv, b) for lv, b, _ in per_level),
    )


def by_distance(axis: str, topo: Topology | None) -> bool:
    """Whether `send_time` prices a point entry along `axis` (`X: i -> j`) by its distance
    |j - i| alone: an ICI axis on one physical axis (`_point_leg`), so two entries at the same
    distance cost the same. Not a switched level's, nor a mesh axis spanning several physical
    axes, whose entries are priced by their ends (this answers False for them, which is
    always safe).

    >>> by_distance("X", None)
    True
    """
    if topo is None:
        return True
    link = topo.link(axis)
    return link.level not in SWITCHED and len(link.physical or (axis,)) == 1


def _legs(
    m: SendAxis, n: Num, n_known: int | None, link: AxisLink | None, topo: Topology | None
) -> list[_Leg]:
    """The physical ICI axes one Send entry moves along (several for a spanning mesh axis)."""
    phys = (link.physical or (m.axis,)) if link is not None else (m.axis,)
    if topo is None or link is None or len(phys) == 1:
        pa = topo.phys(phys[0]) if topo is not None else None
        ring = pa is None or (pa.wrap and (pa.length is None or pa.length >= 3))
        stride = link.stride if link is not None else 1
        return [
            _point_leg(phys[0], _offset(m), n_known, ring, stride)
            if m.shift is None
            else _shift_leg(phys[0], m.shift, n, n_known, ring, stride)
        ]
    maybe_lengths = [topo.phys(p).length for p in phys]
    lengths = [length for length in maybe_lengths if length is not None]
    if n_known is None or len(lengths) < len(maybe_lengths):
        # A symbolic axis spanning several physical ones: one ring of n, as symbolic axes are.
        return [
            _point_leg(phys[0], _offset(m), n_known, True, 1)
            if m.shift is None
            else _shift_leg(phys[0], m.shift, n, n_known, True, 1)
        ]
    rings = [topo.phys(p).wrap and length >= 3 for p, length in zip(phys, lengths, strict=True)]
    if m.shift is None:
        src, dst = _ends(m)
        pairs = zip(_digits(src, lengths), _digits(dst, lengths), strict=True)
        return [
            _point_leg(p, b - a, length, ring, 1)
            for p, length, ring, (a, b) in zip(phys, lengths, rings, pairs, strict=True)
        ]
    return [
        _Leg(p, far, load=load)
        for p, (load, far) in zip(phys, _routed(m.shift, lengths, rings), strict=True)
    ]


def _ends(m: SendAxis) -> tuple[int, int]:
    """A point entry's source and destination (both set where `shift` is None)."""
    assert m.src is not None and m.dst is not None, m
    return m.src, m.dst


def _offset(m: SendAxis) -> int:
    """A point entry's destination less its source."""
    src, dst = _ends(m)
    return dst - src


def _point_leg(phys: str, d: int, n: Num, ring: bool, stride: int) -> _Leg:
    d = abs(d)
    if not d:
        return _Leg(phys, 0)
    dist, tie = (smin(d, n - d), 2 * d == n) if ring else (d, False)
    return _Leg(phys, stride * dist, ports=2 if tie else 1)


def _shift_leg(phys: str, k: int, n: Num, n_known: int | None, ring: bool, stride: int) -> _Leg:
    """Every device sends k steps on, that is s = k mod n reduced to (-n/2, n/2]: a ring takes
    the short way round, |s| hops, splitting evenly when both ways are as short (|s| = n/2); a
    line carries |s| = min(k', n-k') blocks over its busiest link each way (the part that wraps
    runs back over the other direction) and its longest path is n - |s| hops. `n` is the size
    as formulas show it; `n_known` its number (None: symbolic, and taken to be at least 2|k|)."""
    s = k
    if n_known is not None:
        s = k % n_known
        s = s - n_known if 2 * s > n_known else s
    near = abs(s)
    tie = n_known is not None and 2 * near == n_known
    load = sp.Rational(near, 2) if ring and tie else near
    return _Leg(phys, stride * (near if ring else n - near), load=stride * load)


def _digits(c: int, lengths: list[int]) -> list[int]:
    """Coordinates on each physical axis of a mesh axis spanning them, the first one major."""
    out = []
    for length in reversed(lengths):
        out.append(c % length)
        c //= length
    return out[::-1]


def _routed(k: int, lengths: list[int], rings: list[bool]) -> list[tuple[Num, int]]:
    """A shift by `k` along a mesh axis spanning several physical axes, routed device by device
    (dimension order, the major axis first, the short way round a ring, ties split): for each
    physical axis, the busiest link's load one way and the longest path's hops."""
    n = math.prod(lengths)
    out: list[tuple[Num, int]] = []
    for j, length in enumerate(lengths):
        load: dict[tuple[tuple[tuple[int, ...], tuple[int, ...]], int, int], Num] = {}
        far = 0
        for c in range(n):
            here, there = _digits(c, lengths), _digits((c + k) % n, lengths)
            d = (there[j] - here[j]) % length
            if not d:
                continue
            if not rings[j]:
                ways = [(1 if there[j] > here[j] else -1, abs(there[j] - here[j]), 1)]
            elif 2 * d == length:
                ways = [(1, d, sp.Rational(1, 2)), (-1, d, sp.Rational(1, 2))]
            else:
                ways = [(1, d, 1)] if 2 * d < length else [(-1, length - d, 1)]
            rest = (tuple(there[:j]), tuple(here[j + 1 :]))  # axes before j are routed already
            for step, hops, share in ways:
                far = max(far, hops)
                p = here[j]
                for _ in range(hops):
                    load[(rest, p, step)] = load.get((rest, p, step), 0) + share
                    p = (p + step) % length
        out.append((max(load.values(), default=0), far))
    return out


def _domain_levels(m: SendAxis, n: int | None, inner: int) -> list[str]:
    """The levels a Send along an NVLink axis spanning domains of `inner` devices uses."""
    if m.shift is None:
        src, dst = _ends(m)
        return ["nvlink" if src // inner == dst // inner else "ib"]
    if n is None:
        return ["nvlink", "ib"]
    same = [c // inner == ((c + m.shift) % n) // inner for c in range(n)]
    return [lv for lv, used in (("nvlink", any(same)), ("ib", not all(same))) if used]
