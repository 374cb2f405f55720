"""Why the best candidate wins, and the book's closed-form conditions for the setting."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shardc.tools.plan.candidates import Plan


def _pct(a: float, b: float) -> str:
    return f"{(b / a - 1) * 100:.1f}%"


def _s(x: float) -> str:
    return f"{x:.3f} s" if x >= 0.1 else f"{x * 1e3:.1f} ms"


def _memory_hint(p: Plan) -> str:
    """What lowers the memory per chip that the plan's options have not used yet."""
    if p.options.remat != "block":
        return "--remat block"
    if p.options.attention != "flash":
        return "--attention flash"
    return "more chips"


def explain(p: Plan) -> list[str]:
    """Why the best candidate wins: against the runner-up, component by component, and where
    pure FSDP and the book's overlap models stand."""
    best, ru = p.best, p.runner_up
    if best is None:
        fitting = [c for c in p.ranked()]
        least = min((c.figures["memory_per_device_bytes"] for c in fitting), default=None)
        if least is None:
            return ["no candidate could be evaluated (see the reasons above)"]
        return [
            f"no candidate fits in the {p.chip.hbm_bytes / 1e9:.0f} GB of HBM of each "
            f"{p.chip.name}"
            + (
                f" (the least needs {least / 1e9:.1f} GB per chip; try {_memory_hint(p)})"
                if least
                else ""
            )
        ]
    f = best.figures
    # ranked by the calibrated step; on a chip without a calibration it is the roofline's
    cal = getattr(p.chip, "calibration", None) is not None
    step = (
        f"{_s(f['t_step_expected_s'])} per step calibrated, {_s(f['t_step_s'])} on the roofline"
        if cal
        else f"{_s(f['t_step_s'])} per step"
    )
    out = [
        f"best: {best.label()}, {step} "
        f"(MFU {f['mfu'] * 100:.0f}%, HFU {f['hfu'] * 100:.0f}%), "
        f"{f['memory_per_device_bytes'] / 1e9:.1f} "
        f"GB per chip; mesh {best.layout.mesh_text() if best.layout else ''}"
    ]
    if ru is not None:
        g = ru.figures
        key = "t_step_expected_s" if cal else "t_step_s"
        out.append(
            f"  beats {ru.label()} ({_s(g[key])}{' calibrated' if cal else ''}) by "
            f"{_pct(f[key], g[key])}."
        )
        dm = g["t_math_s"] - f["t_math_s"]
        de = (g["t_step_s"] - g["t_math_s"]) - (f["t_step_s"] - f["t_math_s"])

        def part(d: float, what: str) -> str:
            return f"{_s(d)} is {what}" if d >= 0 else f"{what} costs it {_s(-d)} more"

        lead = (
            f"  On the roofline ({_s(f['t_step_s'])} vs {_s(g['t_step_s'])}), "
            if cal
            else f"  Of the {_s(g['t_step_s'] - f['t_step_s'])} it saves, "
        )
        out.append(
            lead + f"{part(dm, 'math')} (T_math {_s(f['t_math_s'])} vs {_s(g['t_math_s'])}) "
            f"and {part(de, 'communication left on the critical path')} "
            f"(t_step - T_math: {_s(f['t_step_s'] - f['t_math_s'])} vs "
            f"{_s(g['t_step_s'] - g['t_math_s'])}). Communication by kind:"
        )
        roles = sorted(set(f["t_comms_by_role_s"]) | set(g["t_comms_by_role_s"]))
        what = {
            "fsdp": "FSDP weight gathers and gradient reduce-scatters (prefetched / async: "
            "they overlap compute)",
            "dp": "gradient all-reduces (async)",
            "tp": "TP activation gathers and reduce-scatters (on the critical path, overlapped "
            "with their matmuls chunk by chunk)",
            "dcn": "data parallelism across pods (DCN)",
            "mixed": "collectives over data and tensor axes together",
        }
        for r in roles:
            a, b = f["t_comms_by_role_s"].get(r, 0.0), g["t_comms_by_role_s"].get(r, 0.0)
            out.append(f"    {what.get(r, r)}: {_s(a)} vs {_s(b)}")
    holds = f["t_math_s"] >= f["t_comms_s"]
    out.append(
        f"  the compute-bound condition T_math > T_comms (the roofline chapter) "
        f"{'holds' if holds else 'fails'} for it: T_math {_s(f['t_math_s'])}, T_comms "
        f"{_s(f['t_comms_s'])}, T_hbm {_s(f['t_hbm_s'])}; the schedule overlaps the "
        f"prefetched gathers, async reductions and collective matmuls with compute, "
        f"which gives "
        f"{_s(f['t_step_s'])}."
    )
    fsdp = next((c for c in p.candidates if c.strategy == "fsdp" and c.evaluated), None)
    if fsdp is not None and fsdp is not best:
        h = fsdp.figures
        kind = (
            f"communication-bound on {h['bound_level'].upper()}"
            if h["bound"] == "comms"
            else f"{h['bound']}-bound"
        )
        out.append(
            f"  pure FSDP ({fsdp.label()}) is {kind}: T_comms {_s(h['t_comms_s'])} vs "
            f"T_math {_s(h['t_math_s'])}, t_step {_s(h['t_step_s'])}."
        )
    fits = [c for c in p.ranked() if c.fits]
    by_revised = min(fits, key=lambda c: c.figures["t_step_overlap_revised_s"])
    by_max = min(fits, key=lambda c: c.figures["t_lower_s"])
    out.append(
        "  with the revised training chapter's model (FSDP and TP collectives also overlap "
        f"each other) the best is {by_revised.label()} at "
        f"{_s(by_revised.figures['t_step_overlap_revised_s'])}"
        + (
            " (the same)"
            if by_revised is best
            else f" ({best.label()}: {_s(f['t_step_overlap_revised_s'])})"
        )
        + ";"
    )
    out.append(
        f"  with perfect overlap (the book's max(T_math, T_comms)) it is {by_max.label()} at "
        f"{_s(by_max.figures['t_lower_s'])}"
        + (" (the same)." if by_max is best else f" ({best.label()}: {_s(f['t_lower_s'])}).")
    )
    return out


def book_figures(p: Plan) -> dict[str, Any] | None:
    """The training and LLaMA 3 chapters' closed-form conditions for this setting, to set beside the
    compiler's."""
    from shardc.tools.derive_solve import round_power_of_two

    chip, card = p.chip, p.card
    alpha = chip.ici_intensity()
    n = p.slice.chips_per_pod
    b = p.batch_tokens / p.slice.pods
    f = card.d_ff
    axes = max(1, chip.ici_axes)
    per_chip = b / n
    fsdp_min = alpha / axes
    mixed_book = 2 * alpha**2 / f
    mixed_revised = alpha**2 / (2 * f)
    x_opt = math.sqrt(2 * b * n / f)
    x_round = round_power_of_two(x_opt, n)
    w = "W_ici" if chip.link_kind == "ici" else f"W_{chip.link_kind}"
    lines = [
        f"alpha = C / {w} = {alpha:.0f}; B / N = {b:,.0f} / {n} = {per_chip:.0f} tokens per chip",
        f"FSDP compute-bound iff B/N > alpha / n_axes = {fsdp_min:.0f} (the training chapter, "
        f"{axes} axes): {'holds' if per_chip > fsdp_min else 'fails'}",
        f"FSDP + TP compute-bound iff B/N > 2 alpha^2 / F = {mixed_book:.0f} (the book, "
        f"M_X M_Y = 2): {'holds' if per_chip > mixed_book else 'fails'}; with the revised "
        f"training chapter's overlap alpha^2 / (2F) = {mixed_revised:.0f}: "
        f"{'holds' if per_chip > mixed_revised else 'fails'}",
        f"X_opt = sqrt(2 B N / F) = {x_opt:.0f} (the LLaMA 3 chapter, M_X / M_Y = 2); "
        f"as a power of two: {x_round}-way FSDP x {n // x_round}-way TP",
    ]
    out: dict[str, Any] = {
        "alpha": alpha,
        "tokens_per_chip": per_chip,
        "fsdp_min_tokens_per_chip": fsdp_min,
        "fsdp_tp_min_tokens_per_chip_book": mixed_book,
        "fsdp_tp_min_tokens_per_chip_revised": mixed_revised,
        "x_opt": x_opt,
        "x_opt_power_of_two": x_round,
        "lines": lines,
    }
    dcn = chip.dcn_intensity()
    if p.slice.pods > 1 and dcn is not None:
        ok = b > dcn * n
        out["dcn_min_tokens_per_pod"] = dcn * n
        lines.append(
            f"DCN data parallelism compute-bound iff B / pods > C_pod / W_dcn = "
            f"{dcn * n:,.0f} tokens (the training chapter 'Scaling Between Pods'): "
            f"{'holds' if ok else 'fails'}"
        )
    return out
