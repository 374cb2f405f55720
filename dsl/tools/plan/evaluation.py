"""Compiling a candidate: its generated programs through `shardc.compile`, the step's figures
summed over the layers (the layer's scheduled T_step x n_layers + the embedding's)."""

from __future__ import annotations

import dataclasses
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
from shardc.tools.plan.pipeline import INNER, evaluate_pipeline, pipeline_candidates, stage_layout
from shardc.tools.plan.strategies import choose_slice, fits_replicated, layouts, one_layout


def plan(card: ModelCard | str, chip: Chip | str, chips: int, batch_tokens: int,
         seq: int | None = None, options: Options | None = None,
         progress: Callable[[str], None] | None = None,
         only: tuple[str, int] | tuple[str, int, int] | tuple[str, int, int, int] | Layout
         | None = None, jobs: int = 1) -> Plan:
    """Enumerate, compile and rank the strategies for one training step; `progress` hears
    which candidate is compiled (`"fsdp-tp (X=2048 Y=4): 1 of 8"`). `card` and `chip` are
    objects or names (`"llama3-8b"`, `"tpu-v5e"`; a path to a TOML works too), loaded as the
    CLI loads them (`shardc.tools.models.load`, `shardc.hardware.load`).

    `only` evaluates one layout instead: a strategy and its tensor degree (`("fsdp-tp", 4)`,
    laid out on the slice as the search lays it out), a pipelined strategy, its tensor degree
    and its stages (`("pp-dp-tp", 8, 16)`) and optionally its context-parallel degree, or a
    `Layout` as given (its axes' links included; `shardc.cli.plan.mesh_layout`).

    `jobs` > 1 compiles the candidates in that many forked processes (where the platform can
    fork); the plan is the same."""
    if isinstance(card, str):
        card = load_card(card)
    if isinstance(chip, str):
        chip = load_chip(chip)
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
        cands = [_one(card, chip, sl, only, sequences, seq, options)]
    _evaluate_all(card, chip, cands, sequences, seq, options, progress, jobs)
    if only is None:
        more = pipeline_candidates(card, chip, sl, sequences, seq, options, cands)
        _evaluate_all(card, chip, more, sequences, seq, options, progress, jobs)
        cands += more
    return Plan(card, chip, sl, batch_tokens, seq, options, cands)


def _evaluate_all(card: ModelCard, chip: Chip, cands: list[Candidate], sequences: int, seq: int,
                  options: Options, progress: Callable[[str], None] | None,
                  jobs: int = 1) -> None:
    """Compile every candidate that has a layout; DP + TP only when its replicated state could
    fit beside FSDP + TP's at the same degree (so after those). Candidates are independent:
    with `jobs` > 1 they compile in that many processes, to the same figures."""
    todo = [c for c in cands if c.layout is not None and c.reason is None]
    for c in todo:
        if not options.sequence_parallel and c.layout is not None and c.layout.of("tp"):
            c.layout = dataclasses.replace(c.layout, sequence_parallel=False)
    first = [c for c in todo if c.strategy != "dp-tp"]
    done = _compile_each(card, chip, first, sequences, seq, options, progress, jobs,
                         0, len(todo))
    later = []
    for c in todo:
        if c.strategy == "dp-tp":
            twin = next((f for f in cands if f.strategy == "fsdp-tp" and f.tp == c.tp
                         and f.evaluated), None)
            c.reason = None if twin is None else fits_replicated(twin, chip.hbm_bytes,
                                                                 options.zero)
            if c.reason is None:
                later.append(c)
    _compile_each(card, chip, later, sequences, seq, options, progress, jobs, done,
                  done + len(later))


def _compile_each(card: ModelCard, chip: Chip, cands: list[Candidate], sequences: int, seq: int,
                  options: Options, progress: Callable[[str], None] | None, jobs: int,
                  before: int, total: int) -> int:
    """Evaluate each candidate (in `jobs` forked processes when there are several), setting
    its figures or reason; the number reported so far."""
    k = before
    if jobs > 1 and len(cands) > 1 and _can_fork():
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        _warm_up(chip)

        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(jobs, len(cands)), mp_context=ctx) as pool:
            futures = {pool.submit(_evaluate_one, card, chip, c, sequences, seq, options): c
                       for c in sorted(cands, key=_work, reverse=True)}
            for future in as_completed(futures):
                c = futures[future]
                figures_, c.reason = future.result()
                c.figures = figures_ or {}
                k += 1
                if progress is not None:
                    progress(f"compiled {c.label()}: {k} of {total}")
        return k
    for c in cands:
        k += 1
        if progress is not None:
            progress(f"compiling {c.label()}: {k} of {total}")
        figures_, c.reason = _evaluate_one(card, chip, c, sequences, seq, options)
        c.figures = figures_ or {}
    return k


def _work(c: Candidate) -> int:
    """How long a candidate's compile takes, as a rank: its mesh axes (the plan search tries
    a role for each axis of each contraction; a 4-axis mesh takes 3-10x a 2-axis one). The
    processes take the longest first, so the last to finish is a short one (LPT)."""
    return len(c.layout.axes) if c.layout is not None else 0


def _can_fork() -> bool:
    """Forking is safe: the platform has it, and this process runs one thread and has not
    imported JAX (whose threads a fork would copy mid-lock: a notebook or a test process that
    uses xla-check compiles the candidates one after another instead)."""
    import multiprocessing
    import sys
    import threading

    return ("fork" in multiprocessing.get_all_start_methods()
            and threading.active_count() == 1 and "jax" not in sys.modules)


_WARM = ("mesh X=2\ndim B=4, D=4, F=4\nIn: bf16[B_X, D]\nparam W: bf16[D, F]\n"
         "Out[B_X, F] = In ·_D W\nbackward\n")
_warmed: list[bool] = []


def _warm_up(chip: Chip) -> None:
    """Once a process, before it first forks: compiling a small program imports what a compile
    imports lazily (SymPy, the parser and its grammar), so the forked processes
    share them instead of each importing them again."""
    if not _warmed:
        from shardc.driver import api

        api.compile(_WARM, hw=chip, explain=False, name="<warm-up>")
        _warmed.append(True)


def _evaluate_one(card: ModelCard, chip: Chip, c: Candidate, sequences: int, seq: int,
                  options: Options) -> tuple[dict[str, Any] | None, str | None]:
    assert c.layout is not None
    if c.pipeline is not None:
        return evaluate_pipeline(card, chip, c.layout, c.pipeline, sequences, seq, options)
    return evaluate(card, chip, c.layout, sequences, seq, options)


def evaluate(card: ModelCard, chip: Chip, layout: Layout, sequences: int, seq: int,
             options: Options) -> tuple[dict[str, Any] | None, str | None]:
    """Compile a layout's programs: (figures for the whole step, None), or (None, why not)."""
    compiled = compile_parts(card, chip, layout, sequences, seq, options)
    if isinstance(compiled, str):
        return None, compiled
    acc = new_totals()
    for p, r, durations in compiled:
        t = schedule(r.program, durations, axis_sizes=r.mesh_sizes())
        n = p.count
        acc["parts"][p.name] = {"count": n, "t_step_s": t}
        acc["t_step_s"] += t * n
        acc["t_step_expected_s"] += expected_step(r, t) * n
        acc["t_step_overlap_revised_s"] += _schedule_revised(r, durations, layout) * n
        add_report(acc, r, p, layout, n)
    zero_state(acc["memory"], layout, options)
    return figures(acc, chip, layout, sequences * seq), None


def compile_parts(card: ModelCard, chip: Chip, layout: Layout, sequences: int, seq: int,
                  options: Options) -> list[tuple[Part, Any, dict[int, float]]] | str:
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
            r = api.compile(p.text, hw=chip, model=options.model, optimizer=options.optimizer,
                            remat=options.remat, name=f"<{card.name} {p.name}>",
                            attention=options.attention, explain=False, idle_axes=False,
                            matmul_precision=options.matmul_precision)
        except CompileError as exc:
            first = exc.diagnostics[0] if exc.diagnostics else None
            return ("not evaluated: the compiler rejects the generated "
                    f"{p.name} program: " + (f"[{first.code}] {first.message}"
                                             if first else str(exc)))
        durations = r.step_durations()
        if durations is None:
            return f"not evaluated: the {p.name} program has unbound sizes"
        out.append((p, r, durations))
    return out


def new_totals() -> dict[str, Any]:
    return {"t_step_s": 0.0, "t_step_overlap_revised_s": 0.0, "t_step_expected_s": 0.0,
            "t_lower_s": 0.0,
            "t_math_s": 0.0, "t_hbm_s": 0.0, "t_comms_s": 0.0,
            "flops_per_device": 0.0, "model_flops": 0.0,
            "t_comms_by_level_s": {},
            "t_comms_by_role_s": {}, "memory": {}, "parts": {}}


def add_report(acc: dict[str, Any], r, p: Part, layout: Layout, n: float,
               memory_count: float | None = None) -> None:
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
            _add(acc["t_comms_by_role_s"], _role(op.axes, layout), _op_time(r, op) * n)
    _add_memory(acc["memory"], r, p, p.count if memory_count is None else memory_count)


def expected_step(r, roofline: float, durations: dict[int, float] | None = None) -> float:
    """A compiled part's calibrated step (`Report.scheduled_step(expected=True)`: each op's
    expected time, the network's calibrated bus bandwidth, weight gathers exposed where
    nothing hides them); the roofline step `roofline` on a chip without a calibration.
    `durations`: the expected durations to schedule instead of the report's own."""
    if not r.calibrated:
        return roofline
    if durations is None:
        return r.scheduled_step(expected=True) or roofline
    return schedule(r.program, durations, axis_sizes=r.mesh_sizes(), weights=False)


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


def _one(card: ModelCard, chip: Chip, sl, only: tuple, sequences: int, seq: int,
         options: Options) -> Candidate:
    """The candidate `--layout` names: (strategy, tensor degree) or, pipelined,
    (strategy, tensor degree, stages[, context-parallel degree])."""
    strategy, t = only[0], only[1]
    try:
        if strategy in INNER:
            stages, context = only[2], (only[3] if len(only) > 3 else 1)
            layout, pipe = stage_layout(card, chip, sl, strategy, t, stages,
                                        options.microbatch_sequences, sequences, seq,
                                        options.schedule, options.virtual_stages, context)
            return Candidate(strategy, layout, t, pipeline=pipe)
        return one_layout(card, chip, sl, strategy, t, sequences, seq)
    except ShardingError as exc:
        raise PlanError(str(exc)) from None


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
    """A collective's role by its axes: "dcn" (across pods), "tp", "fsdp" or "dp" (the data
    axes, or the batch-only replicas of hybrid sharding on GPUs), or "mixed"."""
    roles = {a.name: a.role for a in layout.axes}
    kinds = {roles.get(a, "?") for a in axes}
    if "pod" in kinds:
        dcn = any(a.role == "pod" and a.link.startswith("@dcn") and a.name in axes
                  for a in layout.axes)
        return "dcn" if dcn else "dp"
    if kinds == {"tp"}:
        return "tp"
    if kinds <= {"data", "seq"}:
        return "fsdp" if layout.fsdp else "dp"
    return "mixed"


def _add_memory(memory: dict[str, float], r, p: Part, count: float) -> None:
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


def figures(acc: dict[str, Any], chip: Chip, layout: Layout, tokens: int,
            stages: int = 1) -> dict[str, Any]:
    """The step's figures from the totals of `acc`: the bound, memory and whether it fits,
    MFU and HFU; `stages` pipeline stages of the layout's chips each."""
    mem = sum(acc["memory"].values())
    t_math, t_hbm, t_comms = acc["t_math_s"], acc["t_hbm_s"], acc["t_comms_s"]
    bound = max((("compute", t_math), ("hbm", t_hbm), ("comms", t_comms)),
                key=lambda kv: (kv[1], kv[0] == "compute"))[0]
    levels = acc["t_comms_by_level_s"]
    level = max(levels, key=lambda k: levels[k]) if levels and bound == "comms" else None
    chips = layout.degree("data", "seq", "tp", "pod") * stages
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
            # the calibrated step (T_expected's figures, exposed communication) beside the
            # roofline's; ranking stays on the roofline (docs/plan.md)
            "t_step_expected_s": max(acc["t_step_expected_s"], step),
            "mfu_expected": (acc["model_flops"] / (chips * peak * max(acc["t_step_expected_s"],
                                                                       step))
                             if step else None),
            "hfu": acc["flops_per_device"] / (peak * step) if step else None}


def _schedule_revised(r, durations: dict[int, float], layout: Layout) -> float:
    """T_step under the revised training chapter's assumption that the FSDP (data-axis) and TP (tensor-axis)
    collectives overlap each other, not only compute (the revised training chapter, its section on combining
    FSDP and tensor parallelism:
    T_comms = max(T_FSDP, T_TP)): the list schedule of passes/schedule.py with one network
    resource per kind of axis instead of one."""
    return schedule(r.program, durations, lambda op: "network-" + _role(op.axes, layout),
                    axis_sizes=r.mesh_sizes())
