"""Seconds of one collective under shardc's own model, with the figures the planner uses.

The planner's numbers come from the chip, then `--set` overrides; without a chip W = 1 and
t = 0, so costs are bytes / W_ici. Topology-aware: mesh axes on ICI / NVLink / IB / DCN.
XLA's collectives go through the same code over their real device groups: a group that is part
of a mesh axis is a collective over that sub-axis on the axis's links (a mesh axis sharing the
physical axis, as `@ici(x)` declares one), a collective-permute is point-to-point sends
(`passes.send_cost`). A collective that cannot be placed, or that crosses a level the chip has
no bandwidth figure for, gets no time and says why: nothing is priced at a placeholder.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from shardc.hardware.levels import LEVEL_NAMES, LEVELS
from shardc.lang.layout import Layout
from shardc.passes.context import Model
from shardc.passes.cost_model import CollectiveTime, Links, collective_time
from shardc.passes.ir import AxisLink, PhysicalAxis, Topology
from shardc.passes.layout_cost import transfer_time
from shardc.passes.permute_cost import pairs_time
from shardc.passes.symbols import HardwareSymbols, planning_figures
from shardc.tools.xla.groups import Groups, SubAxis, pair_coords


@dataclass(frozen=True, slots=True)
class Hardware:
    """Figures for costing: per-level W and t, C per dtype, the program's topology.

    `unit` is "s", or "B" when no chip or W_ici is known (costs are then bytes / W_ici).
    """

    links: Links
    flops: Callable[[str], float | None]
    unit: str
    topology: Any = None
    nvlink_domain: int | None = None
    figured: frozenset[str] = frozenset(LEVELS)
    """Levels with a bandwidth figure (every level when costs are bytes / W_ici)."""

    @property
    def w_ici(self) -> float:
        return float(self.links.w["ici"])

    @property
    def t_hop(self) -> float:
        return float(self.links.t["ici"])


def hardware(
    chip: Any,
    bindings: Mapping[str, float],
    names: frozenset[str],
    topology: Any = None,
    precision: str = "default",
) -> Hardware:
    """The planner's figures for a chip (or none) and the `--set` bindings."""
    syms = HardwareSymbols(names)
    links, values = planning_figures(chip, bindings, names, precision)
    unit = "s" if chip is not None or "W_ici" in bindings else "B"
    figured = (
        frozenset(lv for lv in LEVELS if syms.w(lv).name in values)
        if unit == "s"
        else frozenset(LEVELS)
    )

    def flops(dtype: str) -> float | None:
        return values.get(syms.flops(dtype).name)

    return Hardware(links, flops, unit, topology, getattr(chip, "nvlink_domain", None), figured)


def collective_seconds(
    op: str,
    v: float,
    axes: tuple[str, ...],
    size: Callable[[str], float],
    model: Model,
    hw: Hardware,
    src: Layout | None = None,
    dst: Layout | None = None,
) -> float:
    """Time of `op` moving V = `v` bytes over mesh `axes`, as the planner prices it: from `src`
    to `dst` where given (a CollectivePermute over its pairs, `passes.layout_cost.transfer_time`),
    else the sharding chapter's formulas."""
    if src is not None and dst is not None:
        return float(transfer_time(op, v, axes, src, dst, size, model, hw.topology, hw.links).time)
    return float(collective_time(op, v, axes, size, model, hw.topology, hw.links).time)


# ---- XLA's collectives over their real device groups --------------------------------------------


@dataclass(frozen=True, slots=True)
class Priced:
    """A collective's time, or None and why it has none."""

    time: float | None
    why: str = ""


def topology_of(hw: Hardware, mesh: Mapping[str, int]) -> Topology:
    """The program's topology; without one, every axis its own full ring (the book's default)."""
    if hw.topology is not None:
        return hw.topology
    return Topology(
        tuple(AxisLink(a, "ici", (a,), 1, None, n) for a, n in mesh.items()),
        tuple(PhysicalAxis(a, n, True, "no topology: a full ring") for a, n in mesh.items()),
        "none",
    )


def sub_link(
    sub: SubAxis, topo: Topology, mesh: Mapping[str, int], domain: int | None
) -> AxisLink | None:
    """Where a part of a mesh axis lives: its parent's links, `members` devices `stride` apart
    (None when it does not fall on whole physical axes or within one)."""
    parent = topo.link(sub.axis)
    if sub.whole:
        return parent
    if parent.level == "ici":
        phys = parent.physical or (sub.axis,)
        if len(phys) == 1:
            return AxisLink(sub.name, "ici", phys, parent.stride * sub.stride, None, sub.members)
        lengths = [topo.phys(p).length for p in phys]
        if any(n is None for n in lengths):
            return None
        known = [int(n) for n in lengths if n is not None]
        place = [math.prod(known[j + 1 :]) for j in range(len(known))]  # the first is major
        span = sub.stride * sub.members
        for i in range(len(phys)):
            for j in range(i + 1, len(phys)):
                if sub.stride == place[j] and span == place[i] * known[i]:
                    return AxisLink(sub.name, "ici", phys[i : j + 1], 1, None, sub.members)
        for j, p in enumerate(phys):
            if sub.stride % place[j] == 0 and span <= place[j] * known[j]:
                return AxisLink(sub.name, "ici", (p,), sub.stride // place[j], None, sub.members)
        return None
    if parent.level == "nvlink":
        # As the topology pass splits an axis across NVLink domains (mesh order, major first).
        order = [x.axis for x in topo.links if x.level == "nvlink"]
        later = order[order.index(sub.axis) + 1 :] if sub.axis in order else []
        stride = math.prod(mesh[a] for a in later) * sub.stride
        inner: int | None = None
        if domain is not None and stride * sub.members > domain:
            inner = 1 if stride >= domain else max(1, domain // stride)
        return AxisLink(sub.name, "nvlink", (), 1, inner, sub.members)
    return AxisLink(sub.name, parent.level, (), 1, None, sub.members)


def _figured(t: CollectiveTime, hw: Hardware) -> Priced:
    missing = [lv for lv, _ in t.levels if lv not in hw.figured]
    if missing:
        return Priced(
            None,
            "the chip has no bandwidth figure for " + ", ".join(LEVEL_NAMES[lv] for lv in missing),
        )
    return Priced(float(t.time))


def group_seconds(
    op: str,
    v: float,
    subs: tuple[SubAxis, ...],
    mesh: Mapping[str, int],
    model: Model,
    hw: Hardware,
) -> Priced:
    """`op` moving V = `v` bytes over mesh axes and sub-axes, with `collective_time`."""
    topo = topology_of(hw, mesh)
    extra: list[AxisLink] = []
    for sub in subs:
        link = sub_link(sub, topo, mesh, hw.nvlink_domain)
        if link is None:
            return Priced(
                None, f"{sub.name} does not fall on whole physical axes of {sub.axis} or within one"
            )
        if not sub.whole:
            extra.append(link)
    if extra:
        topo = Topology(topo.links + tuple(extra), topo.physical, topo.family)
    sizes = {s.name: s.members for s in subs}
    return _figured(
        collective_time(op, v, tuple(sizes), sizes.__getitem__, model, topo, hw.links), hw
    )


def permute_seconds(
    v: float, pairs: Groups, mesh: Mapping[str, int], model: Model, hw: Hardware
) -> tuple[tuple[str, ...], Priced]:
    """The mesh axes a collective-permute moves along, and its time as point-to-point sends,
    priced as the planner prices its own permutes (`passes.permute_cost.pairs_time`)."""
    cs = pair_coords(pairs, mesh)
    if cs is None:
        return (), Priced(None, "a source or target is outside the mesh")
    names = tuple(mesh)
    axes = tuple(a for k, a in enumerate(names) if any(s[k] != t[k] for s, t in cs))
    if not axes:
        return axes, Priced(0.0)
    size = {a: float(n) for a, n in mesh.items()}.__getitem__
    return axes, _figured(
        pairs_time(v, names, cs, size, dict(mesh).get, model, topology_of(hw, mesh), hw.links), hw
    )
