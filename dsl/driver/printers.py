"""The text, Markdown and LaTeX reports under their older names: each is now a writer over the
document model (`shardc.driver.render`, `shardc.driver.sections`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardc.driver.document import BLOCK_TOTALS as BLOCK_SUMMARY
from shardc.driver.document import SECTIONS, TOTALS
from shardc.driver.formulas import latex, text
from shardc.driver.render import write
from shardc.driver.summary_section import expected_note

if TYPE_CHECKING:
    from shardc.driver.report import Report

SUMMARY = tuple((t.label, t.key, t.unit) for t in TOTALS)
"""(label, total, unit) of each of `TOTALS`, in the summary's order."""


def render_text(r: Report) -> str:
    return write(r, "text")


def render_markdown(r: Report) -> str:
    return write(r, "md")


def render_latex(r: Report) -> str:
    return write(r, "latex")


__all__ = [
    "BLOCK_SUMMARY",
    "SECTIONS",
    "SUMMARY",
    "expected_note",
    "latex",
    "render_latex",
    "render_markdown",
    "render_text",
    "text",
]
