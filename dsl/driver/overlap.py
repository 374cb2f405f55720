"""A compiled report's calibrated step: the list schedule over each op's expected time with
overlap that can fail (`passes.schedule.expected_schedule`; docs/cost-model.md, "Overlap in the
calibrated step"). `Report.expected_schedule` and `Report.prefetch_ahead` call these."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any


def expected_schedule(
    r: Any, durations: dict[int, float] | None = None, blocking: Collection[int] = ()
) -> tuple[float, dict[int, float]] | None:
    """The calibrated step of report `r` and each collective's exposed part (no collective
    matmuls, prefetch bounded by its buffer and by free HBM, compute slowed beside
    collectives, the collectives in `blocking` holding the compute) over each op's expected
    time, or over `durations`; None unless every op has a number."""
    from shardc.passes.schedule import CONTENTION
    from shardc.passes.schedule import expected_schedule as schedule

    if durations is None:
        durations = r.step_durations(expected=True)
    if durations is None:
        return None
    fit = _fit(r)
    contention = fit.contention if fit is not None and fit.contention is not None else CONTENTION
    return schedule(
        r.program,
        durations,
        busy_after=r.busy_after(),
        ahead=prefetch_ahead(r, durations),
        contention=contention,
        blocking=blocking,
    )


def _fit(r: Any):
    """The chip calibration's `[overlap]` figures, or None."""
    cal = getattr(r.chip, "calibration", None) if r.chip is not None else None
    return getattr(cal, "overlap", None)


def prefetch_ahead(r: Any, durations: Mapping[int, float]) -> dict[int, float]:
    """For each parameter's gather in report `r`, the seconds it may run ahead of its use: its
    time x the share of the gathered weight that the prefetch buffer holds
    (`passes.schedule.PREFETCH_ELEMENTS` elements, or the calibration's `[overlap]
    prefetch_elements`), the buffer no larger than the HBM the program leaves free (a gathered
    weight lives beside the activations)."""
    from shardc.passes.layout_cost import dtype_bytes
    from shardc.passes.schedule import PREFETCH_ELEMENTS

    fit = _fit(r)
    elements = (
        fit.prefetch_elements
        if fit is not None and fit.prefetch_elements is not None
        else PREFETCH_ELEMENTS
    )
    total = r.value(r.memory.total) if r.memory is not None else None
    room = (
        max(0.0, r.chip.hbm_bytes - total) if r.chip is not None and total is not None else math.inf
    )
    out: dict[int, float] = {}
    for c in r.ops:
        if c.kind != "collective" or c.overlap != "prefetch" or c.index not in durations:
            continue
        gathered = r.value(c.comm_bytes)
        if not gathered:
            continue
        size = float(dtype_bytes(r.program.ops[c.index].out.dtype, False))
        buffer = min(elements * size, room)
        out[c.index] = durations[c.index] * min(1.0, buffer / gathered)
    return out
