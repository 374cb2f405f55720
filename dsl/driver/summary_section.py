"""The report's summary section: the totals, the step's schedule and utilization, the
recomputation, T_comms per network level and the bound (`shardc.driver.sections` places it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardc.driver.document import TOTALS, Bound, Calibration, Section, Step, Total, Utilization

if TYPE_CHECKING:
    from shardc.driver.report import Report


def expected_note(r: Report) -> str:
    """Where T_expected's figures come from: the chip's calibration, or none (the roofline)."""
    cal = r.chip.calibration if r.chip is not None else None
    if cal is None:
        who = f"{r.chip.name} has" if r.chip is not None else "no chip, so"
        return f"equals T_lower: {who} no calibration"
    net = ", ".join(f.level for f in cal.network)
    return f"from the calibration of {cal.chip}, {cal.describe_source()}; communication at " + (
        f"the calibrated bus bandwidth on {net}" if net else "the roofline's rate"
    )


def summary(r: Report) -> Section:
    """`TOTALS`, then the step's schedule and utilization where the program trains or overlaps,
    the recomputation, T_comms per network level, and the bound."""
    rows: list[object] = []
    for t in TOTALS:
        expr = r.totals[t.key]
        rows.append(Total(t.label, r.value(expr), t.unit, expr, t.key))
        if t.key == "t_expected_s":
            rows.append(Calibration(expected_note(r)))
    if r.program.params or any(c.overlap for c in r.ops):
        for label, key in (("T_step (max)", "t_step_max_s"), ("T_step (sum)", "t_step_sum_s")):
            rows.append(Step(label, r.value(r.totals[key]), r.totals[key]))
        rows.append(
            Step(
                "T_step (schedule)",
                r.scheduled_step(),
                None,
                "prefetched gathers, async reductions and collective matmuls overlap compute",
            )
        )
        util = r.utilization()
        if util is not None:
            rows.append(Utilization(util["mfu"], util["hfu"]))
        # uncalibrated, the expected schedule is the roofline's: not shown, so not scheduled
        expected = r.utilization(expected=True) if r.calibrated else None
        if expected is not None:
            rows.append(
                Step(
                    "T_step (expected)",
                    r.scheduled_step(expected=True),
                    None,
                    "the same schedule over each op's expected time; weight gathers "
                    "prefetched whole, the first exposed",
                )
            )
            rows.append(Utilization(expected["mfu"], expected["hfu"], expected=True))
            parts = r.exposed(expected=True)
            if parts:
                each = sorted(parts.items(), key=lambda kv: (-kv[1], kv[0]))
                from shardc.lang.units import fmt_value

                listed = ", ".join(f"#{i} {fmt_value(v, 's')}" for i, v in each[:6])
                more = f", {len(each) - 6} more" if len(each) > 6 else ""
                rows.append(
                    Step(
                        "exposed (expected)",
                        sum(parts.values()),
                        None,
                        f"collective time no compute hides: {listed}{more}",
                    )
                )
    if "t_recompute_s" in r.totals:
        expr = r.totals["t_recompute_s"]
        rows.append(
            Step(
                "T_recompute",
                r.value(expr),
                expr,
                f"--remat {r.options.get('remat')}: forward ops the backward pass runs "
                "again, compute in T_math and T_hbm, collectives in T_comms",
            )
        )
    levels = [
        k
        for k in r.totals
        if k.startswith("t_comms_") and k not in ("t_comms_s", "t_comms_critical_s")
    ]
    if len(levels) > 1:
        for key in levels:
            rows.append(
                Step(
                    f"T_comms ({key[len('t_comms_') : -2]})", r.value(r.totals[key]), r.totals[key]
                )
            )
    rows.append(Bound(r.bound()))
    return Section("summary", "summary", tuple(rows), "per device unless noted")


__all__ = ["expected_note", "summary"]
