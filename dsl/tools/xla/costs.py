"""Seconds of one collective under shardc's own model, with the figures the planner uses.

The planner's numbers come from the chip, then `--set` overrides; without a chip W = 1 and
t = 0, so costs are bytes / W_ici. Topology-aware: mesh axes on ICI / NVLink / IB / DCN.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from shardc.passes.cost_model import Links, Model, collective_time
from shardc.passes.symbols import HardwareSymbols, planning_figures


@dataclass(frozen=True, slots=True)
class Hardware:
    """Figures for costing: per-level W and t, C per dtype, the program's topology.

    `unit` is "s", or "B" when no chip or W_ici is known (costs are then bytes / W_ici).
    """

    links: Links
    flops: Callable[[str], float | None]
    unit: str
    topology: Any = None

    @property
    def w_ici(self) -> float:
        return float(self.links.w["ici"])

    @property
    def t_hop(self) -> float:
        return float(self.links.t["ici"])


def hardware(chip: Any, bindings: Mapping[str, float], names: frozenset[str],
             topology: Any = None) -> Hardware:
    """The planner's figures for a chip (or none) and the `--set` bindings."""
    syms = HardwareSymbols(names)
    links, values = planning_figures(chip, bindings, names)
    unit = "s" if chip is not None or "W_ici" in bindings else "B"

    def flops(dtype: str) -> float | None:
        return values.get(syms.flops(dtype).name)

    return Hardware(links, flops, unit, topology)


def collective_seconds(op: str, v: float, axes: tuple[str, ...], size: Callable[[str], float],
                       model: Model, hw: Hardware) -> float:
    """Time of `op` moving V = `v` bytes over mesh `axes` (the sharding chapter's formulas, as the planner)."""
    return float(collective_time(op, v, axes, size, model, hw.topology, hw.links).time)
