"""The report's writers, one per format, each over the one document model
(`shardc.driver.sections.sections`): `write(report, "text")`."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from shardc.driver.document import SECTIONS
from shardc.driver.render.html import HtmlWriter
from shardc.driver.render.latex import LatexWriter
from shardc.driver.render.markdown import MarkdownWriter
from shardc.driver.render.text import TextWriter
from shardc.driver.render.writer import Writer
from shardc.driver.sections import sections

if TYPE_CHECKING:
    from shardc.driver.report import Report

WRITERS: dict[str, type[Writer]] = {w.format: w for w in (
    TextWriter, MarkdownWriter, LatexWriter, HtmlWriter)}
"""The writer of each format, by its `--format` name (JSON is `shardc.driver.json_report`)."""


def write(r: Report, fmt: str, only: Collection[str] | None = None) -> str:
    """The report in format `fmt` (a key of `WRITERS`); `only`: the header and just these
    sections (`shardc.driver.document.SECTIONS`), chosen before anything is written."""
    writer = WRITERS[fmt]()
    names = set(SECTIONS) if only is None else set(only)
    unknown = names - SECTIONS.keys()
    if unknown:
        raise KeyError(f"unknown section {', '.join(sorted(unknown))}; sections are "
                       f"{', '.join(SECTIONS)}")
    return writer.write(sections(r, names & writer.sections if writer.sections else names))


__all__ = ["WRITERS", "Writer", "write"]
