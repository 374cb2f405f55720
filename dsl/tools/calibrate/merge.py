"""Several runs of `shardc calibrate` as one: each case's times and the clocks, the median over
the runs, so that one warm or cool run does not set a chip's figures.

A row takes the median over the runs of its median and 90th percentile, and the minimum of
its minima; the clocks take the median of each figure over the runs that read them. The
merged rows are fitted again (`shardc calibrate --from`), not averaged as figures.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from shardc.hardware.calibration import Calibration, ClockFit, Row


class MergeError(ValueError):
    """Runs that cannot be merged: another chip, no rows, or a case measured differently."""


@dataclass(frozen=True, slots=True)
class Merged:
    """The runs' rows and clocks as one run, and what the provenance says of them."""

    rows: tuple[Row, ...]
    clock: ClockFit | None
    runs: int
    software: str
    device: str
    dates: tuple[str, ...]


def merge(runs: Sequence[Calibration]) -> Merged:
    """The median run of `runs` (calibrations with measured rows, one chip).

    >>> from shardc.hardware.calibration import Calibration, Row
    >>> def run(t, mhz):
    ...     row = Row("square_8", "matmul", "bf16", 1e3, 1e2, t, t / 2, t * 2)
    ...     return Calibration("h100", 0.7, 0.9, 0.0, 0.0, "measured", (("date", "d"),),
    ...                        (row,), clock=ClockFit(1980.0, mhz, 700.0))
    >>> m = merge([run(1.0, 1400.0), run(3.0, 1500.0), run(2.0, 1300.0)])
    >>> m.rows[0].median_s, m.rows[0].min_s, m.clock.sustained_mhz, m.runs
    (2.0, 0.5, 1400.0, 3)
    """
    if not runs:
        raise MergeError("no runs to merge")
    chips = {c.chip for c in runs}
    if len(chips) > 1:
        raise MergeError(f"runs of different chips: {', '.join(sorted(chips))}")
    by_case: dict[str, list[Row]] = {}
    for cal in runs:
        if not cal.rows:
            raise MergeError(f"{cal.path or cal.chip}: no measured rows ([[rows]])")
        for row in cal.rows:
            by_case.setdefault(row.case, []).append(row)
    rows = []
    for case, same in by_case.items():
        first = same[0]
        for other in same[1:]:
            if (other.kind, other.dtype, other.flops, other.bytes, other.precision) != (
                first.kind,
                first.dtype,
                first.flops,
                first.bytes,
                first.precision,
            ):
                raise MergeError(f"case {case!r} measures different work in different runs")
        rows.append(
            replace(
                first,
                median_s=statistics.median(r.median_s for r in same),
                min_s=min(r.min_s for r in same),
                p90_s=statistics.median(r.p90_s for r in same),
                fitted_s=None,
            )
        )
    clocks = [c.clock for c in runs if c.clock is not None]
    clock = (
        ClockFit(
            statistics.median(c.boost_mhz for c in clocks),
            statistics.median(c.sustained_mhz for c in clocks),
            statistics.median(c.power_w for c in clocks if c.power_w is not None)
            if any(c.power_w is not None for c in clocks)
            else None,
        )
        if clocks
        else None
    )

    def said(key: str) -> str:
        values = sorted({dict(c.provenance).get(key, "") for c in runs} - {""})
        return "; ".join(values)

    dates = tuple(sorted({dict(c.provenance).get("date", "") for c in runs} - {""}))
    return Merged(tuple(rows), clock, len(runs), said("software"), said("device"), dates)
