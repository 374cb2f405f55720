"""Compiling a candidate: its generated programs through `shardc.compile`, the step's figures
summed over the layers (the layer's scheduled T_step x n_layers + the embedding's)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from shardc.hardware import Chip
from shardc.hardware import load as load_chip
from shardc.passes.schedule import timeline
from shardc.tools.models import ModelCard
from shardc.tools.models import load as load_card
from shardc.tools.models.sharding import Layout, ShardingError
from shardc.tools.plan.accounting import (
    add_exposed,
    add_report,
    compile_parts,
    expected_parts,
    figures,
    new_totals,
    schedule_revised,
    zero_state,
)
from shardc.tools.plan.candidates import Candidate, Options, Plan, PlanError
from shardc.tools.plan.framework import framework_seconds
from shardc.tools.plan.pipeline_parallel import INNER, evaluate_pipeline, stage_layout
from shardc.tools.plan.stages import pipeline_candidates, pipeline_variants, zero_twins
from shardc.tools.plan.strategies import choose_slice, fits_replicated, layouts, one_layout


def plan(
    card: ModelCard | str,
    chip: Chip | str,
    chips: int,
    batch_tokens: int,
    seq: int | None = None,
    options: Options | None = None,
    progress: Callable[[str], None] | None = None,
    only: tuple[str, int] | tuple[str, int, int] | tuple[str, int, int, int] | Layout | None = None,
    jobs: int = 1,
) -> Plan:
    """Enumerate, compile and rank the strategies for one training step; `progress` hears
    which candidate is compiled (`"fsdp-tp (X=2048 Y=4): 1 of 8"`). `card` and `chip` are
    objects or names (`"llama3-8b"`, `"tpu-v5e"`; a path to a TOML works too), loaded as the
    CLI loads them (`shardc.tools.models.load`, `shardc.hardware.load`).

    `only` evaluates one layout instead: a strategy and its tensor degree (`("fsdp-tp", 4)`,
    laid out on the slice as the search lays it out), a pipelined strategy, its tensor degree
    and its stages (`("pp-dp-tp", 8, 16)`) and optionally its context-parallel degree, or a
    `Layout` as given (its axes' links included; `shardc.cli.plan.mesh_layout`).

    `jobs` > 1 compiles the candidates in that many forked processes (where the platform can
    fork); the plan is the same.

    A wrong type or an out-of-range count raises `TypeError` or `ValueError` naming the
    parameter (`chips=0`, `batch_tokens="4M"`)."""
    _check_arguments(card, chip, chips, batch_tokens, seq, options, progress, jobs)
    if isinstance(card, str):
        card = load_card(card)
    if isinstance(chip, str):
        chip = load_chip(chip)
    seq = seq or card.seq_len
    options = options or Options()
    if batch_tokens < seq or batch_tokens % seq:
        raise PlanError(
            f"--batch {batch_tokens} tokens is not a whole number of {seq}-token "
            f"sequences (try {max(1, batch_tokens // seq) * seq})"
        )
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
        cands += zero_twins(chip, options, more)
        variants = pipeline_variants(card, chip, sl, sequences, seq, options, cands)
        _evaluate_all(card, chip, variants, sequences, seq, options, progress, jobs)
        cands += variants
    return Plan(card, chip, sl, batch_tokens, seq, options, cands)


def _check_arguments(card, chip, chips, batch_tokens, seq, options, progress, jobs) -> None:
    """`plan`'s arguments by type and range, each error naming its parameter."""
    import numbers

    from shardc.lang.numeric import whole
    from shardc.lang.quoting import quoted

    def described(value) -> str:
        return f"{type(value).__name__} {quoted(value)}"

    if not isinstance(card, ModelCard | str):
        raise TypeError(
            f"card must be a model card or its name ('llama3-8b'), got {described(card)}"
        )
    if not isinstance(chip, Chip | str):
        raise TypeError(
            f"chip must be a shardc.hardware.Chip or its name ('tpu-v5e'), got {described(chip)}"
        )
    for name, value in (
        ("chips", chips),
        ("batch_tokens", batch_tokens),
        ("seq", seq),
        ("jobs", jobs),
    ):
        if value is None and name == "seq":
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be a whole number, got {described(value)}")
        whole(value, name)  # NumberError, a ValueError: 0, negative, past 2**63 - 1
    if options is not None and not isinstance(options, Options):
        raise TypeError(
            f"options must be a shardc.tools.plan.candidates.Options, got {described(options)}"
        )
    if options is not None:
        rate = options.dropout
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 <= rate < 1:
            raise ValueError(
                f"options.dropout must be a rate from 0 to below 1, got {described(rate)}"
            )
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a function of one string, got {described(progress)}")


def _evaluate_all(
    card: ModelCard,
    chip: Chip,
    cands: list[Candidate],
    sequences: int,
    seq: int,
    options: Options,
    progress: Callable[[str], None] | None,
    jobs: int = 1,
) -> None:
    """Compile every candidate that has a layout; DP + TP only when its replicated state could
    fit beside FSDP + TP's at the same degree (so after those). Candidates are independent:
    with `jobs` > 1 they compile in that many processes, to the same figures."""
    todo = [c for c in cands if c.layout is not None and c.reason is None]
    for c in todo:
        if not options.sequence_parallel and c.layout is not None and c.layout.of("tp"):
            c.layout = dataclasses.replace(c.layout, sequence_parallel=False)
    first = [c for c in todo if c.strategy != "dp-tp"]
    done = _compile_each(card, chip, first, sequences, seq, options, progress, jobs, 0, len(todo))
    later = []
    for c in todo:
        if c.strategy == "dp-tp":
            twin = next(
                (f for f in cands if f.strategy == "fsdp-tp" and f.tp == c.tp and f.evaluated), None
            )
            c.reason = None if twin is None else fits_replicated(twin, chip.hbm_bytes, options.zero)
            if c.reason is None:
                later.append(c)
    _compile_each(
        card, chip, later, sequences, seq, options, progress, jobs, done, done + len(later)
    )


def _compile_each(
    card: ModelCard,
    chip: Chip,
    cands: list[Candidate],
    sequences: int,
    seq: int,
    options: Options,
    progress: Callable[[str], None] | None,
    jobs: int,
    before: int,
    total: int,
) -> int:
    """Evaluate each candidate (in `jobs` forked processes when there are several), setting
    its figures or reason; the number reported so far."""
    k = before
    if jobs > 1 and len(cands) > 1 and _can_fork():
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        _warm_up(chip)

        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(jobs, len(cands)), mp_context=ctx) as pool:
            futures = {
                pool.submit(_evaluate_one, card, chip, c, sequences, seq, options): c
                for c in sorted(cands, key=_work, reverse=True)
            }
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

    return (
        "fork" in multiprocessing.get_all_start_methods()
        and threading.active_count() == 1
        and "jax" not in sys.modules
    )


_WARM = (
    "mesh X=2\ndim B=4, D=4, F=4\nIn: bf16[B_X, D]\nparam W: bf16[D, F]\n"
    "Out[B_X, F] = In ·_D W\nbackward\n"
)
_warmed: list[bool] = []


def _warm_up(chip: Chip) -> None:
    """Once a process, before it first forks: compiling a small program imports what a compile
    imports lazily (SymPy, the parser and its grammar), so the forked processes
    share them instead of each importing them again."""
    if not _warmed:
        from shardc.driver import api

        api.compile(_WARM, hw=chip, explain=False, name="<warm-up>")
        _warmed.append(True)


def _evaluate_one(
    card: ModelCard, chip: Chip, c: Candidate, sequences: int, seq: int, options: Options
) -> tuple[dict[str, Any] | None, str | None]:
    assert c.layout is not None
    if c.zero is not None:
        options = dataclasses.replace(options, zero=c.zero)
    if c.pipeline is not None:
        return evaluate_pipeline(card, chip, c.layout, c.pipeline, sequences, seq, options)
    return evaluate(card, chip, c.layout, sequences, seq, options)


def evaluate(
    card: ModelCard, chip: Chip, layout: Layout, sequences: int, seq: int, options: Options
) -> tuple[dict[str, Any] | None, str | None]:
    """Compile a layout's programs: (figures for the whole step, None), or (None, why not)."""
    compiled = compile_parts(card, chip, layout, sequences, seq, options)
    if isinstance(compiled, str):
        return None, compiled
    acc = new_totals()
    for p, r, durations in compiled:
        t, spans = timeline(
            r.program, durations, axis_sizes=r.mesh_sizes(), busy_after=r.busy_after()
        )
        n = p.count
        acc["parts"][p.name] = {"count": n, "t_step_s": t}
        acc["t_step_s"] += t * n
        t_e, exposed = expected_parts(r, t, spans=spans, layout=layout)
        acc["t_step_expected_s"] += (t_e + framework_seconds(r, p, chip, layout, options)) * n
        add_exposed(acc, r, exposed, layout, n)
        acc["t_step_overlap_revised_s"] += schedule_revised(r, durations, layout) * n
        add_report(acc, r, p, layout, n)
    zero_state(acc["memory"], layout, options)
    return figures(acc, chip, layout, sequences * seq), None


def _one(
    card: ModelCard, chip: Chip, sl, only: tuple, sequences: int, seq: int, options: Options
) -> Candidate:
    """The candidate `--layout` names: (strategy, tensor degree) or, pipelined,
    (strategy, tensor degree, stages[, context-parallel degree])."""
    strategy, t = only[0], only[1]
    try:
        if strategy in INNER:
            stages, context = only[2], (only[3] if len(only) > 3 else 1)
            layout, pipe = stage_layout(
                card,
                chip,
                sl,
                strategy,
                t,
                stages,
                options.microbatch_sequences,
                sequences,
                seq,
                options.schedule,
                options.virtual_stages,
                context,
            )
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
