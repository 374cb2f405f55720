"""The document's detail for machines: rows and sections only the JSON writer prints (the arrays,
the step's figures in full, each link of the topology, the regions' piecewise totals), built by
`shardc.driver.sections` beside the sections every format writes, so that one module decides
what a report contains. The text formats have no `_print_` method for these rows, so they skip
them; `DETAIL` sections are built only for a writer that asks for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shardc.driver.document import Section
from shardc.driver.region_totals import has_lines

if TYPE_CHECKING:
    from shardc.driver.report import Report


# ---- rows --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Numbers:
    """Every formula's number under the report's environment (`Report.evaluate`), so that a
    writer can print a formula the rows hold with its value; in the header section."""

    values: Mapping[Any, float | None]


@dataclass(frozen=True, slots=True)
class Array:
    """An array of the program with its bytes per device, in all, and its instances."""

    name: str
    dtype: str
    layout: str
    bytes_per_device: Any
    bytes_total: Any
    count: Any


@dataclass(frozen=True, slots=True)
class Link:
    """A mesh axis's link: its level, the physical axes under it on ICI as (name, length,
    wrap, why), the stride, and a GPU axis's devices per NVLink domain."""

    axis: str
    level: str
    physical: tuple[tuple[str, int | None, bool, str], ...] | None
    stride: int = 1
    inner: int | None = None


@dataclass(frozen=True, slots=True)
class StepDetail:
    """The step's figures every report holds, whether or not its summary shows them: T_step's
    formulas and schedules, MFU and HFU (the expected one with each collective's exposed
    seconds when the chip is calibrated), T_comms by level and the recomputation."""

    step_max: Any
    step_sum: Any
    scheduled: float | None
    scheduled_expected: float | None
    utilization: Mapping[str, float] | None
    utilization_expected: Mapping[str, Any] | None
    comms_by_level: tuple[tuple[str, Any], ...]
    recompute: tuple[Any, Any] | None


@dataclass(frozen=True, slots=True)
class MemoryDetail:
    """The activations the training step keeps, and the options its memory depends on."""

    saved: tuple[str, ...]
    options: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class RegionDetail:
    """What the regions add beyond their rows: each total as a piecewise formula (with
    regions found), and the region whose plan the report shows (condition, share)."""

    piecewise: tuple[tuple[str, str], ...]
    shown: tuple[str, float] | None


# ---- sections ----------------------------------------------------------------------------------
def step_detail(r: Report) -> Section:
    util: dict[str, Any] | None = r.utilization(expected=True)
    if util is not None and r.calibrated:
        parts = r.exposed(expected=True) or {}
        util = {
            **util,
            "exposed_s": [{"index": i, "exposed_s": v} for i, v in sorted(parts.items())],
        }
    recompute = (
        (r.totals["t_recompute_s"], r.totals["recompute_flops_per_device"])
        if "t_recompute_s" in r.totals
        else None
    )
    return Section(
        "step",
        "",
        (
            StepDetail(
                r.totals["t_step_max_s"],
                r.totals["t_step_sum_s"],
                r.scheduled_step(),
                r.scheduled_step(expected=True),
                r.utilization(),
                util,
                tuple(
                    (k[len("t_comms_") : -2], v)
                    for k, v in r.totals.items()
                    if k.startswith("t_comms_") and k != "t_comms_s"
                ),
                recompute,
            ),
        ),
    )


def arrays(r: Report) -> Section:
    return Section(
        "arrays",
        "",
        tuple(
            Array(a.name, a.dtype, a.layout, a.bytes_per_device, a.bytes_total, a.count)
            for a in r.cost.arrays
        ),
    )


def links(r: Report) -> tuple[Link, ...]:
    """Each mesh axis's link (`Report.topology_dict`)."""
    topo = r.program.topology
    if topo is None:
        return ()
    out = []
    for link in topo.links:
        physical = None
        if link.level == "ici":
            physical = tuple(
                (p, topo.phys(p).length, topo.phys(p).wrap, topo.phys(p).why) for p in link.physical
            )
        out.append(Link(link.axis, link.level, physical, link.stride, link.inner))
    return tuple(out)


def region_detail(r: Report) -> Section | None:
    if not has_lines(r):
        return None
    found = r.regions()
    piecewise: tuple[tuple[str, str], ...] = ()
    if found:
        from shardc.driver.region_totals import TOTALS

        piecewise = tuple((key, str(r.piecewise(key))) for _, key, _ in TOTALS)
    shown = r.shown_region
    row = RegionDetail(piecewise, None if shown is None else (shown[0], shown[1]))
    return Section("region_detail", "", (row,))


DETAIL = ("step", "arrays", "region_detail")
"""The sections only a machine format asks for (`Writer.detail`); `--only` does not name them."""

__all__ = [
    "DETAIL",
    "Array",
    "Link",
    "MemoryDetail",
    "Numbers",
    "RegionDetail",
    "StepDetail",
    "arrays",
    "links",
    "region_detail",
    "step_detail",
]
