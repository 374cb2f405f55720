"""The Markdown report (`--format md`, a notebook's `_repr_markdown_`): the totals as a table
with LaTeX formulas, the repeat blocks, conditions and decisions as lists, the ops as a table."""

from __future__ import annotations

from shardc.driver import decision_regions, decisions
from shardc.driver.document import (
    REGION_TOTALS,
    Block,
    Bound,
    Calibration,
    Condition,
    DecisionRow,
    Header,
    Op,
    Region,
    Section,
    Total,
    Utilization,
)
from shardc.driver.escape import md_code, md_text
from shardc.driver.formulas import latex, text
from shardc.driver.render.writer import Writer, holds_text, pct
from shardc.lang.layout import format_axes
from shardc.lang.units import fmt_value

TABLE = (Total, Bound, Utilization)
"""The summary's rows that go in its table, in this order; the others follow it."""


class MarkdownWriter(Writer):
    format = "md"
    sections = frozenset(
        {"header", "summary", "repeats", "conditions", "decisions", "ops", "regions"}
    )

    def _section_summary(self, s: Section) -> list[str]:
        table = [row for kind in TABLE for row in s.rows if type(row) is kind]
        # the expected MFU follows the MFU of the roofline's schedule, never alone
        if not any(type(row) is Utilization and not row.expected for row in table):
            table = [row for row in table if type(row) is not Utilization]
        rest = [row for row in s.rows if type(row) not in TABLE]
        return [
            "",
            "| quantity | value | formula |",
            "|---|---|---|",
            *self.rows(tuple(table)),
            *self.rows(tuple(rest)),
        ]

    def _section_decisions(self, s: Section) -> list[str]:
        return ["", "**decisions**", "", *self.rows(s.rows)]

    def _section_conditions(self, s: Section) -> list[str]:
        return ["", *self.rows(s.rows)]

    def _section_ops(self, s: Section) -> list[str]:
        return [
            "",
            "| # | line | op | axes | from → to | FLOPs/dev | bytes | time | expected "
            "| bound | reason |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
            *self.rows(s.rows),
        ]

    def _section_regions(self, s: Section) -> list[str]:
        if not s.rows or type(s.rows[0]) is not Region:
            return []
        return [
            "",
            "**totals by region**",
            "",
            "| region | share | collectives | "
            + " | ".join(t.short or t.label for t in REGION_TOTALS)
            + " |",
            "|---|---|---|" + "---|" * len(REGION_TOTALS),
            *self.rows(s.rows),
        ]

    def _print_Header(self, h: Header) -> list[str]:
        out = [
            f"### shardc report: {md_code(h.program, markup_as_text=True)}",
            "",
            f"chip **{md_text(h.chip or 'none')}**, model **{h.model}**, mesh "
            + ", ".join(md_code(f"{n}={s if s is not None else n}") for n, s in h.mesh),
        ]
        if h.plans is not None:
            out.extend(["", f"plans: {md_text(h.plans)}"])
        return out

    def _print_Total(self, t: Total) -> list[str]:
        return [f"| {t.label} | {fmt_value(t.value, t.unit)} | ${latex(t.formula)}$ |"]

    def _print_Bound(self, b: Bound) -> list[str]:
        return [f"| bound | {b.value or 'undecided'} | |"]

    def _print_Utilization(self, u: Utilization) -> list[str]:
        if u.expected:
            return [
                f"| MFU (expected) | {pct(u.mfu)} | the schedule over each op's expected time |"
            ]
        return [
            f"| MFU / HFU | {pct(u.mfu)} / {pct(u.hfu)} | model FLOPs / (devices x peak x "
            "T_step); every FLOP a device runs |"
        ]

    def _print_Calibration(self, c: Calibration) -> list[str]:
        return ["", f"T_expected {md_text(c.text)}."]

    def _print_Block(self, b: Block) -> list[str]:
        return [
            "",
            f"{md_code(f'repeat {b.text}')} (line {b.line}):",
            "",
            "| quantity | per iteration | all iterations | per iteration |",
            "|---|---|---|---|",
            *(
                f"| {label} | {fmt_value(per, unit)} | {fmt_value(tot, unit)} | "
                f"${latex(formula)}$ |"
                for label, unit, per, tot, formula in b.rows
            ),
        ]

    def _print_Condition(self, c: Condition) -> list[str]:
        return [f"- {md_text(c.text)}: ${latex(c.relation)}$ ({holds_text(c.holds)})"]

    def _print_DecisionRow(self, row: DecisionRow) -> list[str]:
        d = row.decision
        out = [
            f"- line {d.line} {md_code(decisions.statement(d))} (decided by "
            f"{md_text(decisions.decided_by(d))})"
        ]
        for a in d.alternatives:
            when = decisions.condition(d, a)
            cond = (
                f" ({when})"
                if when.startswith(("never", "always"))
                else f" — wins if {md_code(when)}"
                if when
                else ""
            )
            out.append(
                f"  - {'**chosen**: ' if a.chosen else ''}"
                f"{md_text(decisions.description(d, a))}{cond}"
            )
        out.extend(
            f"  - region {md_code(decision_regions.region_text(reg))}: "
            f"{md_text(decision_regions.candidate_text(d, reg.order))}"
            for reg in decision_regions.regions(d)
        )
        return out

    def _print_Op(self, c: Op) -> list[str]:
        return [
            "| "
            + " | ".join(
                [
                    str(c.index),
                    str(c.line),
                    md_text(c.op),
                    format_axes(c.axes) if c.axes else "",
                    f"{md_code(c.src, table=True)} → {md_code(c.dst, table=True)}",
                    fmt_value(c.flops, "flop"),
                    fmt_value(c.bytes, "B"),
                    fmt_value(c.time, "s"),
                    fmt_value(c.expected, "s"),
                    c.bound or "-",
                    md_text(c.reason),
                ]
            )
            + " |"
        ]

    def _print_Region(self, v: Region) -> list[str]:
        return [
            f"| {md_code(v.condition, table=True)} | {v.share:.0%} | "
            f"{md_text(v.collectives)} | "
            + " | ".join(md_code(text(t.formula), table=True) for t in v.totals)
            + " |"
        ]


__all__ = ["MarkdownWriter"]
