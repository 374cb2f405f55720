"""Pipeline parallelism in a plan: the layers split into stages of consecutive layers, each
stage on its own chips with a data x tensor layout, microbatches run through them in a
schedule (GPipe, 1F1B or interleaved 1F1B).

A stage's programs are the model's layer and embedding programs compiled at one microbatch
(`shardc.tools.models.programs`), and the stage boundary is a program of its own: one
microbatch's residual stream sent to the next stage and its gradient sent back (`Send`, as the
language writes a pipeline; programs/mlp-pipeline-train.shard). Python then applies the
schedule's closed forms, each from its paper (docs/plan.md, "Pipelines"):

- step time (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
  Clusters Using Megatron-LM", section 2.2): `(m + (p - 1) / v) x t_stage + (p v - 1) x
  (t_send_fwd + t_send_bwd)`, with v = 1 for GPipe (Huang et al. 2019) and 1F1B (Narayanan
  et al. 2019, PipeDream); the sends of the steady state overlap compute unless they are
  longer;
- the gradient reduction over the data axes runs once per step, bucketed per layer and
  overlapped with the last microbatch's backward pass (2/3 of a stage's time: the backward
  pass is twice the forward's FLOPs, the transformer-math chapter);
- activations kept by stage r (Korthikanti et al. 2022, "Reducing Activation Recomputation
  in Large Transformer Models", section 4.2.3): GPipe m microbatches, 1F1B min(m, p - r),
  interleaved min(m, p + (p - 1 - 2r) / v), each for the stage's layers: Megatron-LM's
  interleaved schedule (Narayanan et al. 2021, section 2.2.2) runs (v - 1) p + 2 (p - 1 - r)
  chunk forward passes before its first backward pass, and all m v of them when that is
  more; on the first stage this is Korthikanti et al.'s p (1 + (p - 1) / (p v));
- interleaved stages balanced as the LLaMA 3 paper does (Dubey et al. 2024, "The Llama 3
  Herd of Models", section 3.3.2): the embedding and the output layer each take one layer's
  place among the p v chunks, so the first and last stages hold one layer fewer, where that
  costs no stage a layer.
"""

from __future__ import annotations

import math
from typing import Any

from shardc.hardware import Chip
from shardc.passes.context import PipelineSchedule
from shardc.passes.schedule import schedule
from shardc.tools.models import ModelCard
from shardc.tools.models.programs import comment, hardware_line
from shardc.tools.models.sharding import Layout, Sharding, ShardingError
from shardc.tools.plan.candidates import Options, Pipeline, Slice

INNER = {"pp-dp": "dp", "pp-dp-tp": "dp-tp", "pp-fsdp": "fsdp", "pp-fsdp-tp": "fsdp-tp"}
"""Pipelined strategies and the layout of each stage."""


def in_flight(pipe: Pipeline, rank: int = 0) -> float:
    """Microbatches whose activations stage `rank` (0 the first) keeps at once, in units of
    a whole stage's layers (Korthikanti et al. 2022, section 4.2.3). Interleaved: the chunk
    forward passes Megatron-LM's schedule runs before its first backward pass, (v - 1) p +
    2 (p - 1 - rank), and one more in the steady state, at most all m v (Narayanan et al.
    2021's schedule; Megatron-LM, `forward_backward_pipelining_with_interleaving`); over v.

    >>> in_flight(Pipeline(16, 32, "interleaved", 2))  # Korthikanti et al.: p (1 + (p-1)/(pv))
    23.5
    >>> in_flight(Pipeline(16, 16, "interleaved", 2))  # m = p: every microbatch, as 1F1B
    16.0
    """
    p, m, v = pipe.stages, pipe.microbatches, pipe.virtual
    if pipe.schedule == "gpipe":
        return float(m)
    if pipe.schedule == "1f1b":
        return float(min(m, p - rank))
    return min(float(m), ((v - 1) * p + 2 * (p - 1 - rank) + 1) / v)


def balanced(n_layers: int, p: int, v: int) -> bool:
    """Whether an interleaved split gives the embedding and the output layer one layer's
    place each (the LLaMA 3 paper, section 3.3.2: "the first model chunk on the first stage
    has only the embedding, and the last model chunk on the last stage has only output
    projection and loss calculation"; Megatron-Core's account_for_embedding_in_pipeline_split
    and account_for_loss_in_pipeline_split): only where no chunk then holds more layers."""
    return v > 1 and p * v <= n_layers + 2 and _ceil(n_layers + 2, p * v) == _ceil(n_layers, p * v)


def chunks_fit(n_layers: int, p: int, v: int) -> bool:
    """Whether p stages of v chunks each have a layer (or the balanced split's embedding or
    output layer) to hold."""
    return p * v <= n_layers or balanced(n_layers, p, v)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def bubble_fraction(pipe: Pipeline) -> float:
    """The idle share of the step: ((p - 1) / v) / (m + (p - 1) / v)."""
    fill = (pipe.stages - 1) / pipe.virtual
    return fill / (pipe.microbatches + fill)


def stage_layout(
    card: ModelCard,
    chip: Chip,
    sl: Slice,
    strategy: str,
    t: int,
    stages: int,
    microbatch_sequences: int,
    sequences: int,
    seq: int,
    schedule_: PipelineSchedule,
    virtual: int,
    context: int = 1,
) -> tuple[Layout, Pipeline]:
    """One stage's layout for `strategy` (pp-dp-tp, ...) at tensor degree t over `stages`
    stages, and the pipeline: microbatches of `microbatch_sequences` per data replica, a replica
    being `context` data ranks that split its sequences (context parallelism: the LLaMA 3
    paper's CP; the stage's data axes then shard the sequence as far as the microbatch needs)."""
    from shardc.tools.plan.strategies import build_layout

    if sl.shape or sl.pods > 1:
        raise ShardingError(
            "pipelines are laid out on GPU clusters only (stages over the "
            "network between NVLink domains); on TPU pods the training chapter "
            "finds them less essential"
        )
    if card.moe is not None:
        raise ShardingError("pipelines of mixture-of-experts models are not planned")
    if stages < 2:
        raise ShardingError(f"a pipeline needs at least 2 stages (got {stages})")
    if sl.chips_per_pod % stages:
        raise ShardingError(f"{stages} stages do not split {sl.chips_per_pod} chips")
    if stages > card.n_layers:
        raise ShardingError(f"{stages} stages for {card.n_layers} layers")
    per_stage = sl.chips_per_pod // stages
    if per_stage % t:
        raise ShardingError(f"a tensor degree of {t} does not divide a stage's {per_stage} chips")
    data = per_stage // t
    if context < 1 or data % context:
        raise ShardingError(
            f"a context-parallel degree of {context} does not divide a stage's {data} data ranks"
        )
    replicas = data // context
    micro = replicas * microbatch_sequences
    if sequences % micro:
        raise ShardingError(
            f"{sequences} sequences are not a whole number of microbatches "
            f"of {microbatch_sequences} sequence(s) on each of {replicas} data "
            "replicas"
        )
    if seq % context:
        raise ShardingError(f"a sequence of {seq} does not split {context} ways")
    inner = INNER[strategy]
    if t > 1 and not inner.endswith("-tp"):
        raise ShardingError(f"{strategy} has no tensor axis (got Y={t})")
    layout = build_layout(card, chip, Slice(1, per_stage, (), 0), inner, t, micro, seq)
    v = virtual if schedule_ == "interleaved" else 1
    if not chunks_fit(card.n_layers, stages, v):
        raise ShardingError(f"{stages} stages x {v} chunks for {card.n_layers} layers")
    return layout, Pipeline(stages, sequences // micro, schedule_, v, microbatch_sequences)


def boundary_program(
    card: ModelCard, layout: Layout, pipe: Pipeline, micro: int, seq: int, hw: str
) -> str:
    """The stage boundary as a program: one microbatch's residual stream, as a stage emits it
    (sharded over the tensor axes under sequence parallelism: Narayanan et al. 2021's
    scatter/gather optimization), sent to the next stage, and its gradient sent back."""
    s = Sharding(card, layout, micro, seq)
    act = s.act("B", "T", "D", d_tp=True)
    mesh = f"PP={pipe.stages}" + (f", {layout.mesh_text()}" if layout.axes else "")
    return "\n".join(
        [
            comment(f"{card.display_name}: a pipeline stage boundary ({pipe.text()})."),
            f"mesh {mesh}",
            f"dim B={micro}, T={seq}, D={card.d_model}",
            hardware_line(hw),
            "",
            f"Act: bf16[{act}]   # one microbatch's residual stream leaving a stage",
            f"dAct: bf16[{act}]  # its gradient, coming back",
            "Next = Send_{PP: +1}(Act)",
            "dPrev = Send_{PP: -1}(dAct)",
            "",
        ]
    )


def evaluate_pipeline(
    card: ModelCard,
    chip: Chip,
    layout: Layout,
    pipe: Pipeline,
    sequences: int,
    seq: int,
    options: Options,
) -> tuple[dict[str, Any] | None, str | None]:
    """A pipelined candidate's figures for the whole step, or why it is not evaluated.

    A stage's programs are compiled for the whole step's sequences on the stage's layout, so
    that the weight gradients are reduced once per step, as gradient accumulation does, and
    the contraction planner weighs that one reduction against work repeated every microbatch.
    Everything else in them scales with the batch: one microbatch's time and activations are
    the program's over m (its latency terms too, a small undercount)."""
    from shardc.driver import api
    from shardc.lang.diagnostics import CompileError
    from shardc.tools.plan.accounting import (
        add_exposed,
        add_memory,
        add_report,
        collective_role,
        compile_parts,
        expected_parts,
        figures,
        model_flops,
        new_totals,
        schedule_revised,
        zero_state,
    )
    from shardc.tools.plan.framework import (
        accumulation_seconds,
        layer_seconds,
        optimizer_seconds,
    )

    micro = sequences // pipe.microbatches
    compiled = compile_parts(card, chip, layout, sequences, seq, options)
    if isinstance(compiled, str):
        return None, compiled
    try:
        edge = api.compile(
            boundary_program(card, layout, pipe, micro, seq, chip.name),
            hw=chip,
            model=options.model,
            name=f"<{card.name} boundary>",
            explain=False,
            idle_axes=False,
        )
    except CompileError as exc:  # pragma: no cover - the program is ours
        return None, f"not evaluated: the stage boundary does not compile: {exc}"
    sends = edge.step_durations() or {}
    t_send = sum(sends.values())  # one forward and one backward Send per boundary crossing
    t_send_e = (
        sum((edge.step_durations(expected=True) or sends).values()) if edge.calibrated else t_send
    )

    m, p, v = pipe.microbatches, pipe.stages, pipe.virtual
    per: dict[str, tuple[float, float, float]] = {}
    per_e: dict[str, tuple[float, float]] = {}  # the calibrated (expected) figures
    exposed_e: dict[str, dict[int, float]] = {}  # each collective's exposed part, a step
    optimizer: dict[str, float] = {}  # one Adam step over a part's parameters, calibrated
    shards = layout.degree("data") if options.zero >= 1 and not layout.fsdp else 1
    for part, r, durations in compiled:
        grads = {f"d{w}" for w in part.groups}
        once = {
            op.index
            for op in r.ops
            if op.kind == "collective"
            and op.array in grads
            and collective_role(op.axes, layout) in ("dp", "fsdp")
        }
        rest = {i: (0.0 if i in once else d) for i, d in durations.items()}
        per[part.name] = (
            schedule(r.program, rest, axis_sizes=r.mesh_sizes(), busy_after=r.busy_after()) / m,
            schedule_revised(r, rest, layout) / m,
            sum(durations[i] for i in once),
        )
        expected = (r.step_durations(expected=True) if r.calibrated else None) or durations
        rest_e = {i: (0.0 if i in once else d) for i, d in expected.items()}
        t_e, exposed_e[part.name] = expected_parts(r, per[part.name][0] * m, rest_e, layout=layout)
        # the framework's passes and the fp32 accumulation of each microbatch's gradients
        passes = (
            layer_seconds(r, chip, options.remat, options.dropout, options.attention)
            if part.name == "layer"
            else 0.0
        ) + accumulation_seconds(r, chip, m)
        per_e[part.name] = ((t_e + passes) / m, sum(expected[i] for i in once))
        optimizer[part.name] = optimizer_seconds(r, chip, shards)
    t_layer, t_layer_rev, g_layer = per["layer"]
    t_head, t_head_rev, g_head = per["head"]
    k, last = split_layers(card.n_layers, p, v, t_layer, t_head)
    t_stage = max(k * t_layer, last * t_layer + t_head)
    t_stage_rev = max(k * t_layer_rev, last * t_layer_rev + t_head_rev)
    # The busiest stage's figures: the first stage's layers (it keeps the most activations)
    # and the whole head (embedding and unembedding, at most one stage's extra work).
    t_grad = k * g_layer + g_head
    acc = new_totals()
    for part, r, _ in compiled:
        n = 1 if part.name == "head" else k
        acc["parts"][part.name] = {"count": n, "t_step_s": per[part.name][0]}
        add_report(acc, r, part, layout, n, memory_count=n)
        # add_report counted the model FLOPs of this stage's layers; MFU counts every layer's.
        acc["model_flops"] += model_flops(r) * (part.count - n)
    # Memory: the stage that holds the most, of those that can (`memory_stages`).
    held = []
    for rank, layers, head in memory_stages(card.n_layers, pipe, k, last):
        mem: dict[str, float] = {}
        for part, r, _ in compiled:
            if part.name != "head" or head:
                n = layers if part.name != "head" else 1
                add_memory(mem, r, part, n)
                kept = in_flight(pipe, rank) if part.name != "head" else 1
                _scale_activations(mem, r, n, kept / m)
        zero_state(mem, layout, options)
        held.append((sum(mem.values()), rank, layers, mem))
    _, mem_rank, mem_layers, acc["memory"] = max(held, key=lambda h: h[0])
    # HFU's FLOPs are the busiest stage's: the first stage's layers, or the last stage's
    # layers and the head, not both (add_report added both).
    fl = {
        part.name: compiled_r.value("flops_per_device") or 0.0 for part, compiled_r, _ in compiled
    }
    acc["flops_per_device"] = max(k * fl["layer"], last * fl["layer"] + fl["head"])
    acc["t_comms_s"] += m * v * t_send
    by_role = acc["t_comms_by_role_s"]
    by_role["pp"] = by_role.get("pp", 0.0) + m * v * t_send

    def step(t_st: float, send: float = t_send, grad: float = t_grad) -> float:
        steady = max(t_st, v * send)
        exposed = max(grad / max(1, k), grad - 2 / 3 * t_st)
        return (m + (p - 1) / v) * steady + (p * v - 1) * send + exposed

    acc["t_step_s"] = step(t_stage)
    acc["t_step_overlap_revised_s"] = step(t_stage_rev)
    (te_layer, ge_layer), (te_head, ge_head) = per_e["layer"], per_e["head"]
    t_stage_e = max(k * te_layer, last * te_layer + te_head)
    acc["t_step_expected_s"] = step(t_stage_e, t_send_e, k * ge_layer + ge_head) + max(
        k * optimizer["layer"], last * optimizer["layer"] + optimizer["head"]
    )
    # Exposed communication of the calibrated step: the busiest stage's, each of its
    # microbatch ticks (m + (p - 1) / v of them); the sends of the fill and drain; the
    # gradient reduction left after the last backward pass.
    ticks = (m + (p - 1) / v) / m
    first_busiest = k * te_layer >= last * te_layer + te_head
    for part, r, _ in compiled:
        n = 1 if part.name == "head" else (k if first_busiest else last)
        if part.name == "head" and first_busiest:
            continue
        add_exposed(acc, r, exposed_e[part.name], layout, n * ticks)
    grad_e = k * ge_layer + ge_head
    exposed_roles = acc["t_exposed_by_role_s"]
    exposed_roles["pp"] = exposed_roles.get("pp", 0.0) + (p * v - 1) * t_send_e
    left = max(grad_e / max(1, k), grad_e - 2 / 3 * t_stage_e)
    role = "fsdp" if layout.fsdp else "dp"
    exposed_roles[role] = exposed_roles.get(role, 0.0) + left
    out = figures(acc, chip, layout, sequences * seq, stages=p)
    out["pipeline"] = {
        "stages": p,
        "microbatches": m,
        "schedule": pipe.schedule,
        "virtual_stages": v,
        "microbatch_sequences": micro,
        "layers_first_stage": k - 1 if balanced(card.n_layers, p, v) else k,
        "layers_last_stage": last,
        "memory_stage": mem_rank,
        "layers_memory_stage": mem_layers,
        "t_stage_s": t_stage,
        "t_send_s": t_send,
        "t_grad_sync_s": t_grad,
        "bubble_fraction": bubble_fraction(pipe),
        "activations_in_flight": in_flight(pipe, mem_rank),
    }
    return out, None


def split_layers(n_layers: int, p: int, v: int, t_layer: float, t_head: float) -> tuple[int, int]:
    """Layers on the fullest stage (the first, or under the balanced interleaved split a
    middle one) and on the last (which also runs the head), for the shortest stage time. One
    chunk per stage: the last stage takes j layers and the head, the others
    ceil((L - j) / (p - 1)) each (the LLaMA 3 paper balances its first and last stages by
    moving layers off them); interleaved: v chunks of at most ceil(L / (p v)) layers on every
    stage, the head on the last as well; balanced (`balanced`): chunks of
    ceil((L + 2) / (p v)) layers, the first and the last stage one layer fewer.

    >>> split_layers(126, 16, 1, 1.0, 1.5)  # 8 layers a stage, the last 6 and the head
    (8, 6)
    >>> split_layers(126, 16, 8, 1.0, 1.5)  # the LLaMA 3 paper: 8 a stage, the last 7
    (8, 7)
    """
    if balanced(n_layers, p, v):
        k = _ceil(n_layers + 2, p * v) * v
        return k, k - 1
    if v > 1:
        k = math.ceil(n_layers / (p * v)) * v
        return k, k
    best = None
    for j in range(0, math.ceil(n_layers / p) + 1):
        k = math.ceil((n_layers - j) / (p - 1))
        cost = max(k * t_layer, j * t_layer + t_head)
        if best is None or cost < best[0]:
            best = (cost, k, j)
    assert best is not None
    return best[1], best[2]


def memory_stages(n_layers: int, pipe: Pipeline, k: int, last: int) -> list[tuple[int, int, bool]]:
    """The stages whose memory may be the most, as (rank, layers, whether the head's weights
    and activations are counted): the first stage with k layers and the whole head (an upper
    bound: the head is the last stage's, its embedding table the first's); under the balanced
    interleaved split, the first and the last stage with one layer fewer and the head, and
    the second with k layers, which keeps almost as many microbatches as the first."""
    p, v = pipe.stages, pipe.virtual
    if not balanced(n_layers, p, v):
        return [(0, k, True)]
    out = [(0, k - 1, True), (p - 1, last, True)]
    return out + ([(1, k, False)] if p > 2 else [])


def _scale_activations(memory: dict[str, float], r, k: int, factor: float) -> None:
    """Scale the activations `add_report` counted for `k` layers of the whole step's program
    by `factor` (the microbatches kept over the microbatches in the step)."""
    if r.memory is None:
        return
    counted = (r.value(r.memory.activations) or 0.0) * k
    memory["activations"] = memory.get("activations", 0.0) + counted * (factor - 1)
