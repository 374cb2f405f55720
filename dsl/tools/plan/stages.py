"""Which pipelined candidates `plan` compiles: every stage count whose memory estimate (a bound
from below) fits, at ZeRO-1 where only that fits; ZeRO-1 twins of those that compiled over HBM;
and the interleaved schedule and larger microbatches around the fastest (docs/plan.md,
"Pipelines"). The stages themselves, their closed forms and their evaluation are in
`pipeline`."""

from __future__ import annotations

import dataclasses
import math

from shardc.hardware import Chip
from shardc.passes.context import PipelineSchedule
from shardc.tools.models import ModelCard
from shardc.tools.models.sharding import ShardingError
from shardc.tools.plan.candidates import Candidate, Options, Pipeline, Slice
from shardc.tools.plan.pipeline_parallel import balanced, chunks_fit, in_flight, stage_layout


def pipeline_candidates(
    card: ModelCard,
    chip: Chip,
    sl: Slice,
    sequences: int,
    seq: int,
    options: Options,
    done: list[Candidate],
) -> list[Candidate]:
    """Pipelined candidates worth compiling: for each tensor degree inside an NVLink domain
    (Narayanan et al. 2021: tensor parallelism inside a server, pipelines across servers),
    every stage count whose estimated memory per chip fits (`_stage_estimates`, from the
    evaluated unpipelined candidate at the same tensor degree), or the most stages when none
    does. More stages are not slower by rule: with the batch fixed, fewer data replicas a
    stage means more microbatches, so the bubble's share stays near (p - 1) / (m + p - 1)
    while each stage's gradient reduction shrinks; the compiled step decides."""
    if card.moe is not None:
        return [
            Candidate(
                "pp-dp-tp",
                None,
                reason=(
                    "not evaluated: pipelines of mixture-of-experts models are not planned (their "
                    "stages mix dense layers, MoE layers and experts)"
                ),
            )
        ]
    if sl.shape or sl.pods > 1:
        return [
            Candidate(
                "pp-dp-tp",
                None,
                reason=(
                    "not evaluated: pipelines are planned on GPU clusters only; on TPU pods the "
                    "training chapter ('Pipelining') finds them less essential"
                ),
            )
        ]
    domain = chip.nvlink_domain or 1
    out = []
    sharded = dataclasses.replace(options, zero=1)
    for base in _bases(done, domain):
        t = base.tp
        strategy = "pp-dp-tp" if t > 1 else "pp-dp"
        shape = (options.schedule, options.virtual_stages, options.microbatch_sequences)
        estimates = _stage_estimates(card, chip, sl, base, t, sequences, options, *shape)
        # Where the options keep the optimizer state replicated, a count that fits only with
        # it sharded over the stage's data replicas (ZeRO-1, Megatron-LM's distributed
        # optimizer: the same traffic) is tried at ZeRO-1.
        zero1 = dict(
            _stage_estimates(card, chip, sl, base, t, sequences, sharded, *shape)
            if options.zero == 0
            else ()
        )
        tries = [
            (p, None) if est <= chip.hbm_bytes else (p, 1)
            for p, est in estimates
            if est <= chip.hbm_bytes or zero1.get(p, math.inf) <= chip.hbm_bytes
        ]
        for stages, zero in tries or [(p, None) for p, _ in estimates[-1:]]:
            c = _pipelined(card, chip, sl, strategy, t, stages, sequences, seq, *shape)
            c.zero = zero
            out.append(c)
    return out


def zero_twins(chip: Chip, options: Options, done: list[Candidate]) -> list[Candidate]:
    """For each pipelined candidate compiled at ZeRO stage 0 that does not fit, its twin at
    ZeRO-1 where that fits: the optimizer state divided over the stage's data replicas
    (`evaluation.zero_state`), the step the same (the gradient AllReduce becomes a
    ReduceScatter and an AllGather of the same bytes). No compile: the twin's figures are
    the candidate's with the state divided."""
    if options.zero != 0:
        return []
    out = []
    for c in done:
        if (
            c.pipeline is None
            or not c.evaluated
            or c.fits
            or c.zero is not None
            or c.layout is None
        ):
            continue
        memory = dict(c.figures["memory"])
        memory["optimizer"] = memory.get("optimizer", 0.0) / c.layout.degree("data", "seq")
        total = sum(memory.values())
        if total > chip.hbm_bytes:
            continue
        twin = Candidate(c.strategy, c.layout, c.tp, pipeline=c.pipeline, zero=1)
        twin.figures = {
            **c.figures,
            "memory": memory,
            "memory_per_device_bytes": total,
            "fits": True,
        }
        out.append(twin)
    return out


def pipeline_variants(
    card: ModelCard,
    chip: Chip,
    sl: Slice,
    sequences: int,
    seq: int,
    options: Options,
    done: list[Candidate],
) -> list[Candidate]:
    """Around the fastest pipelined candidate that fits: the interleaved schedule (Narayanan
    et al. 2021, section 2.2.2: v chunks a stage divide the bubble by v, for v times the
    sends) where the options ask for 1F1B, and microbatches of 2 and 4 sequences a replica
    where they ask for 1 (larger matmuls, fewer microbatches: a larger bubble), each where its
    estimated memory fits. Variants the options already fix are not tried."""
    best = min(
        (c for c in done if c.pipeline is not None and c.fits),
        key=lambda c: (c.t_expected, c.t_step),
        default=None,
    )
    if best is None or best.pipeline is None:
        return []
    pipe = best.pipeline
    base = next((c for c in _bases(done, chip.nvlink_domain or 1) if c.tp == best.tp), None)
    if base is None:
        return []
    if best.zero is not None:
        options = dataclasses.replace(options, zero=best.zero)
    tries: list[tuple[PipelineSchedule, int, int]] = []
    if options.schedule == "1f1b":
        tries.append(("interleaved", options.virtual_stages, options.microbatch_sequences))
    if options.microbatch_sequences == 1:
        tries += [(options.schedule, options.virtual_stages, n) for n in (2, 4)]
    out = []
    for schedule_, v, micro in tries:
        est = dict(
            _stage_estimates(card, chip, sl, base, best.tp, sequences, options, schedule_, v, micro)
        )
        if est.get(pipe.stages, math.inf) <= chip.hbm_bytes:
            c = _pipelined(
                card,
                chip,
                sl,
                best.strategy,
                best.tp,
                pipe.stages,
                sequences,
                seq,
                schedule_,
                v,
                micro,
            )
            c.zero = best.zero
            if c.layout is not None:
                out.append(c)
    return out


def _pipelined(
    card: ModelCard,
    chip: Chip,
    sl: Slice,
    strategy: str,
    t: int,
    stages: int,
    sequences: int,
    seq: int,
    schedule_: PipelineSchedule,
    virtual: int,
    micro: int,
) -> Candidate:
    try:
        layout, pipe = stage_layout(
            card, chip, sl, strategy, t, stages, micro, sequences, seq, schedule_, virtual
        )
    except ShardingError as exc:
        return Candidate(strategy, None, t, reason=f"not evaluated: {exc}")
    return Candidate(strategy, layout, t, pipeline=pipe)


def _bases(done: list[Candidate], domain: int) -> list[Candidate]:
    """For each tensor degree inside an NVLink domain, the evaluated unpipelined candidate
    whose memory the stages are estimated from: FSDP (+ TP), or DP + TP where FSDP could not
    shard the weights (530B on 1,120 GPUs: no weight dimension splits 140 ways)."""
    by_t: dict[int, Candidate] = {}
    for c in done:
        if (
            c.evaluated
            and c.tp <= domain
            and (c.strategy in ("fsdp", "fsdp-tp") or (c.strategy == "dp-tp" and c.tp not in by_t))
        ):
            by_t[c.tp] = c
    return [by_t[t] for t in sorted(by_t)]


def _stage_estimates(
    card: ModelCard,
    chip: Chip,
    sl: Slice,
    base: Candidate,
    t: int,
    sequences: int,
    options: Options,
    schedule_: PipelineSchedule,
    virtual: int,
    micro_sequences: int,
) -> list[tuple[int, float]]:
    """Each stage count (at least 2, dividing the chips over the tensor degree, each stage
    whole NVLink domains or a part of one, a whole number of microbatches) with its estimated
    memory per chip, fewest stages first. The estimate scales the unpipelined candidate's
    memory at the same tensor degree: its weights, gradients and optimizer state per tensor
    shard (times its data degree where it shards them over the data axes), which the stage
    replicates over its data axes (ZeRO aside), over the stages; its activations per
    sequence and layer times the layers and sequences the first stage keeps; the state of
    the whole head (the embedding tables: vocab x d_model each, over the tensor degree) on
    that stage, as `evaluate_pipeline` counts it. The compiled stage holds at least as many
    layers (the split balances time) and the head's activations too, so the estimate is a
    bound from below: a count it puts over HBM would not fit compiled either, and is not
    compiled."""
    mem = base.figures["memory"]
    data = base.data_degree
    sharded = base.layout is not None and base.layout.fsdp

    def whole(key: str, zero_stage: int) -> float:
        return mem.get(key, 0.0) * (data if sharded or options.zero >= zero_stage else 1)

    weights = whole("parameters", 3) + whole("gradients", 2)  # ZeRO-3 is FSDP
    optimizer = whole("optimizer", 1)
    params = max(1.0, whole("parameters", 3) / 2)  # per tensor shard, bf16
    head = min(params, card.vocab * card.d_model * (1 if card.tied_embeddings else 2) / t)
    ways = base.layout.degree("pod", "data", "seq") if base.layout is not None else data
    per_layer_seq = mem.get("activations", 0.0) * ways / sequences / card.n_layers
    out = []
    per_stage = sl.chips_per_pod // t
    domain = chip.nvlink_domain or 1
    v = virtual if schedule_ == "interleaved" else 1
    for p in range(2, min(card.n_layers, per_stage) + 1):
        replicas = per_stage // p
        micro = replicas * micro_sequences
        stage = replicas * t  # a stage's GPUs fill NVLink domains, or share one (H016)
        if (
            per_stage % p == 0
            and sequences % micro == 0
            and chunks_fit(card.n_layers, p, v)
            and (stage % domain == 0 or domain % stage == 0)
        ):
            pipe = Pipeline(p, sequences // micro, schedule_, v)
            shard = replicas if options.zero >= 1 else 1
            layers = math.ceil(card.n_layers / p)
            per_param = (weights + optimizer / shard) / params
            # the balanced interleaved split's second stage: at least `layers`, no head
            lone = balanced(card.n_layers, p, v) and p > 2
            est = per_param * (
                (params - head) * layers / card.n_layers + (0 if lone else head)
            ) + per_layer_seq * layers * micro_sequences * in_flight(pipe, 1 if lone else 0)
            out.append((p, est))
    return out
