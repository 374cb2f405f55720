"""A candidate's step, summed: its programs compiled (`compile_parts`), each program's figures
added to running totals (`new_totals`, `add_report`), ZeRO's division of the optimizer state
(`zero_state`), and the step's bound, memory, MFU and HFU (`figures`). `evaluation` sums an
unpipelined layout with these, `pipeline` a pipelined one."""

from __future__ import annotations

from typing import Any

from shardc.hardware import Chip
from shardc.hardware.levels import LEVELS
from shardc.passes.schedule import exposed, exposed_parts, schedule
from shardc.tools.models import ModelCard
from shardc.tools.models.programs import Part, parts
from shardc.tools.models.sharding import Layout, ShardingError
from shardc.tools.plan.candidates import Options


def compile_parts(
    card: ModelCard, chip: Chip, layout: Layout, sequences: int, seq: int, options: Options
) -> list[tuple[Part, Any, dict[int, float]]] | str:
    """Each program of a step of `sequences` sequences, compiled for the chip, with its ops'
    durations; or why one cannot be."""
    from shardc.driver import api
    from shardc.lang.diagnostics import CompileError

    try:
        ps = parts(card, layout, sequences, seq, hw=chip.name)
    except ShardingError as exc:
        return f"not evaluated: {exc}"
    out = []
    for p in ps:
        try:
            r = api.compile(
                p.text,
                hw=chip,
                model=options.model,
                optimizer=options.optimizer,
                remat=options.remat,
                name=f"<{card.name} {p.name}>",
                attention=options.attention,
                explain=False,
                idle_axes=False,
                matmul_precision=options.matmul_precision,
            )
        except CompileError as exc:
            first = exc.diagnostics[0] if exc.diagnostics else None
            return f"not evaluated: the compiler rejects the generated {p.name} program: " + (
                f"[{first.code}] {first.message}" if first else str(exc)
            )
        durations = r.step_durations()
        if durations is None:
            return f"not evaluated: the {p.name} program has unbound sizes"
        out.append((p, r, durations))
    return out


def new_totals() -> dict[str, Any]:
    """Running totals at zero, for `add_report` to add to."""
    return {
        "t_step_s": 0.0,
        "t_step_overlap_revised_s": 0.0,
        "t_step_expected_s": 0.0,
        "t_lower_s": 0.0,
        "t_math_s": 0.0,
        "t_hbm_s": 0.0,
        "t_comms_s": 0.0,
        "flops_per_device": 0.0,
        "model_flops": 0.0,
        "t_comms_by_level_s": {},
        "t_comms_by_role_s": {},
        "t_exposed_by_role_s": {},
        "memory": {},
        "parts": {},
    }


def add_report(
    acc: dict[str, Any], r, p: Part, layout: Layout, n: float, memory_count: float | None = None
) -> None:
    """Add `n` runs of a compiled part's per-device figures to `acc` (its memory
    `memory_count` times, by default `p.count`)."""
    acc["t_lower_s"] += (r.value("t_lower_s") or 0.0) * n
    for key in ("t_math_s", "t_hbm_s", "t_comms_s", "flops_per_device"):
        acc[key] += (r.value(key) or 0.0) * n
    acc["model_flops"] += model_flops(r) * n
    for lv in LEVELS:
        if f"t_comms_{lv}_s" in r.totals:
            _add(acc["t_comms_by_level_s"], lv, (r.value(f"t_comms_{lv}_s") or 0.0) * n)
    for op in r.ops:
        if op.kind == "collective":
            _add(acc["t_comms_by_role_s"], collective_role(op.axes, layout), _op_time(r, op) * n)
    add_memory(acc["memory"], r, p, p.count if memory_count is None else memory_count)


def expected_step(r, roofline: float, durations: dict[int, float] | None = None) -> float:
    """A compiled part's calibrated step (`Report.expected_schedule`: each op's expected
    time, the network's calibrated bus bandwidth, overlap that can fail); the roofline step
    `roofline` on a chip without a calibration. `durations`: the expected durations to
    schedule instead of the report's own."""
    return expected_parts(r, roofline, durations)[0]


def expected_parts(
    r,
    roofline: float,
    durations: dict[int, float] | None = None,
    spans: dict[int, tuple[float, float, str]] | None = None,
    layout: Layout | None = None,
) -> tuple[float, dict[int, float]]:
    """`expected_step` and each collective's exposed part in that schedule, by op index (in
    the roofline's schedule on a chip without a calibration: from its `spans` where the
    caller has them, so it is not scheduled twice). With the `layout`, its context-parallel
    collectives hold the compute (`context_collectives`)."""
    if not r.calibrated:
        if spans is not None:
            return roofline, exposed_parts(spans)
        if durations is None:
            return roofline, r.exposed() or {}
        return roofline, exposed(r.program, durations, axis_sizes=r.mesh_sizes())
    blocking = context_collectives(r, layout) if layout is not None else set()
    out = r.expected_schedule(durations, blocking)
    return (roofline, {}) if out is None else (max(out[0], roofline), out[1])


def context_collectives(r, layout: Layout) -> set[int]:
    """The collectives of context parallelism: a gather of an activation over data axes (the
    keys and values, where the data axes split the sequence) and the ReduceScatter of its
    gradient. The Llama 3 paper's context parallelism gathers K and V whole before the
    attention of the local queries, not in a ring that overlaps compute, and says "the
    all-gather communication latency is exposed in the critical path" (Dubey et al. 2024, "The
    Llama 3 Herd of Models", section 3.3.2); its backward is the same kernel's transpose. So
    the calibrated step runs them with nothing computing beside them."""
    return {
        c.index
        for c in r.ops
        if c.kind == "collective"
        and c.overlap == ""
        and r.program.ops[c.index].op in ("AllGather", "ReduceScatter")
        and collective_role(c.axes, layout) in ("dp", "fsdp")
    }


def add_exposed(acc: dict[str, Any], r, parts: dict[int, float], layout: Layout, n: float) -> None:
    """Add `n` times each collective's exposed seconds to `acc["t_exposed_by_role_s"]`, by
    its role (`collective_role`)."""
    for op in r.ops:
        if op.index in parts:
            _add(acc["t_exposed_by_role_s"], collective_role(op.axes, layout), parts[op.index] * n)


def zero_state(memory: dict[str, float], layout: Layout, options: Options) -> None:
    """ZeRO stages 1 and 2 on a layout that replicates the weights over its data axes: the
    optimizer state (and at stage 2 the gradients) divided over them (Rajbhandari et al. 2020).
    FSDP layouts already shard all three."""
    if layout.fsdp or options.zero < 1:
        return
    n = layout.degree("data", "seq")
    memory["optimizer"] = memory.get("optimizer", 0.0) / n
    if options.zero >= 2:
        memory["gradients"] = memory.get("gradients", 0.0) / n


def model_flops(r) -> float:
    """The step's model FLOPs: every einsum of the forward and backward passes counted once
    over the whole mesh (2 x the product of its dims: no recomputation, no work replicated
    across devices, no elementwise FLOPs), as MFU counts them (Chowdhery et al. 2022, PaLM,
    appendix B: 6N per token plus attention)."""
    return sum((r.value(op.flops * op.count) or 0.0) for op in r.ops if op.kind == "einsum")


def _add(d: dict[str, float], key: str, value: float) -> None:
    d[key] = d.get(key, 0.0) + value


def _op_time(r, op) -> float:
    return r.value(op.time * op.count) or 0.0


def collective_role(axes: tuple[str, ...], layout: Layout) -> str:
    """A collective's role by its axes: "dcn" (across pods), "tp", "fsdp" or "dp" (the data
    axes, or the batch-only replicas of hybrid sharding on GPUs), or "mixed"."""
    roles = {a.name: a.role for a in layout.axes}
    kinds = {roles.get(a, "?") for a in axes}
    if "pod" in kinds:
        dcn = any(
            a.role == "pod" and a.link.startswith("@dcn") and a.name in axes for a in layout.axes
        )
        return "dcn" if dcn else "dp"
    if kinds == {"tp"}:
        return "tp"
    if kinds <= {"data", "seq"}:
        return "fsdp" if layout.fsdp else "dp"
    return "mixed"


def add_memory(memory: dict[str, float], r, p: Part, count: float) -> None:
    """Add `count` copies of a compiled part's memory to `memory`, by kind."""
    m = r.memory
    if m is None:
        return
    for key in ("parameters", "gradients", "optimizer", "activations"):
        memory[key] = memory.get(key, 0.0) + (r.value(getattr(m, key)) or 0.0) * count
    if p.name == "head":
        # An embedding lookup has no einsum, so the compiler derives no gradient for it; the
        # gradient is as large as the table.
        for a in r.cost.arrays:
            if a.name == "W_E":
                memory["gradients"] += r.value(a.bytes_per_device) or 0.0


def figures(
    acc: dict[str, Any], chip: Chip, layout: Layout, tokens: int, stages: int = 1
) -> dict[str, Any]:
    """The step's figures from the totals of `acc`: the bound, memory and whether it fits,
    MFU and HFU; `stages` pipeline stages of the layout's chips each."""
    mem = sum(acc["memory"].values())
    t_math, t_hbm, t_comms = acc["t_math_s"], acc["t_hbm_s"], acc["t_comms_s"]
    bound = max(
        (("compute", t_math), ("hbm", t_hbm), ("comms", t_comms)),
        key=lambda kv: (kv[1], kv[0] == "compute"),
    )[0]
    levels = acc["t_comms_by_level_s"]
    level = max(levels, key=lambda k: levels[k]) if levels and bound == "comms" else None
    chips = layout.degree("data", "seq", "tp", "pod") * stages
    step = acc["t_step_s"]
    peak = chip.flops_for("bf16")[0]
    return {
        **acc,
        "bound": bound,
        "bound_level": level,
        "memory_per_device_bytes": mem,
        "fits": mem <= chip.hbm_bytes,
        "chips": chips,
        "tokens_per_chip": tokens / chips,
        # MFU: model FLOPs over what the chips could do in the step; HFU: every FLOP a
        # device runs (recomputation, replicated work and elementwise ops included).
        "mfu": acc["model_flops"] / (chips * peak * step) if step else None,
        # the calibrated step (T_expected's figures, exposed communication) beside the
        # roofline's; plan ranks by the calibrated step (docs/plan.md)
        "t_step_expected_s": max(acc["t_step_expected_s"], step),
        "mfu_expected": (
            acc["model_flops"] / (chips * peak * max(acc["t_step_expected_s"], step))
            if step
            else None
        ),
        "hfu": acc["flops_per_device"] / (peak * step) if step else None,
    }


def schedule_revised(r, durations: dict[int, float], layout: Layout) -> float:
    """T_step under the revised training chapter's assumption that the FSDP (data-axis) and TP
    (tensor-axis) collectives overlap each other, not only compute (the revised training chapter,
    its section on combining FSDP and tensor parallelism:
    T_comms = max(T_FSDP, T_TP)): the list schedule of passes/schedule.py with one network
    resource per kind of axis instead of one."""
    return schedule(
        r.program,
        durations,
        lambda op: "network-" + collective_role(op.axes, layout),
        axis_sizes=r.mesh_sizes(),
        busy_after=r.busy_after(),
    )
