"""Render a `Report` as text, Markdown or LaTeX: a summary block, then one row per op."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardc.driver import decisions
from shardc.driver.escape import latex_comment, latex_text, md_code, md_text
from shardc.driver.formulas import latex, text
from shardc.lang.layout import format_axes
from shardc.lang.units import fmt_value
from shardc.lang.visible import visible

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.passes.derive_cost import OpCost

SUMMARY = (("T_math", "t_math_s", "s"), ("T_hbm", "t_hbm_s", "s"), ("T_comms", "t_comms_s", "s"),
           ("T_lower", "t_lower_s", "s"), ("T_upper", "t_upper_s", "s"),
           ("T_expected", "t_expected_s", "s"),
           ("FLOPs", "flops", "flop"), ("FLOPs/device", "flops_per_device", "flop"),
           ("HBM bytes/device", "hbm_bytes", "B"), ("comm bytes/device", "comm_bytes", "B"),
           ("memory/device", "memory_per_device_bytes", "B"))


def expected_note(r: Report) -> str:
    """Where T_expected's figures come from: the chip's calibration, or none (the roofline)."""
    cal = r.chip.calibration if r.chip is not None else None
    if cal is None:
        who = f"{r.chip.name} has" if r.chip is not None else "no chip, so"
        return f"equals T_lower: {who} no calibration"
    net = ", ".join(f.level for f in cal.network)
    return (f"from the calibration of {cal.chip}, {cal.describe_source()}; communication at "
            + (f"the calibrated bus bandwidth on {net}" if net else "the roofline's rate"))


def _exposed_text(r: Report) -> str:
    """The expected schedule's exposed communication: its total, then each collective's part
    (by op number), largest first, at most six."""
    parts = r.exposed(expected=True)
    if not parts:
        return ""
    total = sum(parts.values())
    each = sorted(parts.items(), key=lambda kv: (-kv[1], kv[0]))
    listed = ", ".join(f"#{i} {fmt_value(v, 's')}" for i, v in each[:6])
    more = f", {len(each) - 6} more" if len(each) > 6 else ""
    return (f"{fmt_value(total, 's'):>10}   (collective time no compute hides: {listed}{more})")


def _header(r: Report) -> list[str]:
    mesh = " ".join(f"{n}={s if s is not None else '?'}" for n, s in r.program.mesh)
    dims = " ".join(f"{n}={s if s is not None else '?'}" for n, s in r.program.dims)
    binds = " ".join(f"{k}={v:g}" for k, v in sorted(r.bindings.items()))
    precision = r.cost.matmul_precision
    lines = [f"shardc report: {visible(r.name)}",
             f"  chip: {visible(r.hardware_name or 'none (hardware symbols stay symbolic)')}   "
             f"model: {r.model}"
             + (f"   matmul precision: {precision}" if precision != "default" else ""),
             f"  mesh: {mesh or '(none)'}   dims: {dims or '(none)'}"]
    if binds:
        lines.append(f"  --set: {binds}")
    from shardc.driver.regions import shown_text

    if (note := shown_text(r)) is not None:
        lines.append(f"  plans: {note}")
    return lines


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def _holds(h: bool | None) -> str:
    return {True: "holds", False: "does not hold", None: "undecided"}[h]


def render_text(r: Report) -> str:
    r.evaluate()
    out = _header(r)
    out.append("")
    out.append("summary (per device unless noted)")
    for label, key, unit in SUMMARY:
        expr = r.totals[key]
        out.append(f"  {label:<18} {fmt_value(r.value(expr), unit):>10}   = {text(expr)}")
        if key == "t_expected_s":
            out.append(f"  {'':<18} {'':>10}   (T_expected {expected_note(r)})")
    if r.program.params or any(c.overlap for c in r.ops):
        sched = r.scheduled_step()
        for label, key in (("T_step (max)", "t_step_max_s"), ("T_step (sum)", "t_step_sum_s")):
            out.append(f"  {label:<18} {fmt_value(r.value(r.totals[key]), 's'):>10}   "
                       f"= {r.totals[key]}")
        out.append(f"  {'T_step (schedule)':<18} {fmt_value(sched, 's'):>10}   "
                   "(prefetched gathers, async reductions and collective matmuls overlap compute)")
        util = r.utilization()
        if util is not None:
            both = f"{_pct(util['mfu'])} / {_pct(util['hfu'])}"
            out.append(f"  {'MFU / HFU':<18} {both:>10}   (model FLOPs, each einsum once, / "
                       "(devices x peak x T_step); HFU: every FLOP a device runs)")
        expected = r.utilization(expected=True)
        if expected is not None and r.calibrated:
            out.append(f"  {'T_step (expected)':<18} "
                       f"{fmt_value(r.scheduled_step(expected=True), 's'):>10}   "
                       "(the same schedule over each op's expected time; weight gathers "
                       "prefetched whole, the first exposed)")
            out.append(f"  {'MFU (expected)':<18} {_pct(expected['mfu']):>10}")
            shown = _exposed_text(r)
            if shown:
                out.append(f"  {'exposed (expected)':<18} {shown}")
    if "t_recompute_s" in r.totals:
        expr = r.totals["t_recompute_s"]
        out.append(f"  {'T_recompute':<18} {fmt_value(r.value(expr), 's'):>10}   = {expr}   "
                   f"(--remat {r.options.get('remat')}: forward ops the backward pass runs "
                   "again, compute in T_math and T_hbm, collectives in T_comms)")
    per_level = [k for k in r.totals if k.startswith("t_comms_") and k not in (
        "t_comms_s", "t_comms_critical_s")]
    for key, expr in r.totals.items():
        if key in per_level and len(per_level) > 1:
            label = f"T_comms ({key[len('t_comms_'):-2]})"
            out.append(f"  {label:<18} {fmt_value(r.value(expr), 's'):>10}   = {expr}")
    out.append(f"  {'bound':<18} {r.bound() or 'undecided (bind sizes and pick a chip)':>10}")
    out.extend(_block_lines(r))
    if r.memory is not None:
        m = r.memory
        out.append("")
        flash = ", attention flash" if r.options.get("attention") == "flash" else ""
        out.append(f"memory per device, training step (optimizer {r.options.get('optimizer')}, "
                   f"remat {r.options.get('remat')}{flash})")
        for label, expr in (("parameters", m.parameters), ("gradients", m.gradients),
                            ("optimizer state", m.optimizer), ("activations", m.activations),
                            ("total", m.total)):
            out.append(f"  {label:<18} {fmt_value(r.value(expr), 'B'):>10}   = {expr}")
        if m.saved:
            out.append(f"  kept for backward: {', '.join(m.saved)}")
        out.append("  (what the step holds at once; the summary's memory/device adds up every "
                   "array the program names, live or not)")
    topo = topology_lines(r)
    if topo:
        out.append("")
        out.append("topology")
        out.extend(f"  {line}" for line in topo)
    if r.conditions:
        out.append("")
        out.append("conditions")
        for c in r.conditions:
            out.append(f"  {c.text}:")
            out.append(f"    {c.relation}   [{_holds(r.holds(c.relation))}: "
                       f"{fmt_value(r.value(c.relation.lhs), '')} vs "
                       f"{fmt_value(r.value(c.relation.rhs), '')}]")
    if r.decisions:
        out.append("")
        out.append("decisions")
        for d in r.decisions:
            out.append(f"  line {d.line}: {decisions.statement(d)} (decided by "
                       f"{decisions.decided_by(d)})")
            for a in d.alternatives:
                mark = "*" if a.chosen else " "
                when = decisions.condition(d, a)
                cond = (f"  ({when})" if when.startswith(("never", "always"))
                        else f"  wins if {when}" if when else "")
                out.append(f"    {mark} {decisions.description(d, a)}{cond}")
            regs = decisions.regions(d)
            if regs:
                out.append("    regions (the plan a compile with the sizes bound would choose):")
                for reg in regs:
                    out.append(f"      {decisions.candidate_text(d, reg.order)}   where "
                               f"{decisions.region_text(reg)}")
    out.append("")
    out.append("ops")
    runs = any(c.count != 1 for c in r.ops)  # a `repeat`: say how often each op runs
    rows = [("#", "line", *(("runs",) if runs else ()), "op", "axes", "from -> to", "FLOPs/dev",
             "bytes", "time", "expected", "bound", "crossover")]
    for c in r.ops:
        t = r.value(c.time)
        bytes_ = c.comm_bytes if c.kind == "collective" else c.hbm_bytes
        rows.append((str(c.index), str(c.line), *((str(c.count),) if runs else ()), c.op,
                     format_axes(c.axes) if c.axes else "",
                     f"{c.src} -> {c.dst}", fmt_value(r.value(c.flops_per_device), "flop"),
                     fmt_value(r.value(bytes_), "B"), fmt_value(t, "s"),
                     fmt_value(r.value(c.t_expected), "s"), r.op_bound(c) or "-",
                     fmt_value(r.value(c.crossover_bytes), "B")
                     if c.crossover_bytes is not None else ""))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                   .rstrip())
    reasons = [(c.index, c.reason) for c in r.ops if c.reason and c.kind == "collective"]
    if reasons:
        out.append("")
        out.append("why each collective")
        # The op of each index found once: a scan of the ops per collective was quadratic.
        by_index: dict[int, OpCost] = {}
        for c in r.ops:
            by_index.setdefault(c.index, c)
        for i, why in reasons:
            tag = {"prefetch": " [off the critical path: prefetched]",
                   "async": " [off the critical path: asynchronous]"}.get(by_index[i].overlap, "")
            out.append(f"  #{i}: {why}{tag}")
    for w in r.warnings:
        out.append(f"warning: {visible(w)}")
    return "\n".join(out) + "\n"


SECTIONS = {"summary": "summary", "repeats": "repeat blocks", "memory": "memory per device",
            "topology": "topology", "conditions": "conditions", "decisions": "decisions",
            "ops": "ops", "why": "why each collective", "regions": "totals by region"}
"""The text report's sections (`--only`), by the words their title starts with."""


def select_sections(text: str, keep: frozenset[str] | set[str]) -> str:
    """The text report with the header and only the sections named in `keep` (keys of
    SECTIONS): a section is a block between blank lines, known by its first line.

    >>> print(select_sections("head\\n\\nsummary x\\n  a\\n\\nops\\n  b\\n", {"summary"}), end="")
    head
    <BLANKLINE>
    summary x
      a
    """
    blocks = text.rstrip("\n").split("\n\n")
    titles = {SECTIONS[k] for k in keep}
    kept = [blocks[0]] + [b for b in blocks[1:] if any(b.startswith(t) for t in titles)]
    return "\n\n".join(kept) + "\n"


def topology_lines(r: Report) -> list[str]:
    """One line per mesh axis: its link level, physical axes, ring or line, and why."""
    topo = r.program.topology
    if topo is None:
        return []
    lines = []
    for link in topo.links:
        if link.level == "ici":
            phys = []
            for p in link.physical:
                pa = r.program.topology.phys(p)
                shape = "ring" if pa.wrap and (pa.length is None or pa.length >= 3) else "line"
                length = "?" if pa.length is None else str(pa.length)
                extra = ", one neighbour" if pa.wrap and pa.length == 2 else ""
                named = "" if link.physical == (link.axis,) else f"{p}: "
                phys.append(f"{named}{shape} of {length} ({pa.why}{extra})")
            stride = f", stride {link.stride}" if link.stride != 1 else ""
            pa = topo.phys(link.physical[0]) if len(link.physical) == 1 else None
            if (pa is not None and pa.wrap and pa.length is not None and link.size is not None
                    and link.size * link.stride < pa.length):
                stride += (f"; alone, its {link.size} chips are a segment of the ring: a line")
            lines.append(f"{link.axis}: ICI " + "; ".join(phys) + stride)
        elif link.level == "nvlink" and link.inner is not None:
            lines.append(f"{link.axis}: NVLink inside a domain ({link.inner} devices), "
                         "InfiniBand across domains")
        else:
            lines.append(f"{link.axis}: {link.level}")
    return lines


BLOCK_SUMMARY = (("T_math", "t_math_s", "s"), ("T_hbm", "t_hbm_s", "s"),
                 ("T_comms", "t_comms_s", "s"), ("T_compute", "t_compute_s", "s"),
                 ("FLOPs/device", "flops_per_device", "flop"),
                 ("comm bytes/device", "comm_bytes", "B"))


def _block_lines(r: Report) -> list[str]:
    """Each `repeat` block: its figures for one iteration (a layer) and for all of them."""
    if not r.cost.blocks:
        return []
    out = ["", "repeat blocks (per iteration, all iterations; op times in the table are per run)"]
    for b in r.cost.blocks:
        n = r.value(b.count)
        runs = f"{n:g} times" if n is not None else "times unknown"
        out.append(f"  line {b.line}: repeat {b.text}   ({runs})")
        for label, key, unit in BLOCK_SUMMARY:
            per, tot = b.per_iteration[key], b.total[key]
            out.append(f"    {label:<18} {fmt_value(r.value(per), unit):>10} "
                       f"{fmt_value(r.value(tot), unit):>10}   = {per} per iteration")
    return out


def render_markdown(r: Report) -> str:
    r.evaluate()
    out = [f"### shardc report: {md_code(r.name, markup_as_text=True)}", ""]
    out.append(f"chip **{md_text(r.hardware_name or 'none')}**, model **{r.model}**, mesh "
               + ", ".join(md_code(f"{n}={s if s is not None else n}")
                           for n, s in r.program.mesh))
    from shardc.driver.regions import shown_text

    if (note := shown_text(r)) is not None:
        out.extend(["", f"plans: {md_text(note)}"])
    out.append("")
    out.append("| quantity | value | formula |")
    out.append("|---|---|---|")
    for label, key, unit in SUMMARY:
        expr = r.totals[key]
        out.append(f"| {label} | {fmt_value(r.value(expr), unit)} | ${latex(expr)}$ |")
    out.append(f"| bound | {r.bound() or 'undecided'} | |")
    util = r.utilization() if r.program.params or any(c.overlap for c in r.ops) else None
    if util is not None:
        out.append(f"| MFU / HFU | {_pct(util['mfu'])} / {_pct(util['hfu'])} | "
                   "model FLOPs / (devices x peak x T_step); every FLOP a device runs |")
        expected = r.utilization(expected=True) if r.calibrated else None
        if expected is not None:
            out.append(f"| MFU (expected) | {_pct(expected['mfu'])} | the schedule over each "
                       "op's expected time |")
    out.append("")
    out.append(f"T_expected {md_text(expected_note(r))}.")
    for b in r.cost.blocks:
        out.append("")
        out.append(f"{md_code(f'repeat {b.text}')} (line {b.line}):")
        out.append("")
        out.append("| quantity | per iteration | all iterations | per iteration |")
        out.append("|---|---|---|---|")
        for label, key, unit in BLOCK_SUMMARY:
            per, tot = b.per_iteration[key], b.total[key]
            out.append(f"| {label} | {fmt_value(r.value(per), unit)} | "
                       f"{fmt_value(r.value(tot), unit)} | ${latex(per)}$ |")
    if r.conditions:
        out.append("")
        for c in r.conditions:
            out.append(f"- {md_text(c.text)}: ${latex(c.relation)}$ "
                       f"({_holds(r.holds(c.relation))})")
    if r.decisions:
        out.append("")
        out.append("**decisions**")
        out.append("")
        for d in r.decisions:
            out.append(f"- line {d.line} {md_code(decisions.statement(d))} (decided by "
                       f"{md_text(decisions.decided_by(d))})")
            for a in d.alternatives:
                when = decisions.condition(d, a)
                cond = (f" ({when})" if when.startswith(("never", "always"))
                        else f" — wins if {md_code(when)}" if when else "")
                out.append(f"  - {'**chosen**: ' if a.chosen else ''}"
                           f"{md_text(decisions.description(d, a))}{cond}")
            for reg in decisions.regions(d):
                out.append(f"  - region {md_code(decisions.region_text(reg))}: "
                           f"{md_text(decisions.candidate_text(d, reg.order))}")
    out.append("")
    out.append("| # | line | op | axes | from → to | FLOPs/dev | bytes | time | expected | bound "
               "| reason |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for c in r.ops:
        t = r.value(c.time)
        bytes_ = c.comm_bytes if c.kind == "collective" else c.hbm_bytes
        out.append("| " + " | ".join([
            str(c.index), str(c.line), md_text(c.op), format_axes(c.axes) if c.axes else "",
            f"{md_code(c.src, table=True)} → {md_code(c.dst, table=True)}",
            fmt_value(r.value(c.flops_per_device), "flop"),
            fmt_value(r.value(bytes_), "B"), fmt_value(t, "s"),
            fmt_value(r.value(c.t_expected), "s"), r.op_bound(c) or "-",
            md_text(c.reason)]) + " |")
    return "\n".join(out) + "\n"


def render_latex(r: Report) -> str:
    r.evaluate()
    out = [f"% shardc report: {latex_comment(r.name)} (chip "
           f"{latex_comment(r.hardware_name or 'none')}, model {r.model})",
           "\\begin{align*}"]
    from shardc.driver.regions import shown_text

    if (note := shown_text(r)) is not None:
        out.insert(1, f"% plans: {note}")
    rows = []
    for label, key, _ in SUMMARY:
        rows.append(f"  \\text{{{label.replace('_', chr(92) + '_')}}} &= {latex(r.totals[key])}")
    out.append(" \\\\\n".join(rows))
    out.append("\\end{align*}")
    if r.conditions:
        out.append("\\begin{align*}")
        out.append(" \\\\\n".join(f"  \\text{{{latex_text(c.name)}}}:\\ & {latex(c.relation)}"
                                   for c in r.conditions))
        out.append("\\end{align*}")
    out.append("\\begin{tabular}{rlllll}")
    out.append("  \\# & op & axes & bytes & time & expected \\\\ \\hline")
    for c in r.ops:
        bytes_ = c.comm_bytes if c.kind == "collective" else c.hbm_bytes
        out.append(f"  {c.index} & {latex_text(c.op)} & {format_axes(c.axes) if c.axes else ''} & "
                   f"${latex(bytes_)}$ & ${latex(c.time)}$ & ${latex(c.t_expected)}$ \\\\")
    out.append("\\end{tabular}")
    return "\n".join(out) + "\n"
