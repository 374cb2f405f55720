"""The report's writers, one per format, each over the one document model
(`shardc.driver.sections.sections`): `write(report, "text")`. Each writer's module is imported
when its format is first written (`WRITERS`), as xDSL looks its passes up by name."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shardc.driver.render.writer import Writer
    from shardc.driver.report import Report

WRITERS: dict[str, tuple[str, str]] = {
    "text": ("shardc.driver.render.text", "TextWriter"),
    "md": ("shardc.driver.render.markdown", "MarkdownWriter"),
    "latex": ("shardc.driver.render.latex", "LatexWriter"),
    "html": ("shardc.driver.render.html", "HtmlWriter"),
    "json": ("shardc.driver.render.json", "JsonWriter"),
}
"""The writer of each format (its module and class), by its `--format` name."""


def writer_for(fmt: str, **options: Any) -> Writer:
    """The writer of format `fmt` (a key of `WRITERS`), with its `options` (JSON: `indent`)."""
    module, name = WRITERS[fmt]
    return getattr(importlib.import_module(module), name)(**options)


def write(r: Report, fmt: str, only: Iterable[str] | None = None, **options: Any) -> str:
    """The report in format `fmt` (a key of `WRITERS`); `only`: the header and just these
    sections (`shardc.driver.document.SECTIONS`), chosen before anything is written
    (`KeyError` for a name that is not a section).

    >>> import shardc
    >>> r = shardc.compile("mesh X=2\\ndim B=8, D=4, F=6\\nA: bf16[B, D_X]\\n"
    ...                    "W: bf16[D_X, F]\\nC[B, F] = A ·_D W\\n", hw="tpu-v5e")
    >>> print(write(r, "text", only=["summary"]).splitlines()[5])
      T_math             0.00195 ns   = 2*B*D*F/C
    >>> write(r, "md").splitlines()[6]
    '| T_math | 0.00195 ns | $\\\\frac{2 B D F}{C}$ |'
    """
    from shardc.driver.document import SECTIONS
    from shardc.driver.sections import sections

    w = writer_for(fmt, **options)
    names = set(SECTIONS) if only is None else set(only)
    unknown = names - SECTIONS.keys()
    if unknown:
        raise KeyError(
            f"unknown section {', '.join(sorted(unknown))}; sections are {', '.join(SECTIONS)}"
        )
    names = names & w.sections if w.sections else names
    return w.write(sections(r, names | set(w.detail)))  # the detail: sections only it prints


__all__ = ["WRITERS", "write", "writer_for"]
