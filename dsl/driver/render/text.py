"""The text report: a header, then each section as a title and indented rows, the ops as a
table (`shardc compile`'s default format)."""

from __future__ import annotations

from shardc.driver import decision_regions, decisions
from shardc.driver.document import (
    Block,
    Bound,
    Calibration,
    Condition,
    DecisionRow,
    Header,
    Line,
    Op,
    Reason,
    Region,
    RegionsPast,
    Section,
    Step,
    Total,
    Utilization,
    Warning,
)
from shardc.driver.formulas import text
from shardc.driver.render.writer import Writer, holds_text, past_text, pct
from shardc.lang.layout import format_axes
from shardc.lang.units import fmt_value
from shardc.lang.visible import visible


class TextWriter(Writer):
    format = "text"

    def _section(self, s: Section) -> list[str]:
        title = f"{s.title} ({s.detail})" if s.detail else s.title
        return ["", title, *self.rows(s.rows)]

    def _section_header(self, s: Section) -> list[str]:
        return self.rows(s.rows)

    def _section_warnings(self, s: Section) -> list[str]:
        return self.rows(s.rows)

    def _section_regions(self, s: Section) -> list[str]:
        if s.rows and isinstance(s.rows[0], RegionsPast):
            return self.rows(s.rows)
        return self._section(s)

    def _section_ops(self, s: Section) -> list[str]:
        ops: tuple[Op, ...] = s.rows
        runs = any(c.count != 1 for c in ops)  # a `repeat`: say how often each op runs
        rows = [
            (
                "#",
                "line",
                *(("runs",) if runs else ()),
                "op",
                "axes",
                "from -> to",
                "FLOPs/dev",
                "bytes",
                "time",
                "expected",
                "bound",
                "crossover",
            )
        ]
        for c in ops:
            rows.append(
                (
                    str(c.index),
                    str(c.line),
                    *((str(c.count),) if runs else ()),
                    c.op,
                    format_axes(c.axes) if c.axes else "",
                    f"{c.src} -> {c.dst}",
                    fmt_value(c.flops, "flop"),
                    fmt_value(c.bytes, "B"),
                    fmt_value(c.time, "s"),
                    fmt_value(c.expected, "s"),
                    c.bound or "-",
                    fmt_value(c.crossover, "B") if c.has_crossover else "",
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        return [
            "",
            "ops",
            *(
                "  "
                + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                for row in rows
            ),
        ]

    def _print_Header(self, h: Header) -> list[str]:
        mesh = " ".join(f"{n}={s if s is not None else '?'}" for n, s in h.mesh)
        dims = " ".join(f"{n}={s if s is not None else '?'}" for n, s in h.dims)
        binds = " ".join(f"{k}={v:g}" for k, v in h.bindings)
        lines = [
            f"shardc report: {visible(h.program)}",
            f"  chip: {visible(h.chip or 'none (hardware symbols stay symbolic)')}   "
            f"model: {h.model}"
            + (f"   matmul precision: {h.precision}" if h.precision != "default" else ""),
            f"  mesh: {mesh or '(none)'}   dims: {dims or '(none)'}",
        ]
        if binds:
            lines.append(f"  --set: {binds}")
        if h.plans is not None:
            lines.append(f"  plans: {h.plans}")
        return lines

    def _print_Total(self, t: Total) -> list[str]:
        return [f"  {t.label:<18} {fmt_value(t.value, t.unit):>10}   = {text(t.formula)}"]

    def _print_Calibration(self, c: Calibration) -> list[str]:
        return [f"  {'':<18} {'':>10}   (T_expected {c.text})"]

    def _print_Step(self, s: Step) -> list[str]:
        return [
            f"  {s.label:<18} {fmt_value(s.value, 's'):>10}"
            + (f"   = {text(s.formula)}" if s.formula is not None else "")
            + (f"   ({s.note})" if s.note else "")
        ]

    def _print_Utilization(self, u: Utilization) -> list[str]:
        if u.expected:
            return [f"  {'MFU (expected)':<18} {pct(u.mfu):>10}"]
        return [
            f"  {'MFU / HFU':<18} {f'{pct(u.mfu)} / {pct(u.hfu)}':>10}   (model FLOPs, "
            "each einsum once, / (devices x peak x T_step); HFU: every FLOP a device runs)"
        ]

    def _print_Bound(self, b: Bound) -> list[str]:
        return [f"  {'bound':<18} {b.value or 'undecided (bind sizes and pick a chip)':>10}"]

    def _print_Block(self, b: Block) -> list[str]:
        runs = f"{b.runs:g} times" if b.runs is not None else "times unknown"
        return [
            f"  line {b.line}: repeat {b.text}   ({runs})",
            *(
                f"    {label:<18} {fmt_value(per, unit):>10} {fmt_value(tot, unit):>10}   "
                f"= {text(formula)} per iteration"
                for label, unit, per, tot, formula in b.rows
            ),
        ]

    def _print_Line(self, line: Line) -> list[str]:
        return [f"  {line.text}"]

    def _print_Condition(self, c: Condition) -> list[str]:
        return [
            f"  {c.text}:",
            f"    {text(c.relation)}   [{holds_text(c.holds)}: "
            f"{fmt_value(c.lhs, '')} vs {fmt_value(c.rhs, '')}]",
        ]

    def _print_DecisionRow(self, row: DecisionRow) -> list[str]:
        d = row.decision
        out = [f"  line {d.line}: {decisions.statement(d)} (decided by {decisions.decided_by(d)})"]
        for a in d.alternatives:
            when = decisions.condition(d, a)
            cond = (
                f"  ({when})"
                if when.startswith(("never", "always"))
                else f"  wins if {when}"
                if when
                else ""
            )
            out.append(f"    {'*' if a.chosen else ' '} {decisions.description(d, a)}{cond}")
        regs = decision_regions.regions(d)
        if regs:
            out.append(
                "    regions (this product's own choice; the whole program's plans: "
                "totals by region):"
            )
            out.extend(
                f"      {decision_regions.candidate_text(d, reg.order)}   where "
                f"{decision_regions.region_text(reg)}"
                for reg in regs
            )
        return out

    def _print_Reason(self, r: Reason) -> list[str]:
        tag = {
            "prefetch": " [off the critical path: prefetched]",
            "async": " [off the critical path: asynchronous]",
        }.get(r.overlap or "", "")
        return [f"  #{r.index}: {r.text}{tag}"]

    def _print_Warning(self, w: Warning) -> list[str]:
        return [f"warning: {visible(w.text)}"]

    def _print_Region(self, v: Region) -> list[str]:
        return [
            f"  where {v.condition}   ({v.share:.0%} of the sample)",
            *(f"    boundary: {b}" for b in v.boundaries),
            f"    collectives: {v.collectives}",
            *(f"    {t.label:<12} = {text(t.formula)}" for t in v.totals),
        ]

    def _print_RegionsPast(self, p: RegionsPast) -> list[str]:
        return [
            "",
            f"regions: {past_text(p.past)} for this program; "
            + (
                f"the report shows the plan where {p.shown}"
                if p.shown
                else "the report keeps the default plans"
            )
            + " (bind some sizes with --set)",
        ]


__all__ = ["TextWriter"]
