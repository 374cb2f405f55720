"""The LaTeX report (`--format latex`): the totals and conditions as `align*` blocks, the ops
as a table of formulas, the totals by region as `cases`."""

from __future__ import annotations

from shardc.driver.document import (
    REGION_TOTALS,
    Condition,
    Header,
    Op,
    Region,
    RegionsPast,
    Section,
    Total,
)
from shardc.driver.escape import latex_comment, latex_text
from shardc.driver.formulas import latex
from shardc.driver.render.writer import Writer, past_text
from shardc.lang.layout import format_axes


def align(rows: list[str]) -> list[str]:
    return ["\\begin{align*}", " \\\\\n".join(rows), "\\end{align*}"]


class LatexWriter(Writer):
    format = "latex"
    sections = frozenset({"header", "summary", "conditions", "ops", "regions"})

    def _section_summary(self, s: Section) -> list[str]:
        return align(self.rows(s.rows))

    def _section_conditions(self, s: Section) -> list[str]:
        return align(self.rows(s.rows))

    def _section_ops(self, s: Section) -> list[str]:
        return [
            "\\begin{tabular}{rlllll}",
            "  \\# & op & axes & bytes & time & expected \\\\ \\hline",
            *self.rows(s.rows),
            "\\end{tabular}",
        ]

    def _section_regions(self, s: Section) -> list[str]:
        """Each total as `cases` over the regions (one formula where they agree)."""
        if s.rows and type(s.rows[0]) is RegionsPast:
            p = s.rows[0]
            kept = "the plan the note above names is shown" if p.shown else "default plans kept"
            return [f"% regions: {past_text(p.past)}; {kept}"]
        regions: tuple[Region, ...] = s.rows
        rows = []
        for i, t in enumerate(REGION_TOTALS):
            name = (t.short or t.label).replace("_", "\\_")
            pieces = [(latex(v.totals[i].formula), v.condition) for v in regions]
            if len({p for p, _ in pieces}) == 1:
                rows.append(f"  \\text{{{name}}} &= {pieces[0][0]}")
                continue
            cases = " \\\\ ".join(f"{e} & \\text{{where {latex_text(c)}}}" for e, c in pieces)
            rows.append(f"  \\text{{{name}}} &= \\begin{{cases}} {cases} \\end{{cases}}")
        return [
            "% totals by region (the program a compile with the sizes bound runs there)",
            *align(rows),
        ]

    def _print_Header(self, h: Header) -> list[str]:
        return [
            f"% shardc report: {latex_comment(h.program)} (chip "
            f"{latex_comment(h.chip or 'none')}, model {h.model})",
            *([f"% plans: {h.plans}"] if h.plans is not None else []),
        ]

    def _print_Total(self, t: Total) -> list[str]:
        return [f"  \\text{{{t.label.replace('_', chr(92) + '_')}}} &= {latex(t.formula)}"]

    def _print_Condition(self, c: Condition) -> list[str]:
        return [f"  \\text{{{latex_text(c.name)}}}:\\ & {latex(c.relation)}"]

    def _print_Op(self, c: Op) -> list[str]:
        return [
            f"  {c.index} & {latex_text(c.op)} & {format_axes(c.axes) if c.axes else ''} & "
            f"${latex(c.moved)}$ & ${latex(c.time_formula)}$ & "
            f"${latex(c.expected_formula)}$ \\\\"
        ]


__all__ = ["LatexWriter", "align"]
