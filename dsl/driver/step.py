"""Figures of the step computed over a report's numbers: the compute-bound conditions, what
bounds it, each op's time over the step, the list schedule (`passes.schedule`), the exposed
communication, MFU and HFU."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import sympy as sp

from shardc.passes.sizes import known_sizes
from shardc.passes.symbols import on_expected, size_symbol

if TYPE_CHECKING:
    from shardc.driver.report import Report


def conditions(r: Report) -> tuple[Any, ...]:
    """`Report.conditions`: the compute-bound conditions on the roofline, or with `on="expected"`
    (`--on expected`) on the calibrated rates (`passes.symbols.on_expected`)."""
    if r.options.get("on") != "expected":
        return r.cost.conditions
    return tuple(
        dataclasses.replace(
            c,
            relation=on_expected(c.relation, r.cost.symbols),
            text=f"{c.text}, on T_expected's rates",
        )
        for c in r.cost.conditions
    )


def holds(r: Report, rel) -> bool | None:
    lhs, rhs = r.value(rel.lhs), r.value(rel.rhs)
    if lhs is None or rhs is None:
        return None
    return (
        bool(lhs > rhs)
        if isinstance(rel, sp.StrictGreaterThan)
        else bool(rel.subs({rel.lhs: lhs, rel.rhs: rhs}))
    )


def bound(r: Report) -> str | None:
    vals = {
        k: r.value(r.totals[f])
        for k, f in (("compute", "t_math_s"), ("hbm", "t_hbm_s"), ("comms", "t_comms_s"))
    }
    if any(v is None for v in vals.values()):
        return None
    return max(vals, key=lambda k: (vals[k] or 0.0, k == "compute"))


def calibrated(r: Report) -> bool:
    """Whether the chip has a calibration (else T_expected is the roofline's T_lower)."""
    return r.chip is not None and r.chip.calibration is not None


def step_durations(
    r: Report, expected: bool = False, hidden: dict[int, float] | None = None
) -> dict[int, float] | None:
    """Each op's time over the step (all its runs; twice for an op the backward pass
    recomputes under --remat), by op index; None unless every op has a number. Under
    `--remat none` the collectives run again (the AllGathers of sequence-parallel inputs
    kept sharded) are left to `busy_after`. `expected`: each op's calibrated expected time
    instead of its roofline time. `hidden`: `busy_after(r)`, where the caller has it."""
    durations: dict[int, float] = {}
    hidden = busy_after(r) if hidden is None else hidden
    for c in r.ops:
        t = c.t_expected if expected else c.time
        v = r.value(t if c.count == 1 else t * c.count)  # SymPy's `t * 1` is `t`, built
        if v is None:
            return None
        again = c.index in r.cost.recomputed and c.index not in hidden
        durations[c.index] = v * (2 if again else 1)
    return durations


def busy_after(r: Report) -> dict[int, float]:
    """Under `--remat none`, each collective the backward pass runs again (an AllGather of
    a sequence-parallel input kept sharded) and its time: the network carries it again but
    compute does not wait for it, as Megatron-LM overlaps it with the input-gradient
    matmul (Korthikanti et al. 2022, section 4.2.2). `passes.schedule.schedule` keeps the
    network busy that long after the op."""
    if r.options.get("remat") != "none":
        return {}
    out = {}
    for c in r.ops:
        if c.index in r.cost.recomputed and c.kind == "collective":
            out[c.index] = r.value(c.time * c.count) or 0.0
    return out


def mesh_sizes(r: Report) -> dict[str, float]:
    """The mesh axes whose size is a number (`--set` applied)."""
    return {n: float(v) for n, v in known_sizes(r.program.mesh, r.bindings).items()}


def scheduled_step(r: Report, expected: bool = False) -> float | None:
    """T_step of the list schedule (passes/schedule.py: prefetched gathers, async
    reductions, collective matmuls); None unless every op has a number. `expected`: the
    calibrated step over each op's expected time, with overlap that can fail on a calibrated
    chip (`shardc.driver.overlap.expected_schedule`)."""
    from shardc.driver.overlap import expected_schedule
    from shardc.passes.schedule import schedule

    if expected in r.memo.schedules:  # the summary, MFU and HFU all ask for it
        return r.memo.schedules[expected]
    if expected and calibrated(r):
        out = expected_schedule(r)
        step = None if out is None else out[0]
    else:
        hidden = busy_after(r)
        durations = step_durations(r, expected, hidden)
        step = (
            None
            if durations is None
            else schedule(r.program, durations, axis_sizes=mesh_sizes(r), busy_after=hidden)
        )
    r.memo.schedules[expected] = step
    return step


def exposed(r: Report, expected: bool = False) -> dict[int, float] | None:
    """Each collective's exposed part in the scheduled step (`passes.schedule.exposed`):
    the seconds it runs while no compute does, by op index; None unless every op has a
    number. `expected`: in the calibrated step (`shardc.driver.overlap`)."""
    if expected not in r.memo.exposed:
        r.memo.exposed[expected] = _exposed(r, expected)
    found = r.memo.exposed[expected]
    return None if found is None else dict(found)


def _exposed(r: Report, expected: bool) -> dict[int, float] | None:
    from shardc.driver.overlap import expected_schedule
    from shardc.passes.schedule import exposed

    if expected and calibrated(r):
        out = expected_schedule(r)
        return None if out is None else out[1]
    durations = step_durations(r, expected)
    return None if durations is None else exposed(r.program, durations, axis_sizes=mesh_sizes(r))


def utilization(r: Report, expected: bool = False) -> dict[str, float] | None:
    """MFU and HFU of the scheduled step on the report's chip, with the model FLOPs; None
    without a chip or a number for every op.

    MFU = model FLOPs / (devices x peak x T_step), the model FLOPs being every einsum
    counted once over the mesh (no recomputation, no replicated work, no elementwise ops:
    Chowdhery et al. 2022, "PaLM", appendix B); HFU = every FLOP a device runs /
    (peak x T_step). The peak is the chip's bf16 matrix rate. `expected`: over the
    expected schedule (`MFU (expected)`)."""
    if expected not in r.memo.utilization:
        r.memo.utilization[expected] = _utilization(r, expected)
    found = r.memo.utilization[expected]
    return None if found is None else dict(found)


def _utilization(r: Report, expected: bool) -> dict[str, float] | None:
    if r.chip is None:
        return None
    step = scheduled_step(r, expected)
    devices = r.value(sp.Mul(*[size_symbol(n) for n, _ in r.program.mesh]))
    per_device = r.value(r.totals["flops_per_device"])
    model = [r.value(c.flops * c.count) for c in r.ops if c.kind == "einsum"]
    if not step or devices is None or per_device is None or None in model:
        return None
    peak = r.chip.flops_for("bf16")[0]
    total = float(sum(m for m in model if m is not None))
    return {
        "model_flops": total,
        "mfu": total / (devices * peak * step),
        "hfu": per_device / (peak * step),
    }


def op_bound(r: Report, c) -> str | None:
    if c.fused_into is not None:  # its bytes and time are its fused group's root's
        return f"fused into #{c.fused_into}"
    if c.kind == "collective":
        bw, lat = r.value(c.t_bandwidth), r.value(c.t_latency)
        if bw is None or lat is None:
            return None
        return "latency" if lat > bw else "bandwidth"
    m, h = r.value(c.t_math), r.value(c.t_hbm)
    if m is None or h is None or (m == 0 and h == 0):
        return None
    return "compute" if m >= h else "hbm"
