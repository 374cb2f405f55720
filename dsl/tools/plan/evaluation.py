"""Compiling a candidate: its generated programs through `shardc.compile`, the step's figures
summed over the layers (the layer's scheduled T_step x n_layers + the embedding's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shardc.hardware import Chip
from shardc.hardware import load as load_chip
from shardc.hardware.levels import LEVELS
from shardc.passes.schedule import schedule
from shardc.tools.models import ModelCard
from shardc.tools.models import load as load_card
from shardc.tools.models.programs import Part, parts
from shardc.tools.models.sharding import Layout, ShardingError
from shardc.tools.plan.candidates import Candidate, Options, Plan, PlanError
from shardc.tools.plan.strategies import choose_slice, layouts, one_layout


def plan(card: ModelCard | str, chip: Chip | str, chips: int, batch_tokens: int,
         seq: int | None = None, options: Options | None = None,
         progress: Callable[[str], None] | None = None,
         only: tuple[str, int] | Layout | None = None) -> Plan:
    """Enumerate, compile and rank the strategies for one training step; `progress` hears
    which candidate is compiled (`"fsdp-tp (X=2048 Y=4): 1 of 8"`). `card` and `chip` are
    objects or names (`"llama3-8b"`, `"tpu-v5e"`; a path to a TOML works too), loaded as the
    CLI loads them (`shardc.tools.models.load`, `shardc.hardware.load`).

    `only` evaluates one layout instead: a strategy and its tensor degree (`("fsdp-tp", 4)`,
    laid out on the slice as the search lays it out), or a `Layout` as given (its axes' links
    included; `shardc.cli.plan.mesh_layout`)."""
    if isinstance(card, str):
        card = load_card(card)
    if isinstance(chip, str):
        chip = load_chip(chip)
    if card.moe is not None:
        raise PlanError(f"{card.name} is a mixture of experts: plan does not model expert "
                        "parallelism or the token dispatch (the revised training chapter leaves MoE out too); "
                        "`shardc model program` still writes its programs")
    seq = seq or card.seq_len
    options = options or Options()
    if batch_tokens < seq or batch_tokens % seq:
        raise PlanError(f"--batch {batch_tokens} tokens is not a whole number of {seq}-token "
                        f"sequences (try {max(1, batch_tokens // seq) * seq})")
    sl = choose_slice(chip, chips)
    sequences = batch_tokens // seq
    if only is None:
        cands = layouts(card, chip, sl, sequences, seq)
    elif isinstance(only, Layout):
        cands = [Candidate(only.strategy, only, tensor_degree(only))]
    else:
        try:
            cands = [one_layout(card, chip, sl, only[0], only[1], sequences, seq)]
        except ShardingError as exc:
            raise PlanError(str(exc)) from None
    todo = [c for c in cands if c.layout is not None and c.reason is None]
    for k, c in enumerate(todo, 1):
        if progress is not None:
            progress(f"compiling {c.label()}: {k} of {len(todo)}")
        if c.layout is not None:
            figures, c.reason = evaluate(card, chip, c.layout, sequences, seq, options)
            c.figures = figures or {}
    return Plan(card, chip, sl, batch_tokens, seq, options, cands)


def evaluate(card: ModelCard, chip: Chip, layout: Layout, sequences: int, seq: int,
             options: Options) -> tuple[dict[str, Any] | None, str | None]:
    """Compile a layout's programs: (figures for the whole step, None), or (None, why not)."""
    from shardc.driver import api
    from shardc.lang.diagnostics import CompileError

    try:
        ps = parts(card, layout, sequences, seq, hw=chip.name)
    except ShardingError as exc:
        return None, f"not evaluated: {exc}"
    acc: dict[str, Any] = {"t_step_s": 0.0, "t_step_overlap_revised_s": 0.0, "t_lower_s": 0.0,
                           "t_math_s": 0.0, "t_hbm_s": 0.0, "t_comms_s": 0.0,
                           "flops_per_device": 0.0, "model_flops": 0.0,
                           "t_comms_by_level_s": {},
                           "t_comms_by_role_s": {}, "memory": {}, "parts": {}}
    for p in ps:
        try:
            r = api.compile(p.text, hw=chip, model=options.model, optimizer=options.optimizer,
                            remat=options.remat, name=f"<{card.name} {p.name}>",
                            attention=options.attention)
        except CompileError as exc:
            first = exc.diagnostics[0] if exc.diagnostics else None
            return None, ("not evaluated: the compiler rejects the generated "
                          f"{p.name} program: " + (f"[{first.code}] {first.message}"
                                                     if first else str(exc)))
        durations = r.step_durations()
        if durations is None:
            return None, f"not evaluated: the {p.name} program has unbound sizes"
        t = schedule(r.program, durations, axis_sizes=r.mesh_sizes())
        n = p.count
        acc["parts"][p.name] = {"count": n, "t_step_s": t}
        acc["t_step_s"] += t * n
        acc["t_step_overlap_revised_s"] += _schedule_revised(r, durations, layout) * n
        acc["t_lower_s"] += (r.value("t_lower_s") or 0.0) * n
        for key in ("t_math_s", "t_hbm_s", "t_comms_s", "flops_per_device"):
            acc[key] += (r.value(key) or 0.0) * n
        acc["model_flops"] += model_flops(r) * n
        for lv in LEVELS:
            if f"t_comms_{lv}_s" in r.totals:
                _add(acc["t_comms_by_level_s"], lv, (r.value(f"t_comms_{lv}_s") or 0.0) * n)
        for op in r.ops:
            if op.kind == "collective":
                _add(acc["t_comms_by_role_s"], _role(op.axes, layout), _op_time(r, op) * n)
        _add_memory(acc["memory"], r, p)
    return _figures(acc, chip, layout, sequences * seq), None


def tensor_degree(layout: Layout) -> int:
    """The product of a layout's tensor-parallel axes (1 without any)."""
    n = 1
    for a in layout.axes:
        if a.role == "tp" and a.size:
            n *= a.size
    return n


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


def _role(axes: tuple[str, ...], layout: Layout) -> str:
    roles = {a.name: a.role for a in layout.axes}
    kinds = {roles.get(a, "?") for a in axes}
    if "pod" in kinds:
        return "dcn"
    if kinds == {"tp"}:
        return "tp"
    if kinds <= {"data", "seq"}:
        return "fsdp" if layout.fsdp else "dp"
    return "mixed"


def _add_memory(memory: dict[str, float], r, p: Part) -> None:
    m = r.memory
    if m is None:
        return
    for key in ("parameters", "gradients", "optimizer", "activations"):
        memory[key] = memory.get(key, 0.0) + (r.value(getattr(m, key)) or 0.0) * p.count
    if p.name == "head":
        # An embedding lookup has no einsum, so the compiler derives no gradient for it; the
        # gradient is as large as the table.
        for a in r.cost.arrays:
            if a.name == "W_E":
                memory["gradients"] += r.value(a.bytes_per_device) or 0.0


def _figures(acc: dict[str, Any], chip: Chip, layout: Layout, tokens: int) -> dict[str, Any]:
    mem = sum(acc["memory"].values())
    t_math, t_hbm, t_comms = acc["t_math_s"], acc["t_hbm_s"], acc["t_comms_s"]
    bound = max((("compute", t_math), ("hbm", t_hbm), ("comms", t_comms)),
                key=lambda kv: (kv[1], kv[0] == "compute"))[0]
    levels = acc["t_comms_by_level_s"]
    level = max(levels, key=lambda k: levels[k]) if levels and bound == "comms" else None
    chips = layout.degree("data", "seq", "tp", "pod")
    step = acc["t_step_s"]
    peak = chip.flops_for("bf16")[0]
    return {**acc,
            "bound": bound, "bound_level": level,
            "memory_per_device_bytes": mem,
            "fits": mem <= chip.hbm_bytes,
            "chips": chips,
            "tokens_per_chip": tokens / chips,
            # MFU: model FLOPs over what the chips could do in the step; HFU: every FLOP a
            # device runs (recomputation, replicated work and elementwise ops included).
            "mfu": acc["model_flops"] / (chips * peak * step) if step else None,
            "hfu": acc["flops_per_device"] / (peak * step) if step else None}


def _schedule_revised(r, durations: dict[int, float], layout: Layout) -> float:
    """T_step under the revised training chapter's assumption that the FSDP (data-axis) and TP (tensor-axis)
    collectives overlap each other, not only compute (the revised training chapter, its section on combining
    FSDP and tensor parallelism:
    T_comms = max(T_FSDP, T_TP)): the list schedule of passes/schedule.py with one network
    resource per kind of axis instead of one."""
    return schedule(r.program, durations, lambda op: "network-" + _role(op.axes, layout),
                    axis_sizes=r.mesh_sizes())
