"""The HTML report (a notebook's `_repr_html_`): the summary with its formulas for MathJax, the
training memory, and the ops (axes, bytes, why) in a collapsible table; `math_html` and `table_html`
are the HTML helpers every notebook view uses."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from shardc.driver.document import Bound, Header, Op, Section, Total, Utilization
from shardc.driver.escape import html_text
from shardc.driver.formulas import latex
from shardc.driver.render.writer import Writer
from shardc.lang.units import fmt_value


def math_html(expr: Any) -> str:
    """A formula as inline LaTeX for MathJax: `\\(\\frac{B}{X}\\)`."""
    return "\\(" + html_text(latex(expr)) + "\\)"


def table_html(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table, one line per row; `head` and the cells are HTML already (escape text first)."""
    out = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows]
    return "\n".join([*out, "</table>"])


class HtmlWriter(Writer):
    format = "html"
    sections = frozenset({"header", "summary", "memory", "ops"})

    def write(self, doc: list[Section]) -> str:
        return super().write(doc).removesuffix("\n")

    def _section_summary(self, s: Section) -> list[str]:
        order = (Total, Utilization, Bound)
        cells = [
            self.cells(row)
            for kind in order
            for row in s.rows
            if type(row) is kind and not getattr(row, "expected", False)
        ]
        return [table_html(("quantity", "value", "formula"), cells)]

    def _section_memory(self, s: Section) -> list[str]:
        rows = [self.cells(t) for t in s.rows if type(t) is Total]
        return [
            f"<p><b>{s.title}</b> ({html_text(s.detail)})</p><table>",
            *(
                f"<tr><td>{label}</td><td>{value}</td><td>{formula}</td></tr>"
                for label, value, formula in rows
            ),
            "</table>",
        ]

    def _section_ops(self, s: Section) -> list[str]:
        ops: tuple[Op, ...] = s.rows
        e = html_text
        table = table_html(
            ("#", "line", "op", "axes", "from &rarr; to", "bytes", "time", "why"),
            (
                (
                    str(c.index),
                    str(c.line),
                    e(c.op),
                    e(",".join(c.axes)),
                    f"<code>{e(c.src)}</code> &rarr; <code>{e(c.dst)}</code>",
                    e(fmt_value(c.bytes, "B")),
                    e(fmt_value(c.time, "s")),
                    e(c.reason) if c.kind == "collective" else "",
                )
                for c in ops
            ),
        )
        return [f"<details><summary>{len(ops)} ops</summary>{table}</details></div>"]

    def cells(self, row: Any) -> tuple[str, str, str]:
        """A summary row as (quantity, value, formula) cells, by its type."""
        e = html_text
        if type(row) is Total:
            return e(row.label), e(fmt_value(row.value, row.unit)), math_html(row.formula)
        if type(row) is Utilization:
            return (
                "MFU / HFU",
                f"{row.mfu:.0%} / {row.hfu:.0%}",
                "model FLOPs / (devices &times; peak &times; T_step)",
            )
        return "bound", e(row.value or "undecided"), ""

    def _print_Header(self, h: Header) -> list[str]:
        e = html_text
        return [
            f"<div class='shardc-report'><b>shardc report</b> <code>{e(h.program)}</code> "
            f"&mdash; chip <b>{e(h.chip or 'none')}</b>, model <b>{e(h.model)}</b>, mesh "
            + ", ".join(
                f"<code>{e(n)}={e(str(s if s is not None else n))}</code>" for n, s in h.mesh
            ),
            # plans by region of the symbolic sizes: which one the sections show
            *([f"<p><i>plans: {e(h.plans)}</i></p>"] if h.plans else []),
        ]


__all__ = ["HtmlWriter", "math_html", "table_html"]
