"""A plan in words and as JSON (`shardc plan`): the candidates ranked, each with its times,
memory and the reason it was kept or dropped."""

from __future__ import annotations

SCHEMA = "shardc.plan/1"
"""The `schema` of `plan_dict`, described by `shardc/driver/schemas/plan.schema.json`."""


def candidate_dict(c) -> dict:
    f = c.figures
    lay = c.layout
    out = {
        "strategy": c.strategy,
        "label": c.label(),
        "mesh": _mesh(c) if lay else None,
        "mesh_text": c.mesh_text() if lay else None,
        "degrees": None
        if lay is None
        else {
            "data": lay.degree("data", "seq"),
            "sequence": lay.degree("seq"),
            "tensor": lay.degree("tp"),
            "pods": lay.degree("pod"),
            **({"pipeline": c.pipeline.stages} if c.pipeline else {}),
        },
        "evaluated": c.evaluated,
        "reason": c.reason,
        "t_step_s": f.get("t_step_s"),
        "t_step_expected_s": f.get("t_step_expected_s"),
        "bound": f.get("bound"),
        "bound_level": f.get("bound_level"),
        "memory_per_device_bytes": f.get("memory_per_device_bytes"),
        "fits": f.get("fits") if c.evaluated else None,
    }
    for key in (
        "t_step_overlap_revised_s",
        "t_lower_s",
        "t_math_s",
        "t_hbm_s",
        "t_comms_s",
        "t_comms_by_level_s",
        "t_comms_by_role_s",
        "t_exposed_by_role_s",
        "memory",
        "parts",
        "chips",
        "tokens_per_chip",
        "flops_per_device",
        "model_flops",
        "mfu",
        "mfu_expected",
        "hfu",
        "pipeline",
    ):
        if key in f:
            out[key] = f[key]
    return out


def _mesh(c) -> dict:
    pp = {"PP": c.pipeline.stages} if c.pipeline else {}
    return {**pp, **{a.name: a.size for a in c.layout.axes}}


def plan_dict(p) -> dict:
    from shardc.tools.plan.explanation import book_figures, explain

    best = p.best
    return {
        "schema": SCHEMA,
        "model": p.card.name,
        "hardware": p.chip.name,
        "chips": p.slice.chips + p.slice.idle,
        "slice": {
            "pods": p.slice.pods,
            "chips_per_pod": p.slice.chips_per_pod,
            "shape": list(p.slice.shape),
            "chips_used": p.slice.chips,
            "idle": p.slice.idle,
        },
        "batch_tokens": p.batch_tokens,
        "seq_len": p.seq,
        "sequences": p.sequences,
        "options": {
            "optimizer": p.options.optimizer,
            "remat": p.options.remat,
            "attention": p.options.attention,
            "cost_model": p.options.model,
            "zero": p.options.zero,
            "pipeline_schedule": p.options.schedule,
            "virtual_stages": p.options.virtual_stages,
            "microbatch_sequences": p.options.microbatch_sequences,
            "sequence_parallel": p.options.sequence_parallel,
            "dropout": p.options.dropout,
        },
        "candidates": [candidate_dict(c) for c in ordered(p)],
        "best": None if best is None else {**candidate_dict(best), "why": explain(p)},
        "book": book_figures(p),
    }


def ordered(p) -> list:
    """The candidates as the tables list them: the ranked ones first, then the rest."""
    ranked = p.ranked()
    return ranked + [c for c in p.candidates if c not in ranked]


def time_text(x: float | None) -> str:
    """A step time as the tables print it: seconds from 0.1 s, milliseconds below, `-` for none."""
    if x is None:
        return "-"
    return f"{x:.3f} s" if x >= 0.1 else f"{x * 1e3:.1f} ms"


def plan_text(p) -> str:
    from shardc.tools.plan.explanation import book_figures, explain

    sl = p.slice
    pods = f"{sl.pods} pods of {sl.chips_per_pod}" if sl.pods > 1 else f"{sl.chips_per_pod}"
    idle = (
        f", {sl.idle} idle (the plan splits each pod's chips into powers of two)" if sl.idle else ""
    )
    shape = f", {'x'.join(map(str, sl.shape))} per pod" if sl.shape else ""
    pipelined = _pipeline_note(p)
    lines = [
        f"shardc plan: {p.card.display_name} on {sl.chips + sl.idle} {p.chip.name} chips, "
        f"batch {p.batch_tokens:,} tokens ({p.sequences} sequences x {p.seq})",
        f"  uses {pods} chips{shape}{idle}",
        f"  optimizer {p.options.optimizer}, remat {p.options.remat}, attention "
        f"{p.options.attention}, collectives "
        f"{p.options.model}{_extra_options(p)}; "
        f"{'unpipelined: ' if pipelined else ''}t_step = the layer's scheduled "
        f"T_step x {p.card.n_layers} + the embedding's",
        *pipelined,
        "",
    ]
    rows = [
        (
            "rank",
            "strategy",
            "mesh",
            "t_step",
            "expected",
            "bound",
            "memory/dev",
            "fits",
            "MFU",
            "MFU exp.",
            "HFU",
        )
    ]
    rank = 0
    for c in ordered(p):
        f = c.figures
        if not c.evaluated:
            rows.append(("-", c.label(), c.reason or "", "", "", "", "", "", "", "", ""))
            continue
        rank += 1
        bound = f["bound"] + (f" ({f['bound_level']})" if f.get("bound_level") else "")
        rows.append(
            (
                str(rank) if c.fits else "-",
                c.label(),
                c.mesh_text(),
                time_text(f["t_step_s"]),
                time_text(f["t_step_expected_s"]),
                bound,
                f"{f['memory_per_device_bytes'] / 1e9:.1f} GB",
                "yes" if c.fits else "no",
                pct_of(f["mfu"]),
                pct_of(f["mfu_expected"]),
                pct_of(f["hfu"]),
            )
        )
    widths = [max(len(r[i]) for r in rows if r[3] or i < 2) for i in range(len(rows[0]))]
    for r in rows:
        if not r[3] and r[0] == "-" and r[2].startswith("not evaluated"):
            lines.append(f"  {r[0]:{widths[0]}}  {r[1]:{widths[1]}}  {r[2]}")
        else:
            lines.append(
                "  " + "  ".join(f"{x:{w}}" for x, w in zip(r, widths, strict=True)).rstrip()
            )
    lines.append(
        "  MFU: model FLOPs (each einsum of the step once, no recomputation or replicated "
        "work) / (chips x peak x t_step); HFU: every FLOP a chip runs / (peak x t_step)"
    )
    lines.append(
        "  expected: the calibrated step, by which the candidates are ranked (the chip's "
        "calibration, collectives at their measured bus bandwidth, overlap that can "
        "fail); t_step on a chip without one"
    )
    lines.append("")
    lines += explain(p)
    book = book_figures(p)
    if book:
        lines.append("")
        lines.append(
            "the book's conditions for this setting (the training and LLaMA 3 chapters, "
            "and the revised training chapter):"
        )
        lines += [f"  {line}" for line in book["lines"]]
    return "\n".join(lines) + "\n"


def _extra_options(p) -> str:
    zero = f", ZeRO-{p.options.zero} on replicated weights" if p.options.zero else ""
    sp = "" if p.options.sequence_parallel else ", no sequence parallelism"
    dropout = f", dropout {p.options.dropout:g}" if p.options.dropout else ""
    return zero + sp + dropout


def _pipeline_note(p) -> list[str]:
    """How pipelined candidates are timed, when the plan has one."""
    pipes = [c for c in p.candidates if c.pipeline is not None and c.evaluated]
    if not pipes:
        return []
    o = p.options
    v = f" with {o.virtual_stages} chunks per stage" if o.schedule == "interleaved" else ""
    return [
        f"  pipelined (PP=): {o.schedule} schedule{v}, microbatches of "
        f"{o.microbatch_sequences} sequence(s) per data replica; t_step = (m + (p - 1) / v) "
        "x the busiest stage + the sends of the fill and drain + the exposed gradient "
        "reduction"
    ]


def pct_of(x: float | None) -> str:
    """A fraction as a whole percentage, `-` for none or zero."""
    return f"{x * 100:.0f}%" if x else "-"
