"""The writers' parts, each from its own module: the dispatch every format shares
(`shardc.driver.render.writer`), the HTML, LaTeX, Markdown and text writers, the aligned
plain-text table (`shardc.driver.text_table`) and the topology in words
(`shardc.driver.topology_text`)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import shardc
from shardc.driver.document import Section
from shardc.driver.render import WRITERS, write, writer_for
from shardc.driver.render.html import HtmlWriter, math_html, table_html
from shardc.driver.render.json import JsonWriter
from shardc.driver.render.latex import LatexWriter, align
from shardc.driver.render.markdown import TABLE, MarkdownWriter
from shardc.driver.render.text import TextWriter
from shardc.driver.render.writer import Writer, holds_text, pct
from shardc.driver.text_table import aligned
from shardc.driver.topology_text import topology_lines

SOURCE = "mesh X=16\ndim B=16, D=16, F=6\nA: bf16[B, D_X]\nW: bf16[D_X, F]\nC[B, F] = A ·_D W\n"


@pytest.fixture(scope="module")
def tpu():
    return shardc.compile(SOURCE, hw="tpu-v5e")


@pytest.fixture(scope="module")
def gpu():
    return shardc.compile(SOURCE, hw="h100")


@dataclass(frozen=True)
class Kept:
    text: str


@dataclass(frozen=True)
class Unknown:
    text: str


class Plain(Writer):
    format = "plain"
    sections = frozenset({"a", "b"})

    def _print_Kept(self, row: Kept) -> list[str]:
        return [row.text]

    def _section_b(self, s: Section) -> list[str]:
        return [f"[{s.title}]", *self.rows(s.rows)]


def test_the_writer_dispatches_on_section_name_and_row_type():
    doc = [
        Section("a", "A", (Kept("one"), Unknown("skipped"), Kept("two"))),
        Section("b", "B", (Kept("three"),)),
        Section("c", "C", (Kept("not this format's section"),)),
    ]
    assert Plain().write(doc) == "one\ntwo\n[B]\nthree\n"


def test_each_format_has_its_writer_class():
    classes = {
        "text": TextWriter,
        "md": MarkdownWriter,
        "latex": LatexWriter,
        "html": HtmlWriter,
        "json": JsonWriter,
    }
    assert set(WRITERS) == set(classes)
    for fmt, cls in classes.items():
        w = writer_for(fmt)
        assert type(w) is cls and w.format == fmt


def test_shares_and_truth_in_words():
    assert (pct(0.456), pct(1.0), pct(0.0)) == ("46%", "100%", "0%")
    assert [holds_text(h) for h in (True, False, None)] == ["holds", "does not hold", "undecided"]


def test_html_helpers_and_the_html_report(gpu):
    assert table_html(("a", "b"), [("1", "2")]) == (
        "<table><tr><th>a</th><th>b</th></tr>\n<tr><td>1</td><td>2</td></tr>\n</table>"
    )
    b, x = sp.symbols("B X", positive=True)
    assert math_html(b / x) == "\\(\\frac{B}{X}\\)"
    assert math_html(sp.Lt(b, x)) == "\\(B &lt; X\\)"  # LaTeX inside HTML: `<` escaped
    html = write(gpu, "html")
    assert f"<details><summary>{len(gpu.ops)} ops</summary>" in html
    assert html.count("<table>") == html.count("</table>") and not html.endswith("\n")
    assert "book's" not in html and "book&#x27;s" in html  # text is escaped


def test_latex_blocks_are_balanced(gpu):
    assert align(["a", "b"]) == ["\\begin{align*}", "a \\\\\nb", "\\end{align*}"]
    tex = write(gpu, "latex")
    assert tex.startswith("% shardc report:")
    assert tex.count("\\begin{align*}") == tex.count("\\end{align*}") == 2
    assert tex.count("\\begin{tabular}") == tex.count("\\end{tabular}") == 1
    assert "  2 & einsum" in tex and "  3 & AllReduce & X" in tex


def test_markdown_puts_the_summary_rows_in_one_table(gpu):
    md = write(gpu, "md").splitlines()
    start = md.index("| quantity | value | formula |")
    rows = md[start + 2 : md.index("", start)]
    assert {t.__name__ for t in TABLE} == {"Total", "Bound", "Utilization"}
    assert rows[0].startswith("| T_math |") and rows[-1] == "| bound | comms | |"
    assert all(r.startswith("| ") and r.endswith("|") for r in rows)


def test_the_text_report_writes_each_total_with_its_formula(tpu):
    text = write(tpu, "text", only=["summary"])
    assert "summary (per device unless noted)" in text and "ops" not in text
    lines = {ln.split()[0]: ln for ln in text.splitlines() if ln.startswith("  T_")}
    assert {"T_math", "T_hbm", "T_comms", "T_lower", "T_upper"} <= set(lines)
    assert lines["T_math"].endswith("= " + str(tpu.formula("t_math_s")))
    assert "16 us" in lines["T_comms"]


@given(st.lists(st.lists(st.text("ab1 ", max_size=6), min_size=3, max_size=3), max_size=5))
def test_aligned_columns_start_together(rows):
    head = ("name", "value", "why")
    lines = aligned(head, rows, right={1}, indent="")
    assert len(lines) == len(rows) + 1
    widths = [max(len(r[k]) for r in [head, *rows]) for k in range(3)]
    for line, cells in zip(lines, [head, *rows], strict=True):
        assert line == line.rstrip()  # no trailing spaces
        full = line.ljust(sum(widths) + 4)
        assert full[: widths[0]] == cells[0].ljust(widths[0])
        assert full[widths[0] + 2 : widths[0] + 2 + widths[1]] == cells[1].rjust(widths[1])
        assert full[widths[0] + widths[1] + 4 :].rstrip() == cells[2].rstrip()


def test_the_topology_in_words(tpu, gpu):
    assert topology_lines(None) == []
    assert topology_lines(tpu.program.topology) == [
        "X: ICI ring of 16 (tpu-v5e: wraps only on an axis of 16)"
    ]
    assert topology_lines(gpu.program.topology) == [
        "X: NVLink inside a domain (8 devices), InfiniBand across domains"
    ]
    small = shardc.compile(SOURCE.replace("X=16", "X=4"), hw="tpu-v5e")
    assert topology_lines(small.program.topology) == [
        "X: ICI line of 4 (tpu-v5e: wraps only on an axis of 16)"
    ]
