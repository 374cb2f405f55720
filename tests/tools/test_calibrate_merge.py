"""Several `shardc calibrate` runs as one (shardc.tools.calibrate.merge): each case at its median
over the runs, the least minimum, the clocks' medians; runs that cannot be merged are refused."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardc.hardware.calibration import Calibration, ClockFit, Row
from shardc.tools.calibrate.merge import MergeError, merge


def _run(times: dict[str, float], mhz: float | None = 1400.0, chip: str = "h100") -> Calibration:
    rows = tuple(
        Row(case, "matmul", "bf16", 1e12, 1e8, t, 0.9 * t, 1.1 * t) for case, t in times.items()
    )
    return Calibration(
        chip,
        0.7,
        0.9,
        0.0,
        0.0,
        "measured",
        (("date", "2026-01-01"), ("software", "jax 1"), ("device", "gpu")),
        rows,
        clock=ClockFit(1980.0, mhz, 690.0) if mhz is not None else None,
    )


@given(st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=7))
def test_each_case_is_the_median_of_the_runs(times):
    m = merge([_run({"square_8": t}) for t in times])
    ordered = sorted(times)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    (row,) = m.rows
    assert row.median_s == pytest.approx(median)
    assert row.min_s == pytest.approx(0.9 * min(times))
    assert min(times) <= row.median_s <= max(times) and m.runs == len(times)


def test_the_clocks_are_the_median_of_the_runs_that_read_them():
    m = merge([_run({"a": 1.0}, 1300.0), _run({"a": 1.0}, None), _run({"a": 1.0}, 1500.0)])
    assert m.clock == ClockFit(1980.0, 1400.0, 690.0)
    assert merge([_run({"a": 1.0}, None)]).clock is None


def test_a_case_missing_from_a_run_takes_the_others():
    m = merge([_run({"a": 1.0, "b": 2.0}), _run({"a": 3.0})])
    assert {r.case: r.median_s for r in m.rows} == {"a": 2.0, "b": 2.0}


def test_runs_that_cannot_be_merged_are_refused():
    with pytest.raises(MergeError, match="no runs"):
        merge([])
    with pytest.raises(MergeError, match="different chips"):
        merge([_run({"a": 1.0}), _run({"a": 1.0}, chip="h200")])
    with pytest.raises(MergeError, match="no measured rows"):
        merge([dataclasses.replace(_run({"a": 1.0}), rows=())])
    other = _run({"a": 1.0})
    other = dataclasses.replace(
        other, rows=tuple(dataclasses.replace(r, flops=2e12) for r in other.rows)
    )
    with pytest.raises(MergeError, match="different work"):
        merge([_run({"a": 1.0}), other])
