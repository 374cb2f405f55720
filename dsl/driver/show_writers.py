"""The writers of a sharding picture (`shardc.driver.show.Picture`): plain text, Markdown (the
language server's hover) and HTML (the notebook)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from shardc.driver.escape import html_text, md_code, md_text

if TYPE_CHECKING:
    from shardc.driver.show import Picture


def to_text(p: Picture) -> str:
    """The picture in ASCII: a box per block, the legend under it.

    The box's row labels sit on the left, column labels on top; every cell is centred."""
    head = ["", *p.cols]
    body = [[label, *cells] for label, cells in zip(p.rows, p.cells, strict=True)]
    widths = [max(len(row[k]) for row in [head, *body]) for k in range(len(head))]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells: list[str]) -> str:
        first = f" {cells[0].ljust(widths[0])} "
        rest = [f" {c.center(w)} " for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "|" + "|".join([first, *rest]) + "|"

    out = [p.title, rule, line(head), rule]
    for row in body:
        out += [line(row), rule]
    out += [f"  {n}" for n in p.notes]
    return "\n".join(out) + "\n"


def pictures_text(pictures: Sequence[Picture]) -> str:
    """Pictures one after another, a blank line between."""
    return "\n".join(to_text(p) for p in pictures)


def to_markdown(p: Picture) -> str:
    """The picture as a Markdown table (the language server's hover)."""
    out = [
        f"**{md_text(p.title)}**",
        "",
        "| " + " | ".join(["", *(md_code(c, table=True) for c in p.cols)]) + " |",
        "|" + "---|" * (len(p.cols) + 1),
    ]
    for label, cells in zip(p.rows, p.cells, strict=True):
        out.append(
            "| " + " | ".join([md_code(label, table=True), *(md_text(c) for c in cells)]) + " |"
        )
    out += ["", *(f"- {md_text(n)}" for n in p.notes)]
    return "\n".join(out) + "\n"


PALETTE = (
    "#c6dbef",
    "#fdd0a2",
    "#c7e9c0",
    "#dadaeb",
    "#fcbba1",
    "#d9d9d9",
    "#fee391",
    "#9ecae1",
    "#a1d99b",
    "#bcbddc",
)
"""Cell backgrounds for the HTML table, one per block (light: the text stays dark)."""


def to_html(p: Picture) -> str:
    """The picture as an HTML table, each block's cell coloured (the notebook)."""
    e = html_text
    cell = "border:1px solid #888;padding:2px 8px"
    out = [
        f"<div class='shardc-picture'><b>{e(p.title)}</b>"
        f"<table style='border-collapse:collapse;text-align:center'><tr><th></th>"
        + "".join(f"<th style='{cell}'><code>{e(c)}</code></th>" for c in p.cols)
        + "</tr>"
    ]
    for label, cells, ids in zip(p.rows, p.cells, p.group, strict=True):
        row = [f"<th style='{cell};text-align:left'><code>{e(label)}</code></th>"]
        for c, g in zip(cells, ids, strict=True):
            colour = f";background:{PALETTE[g % len(PALETTE)]}" if g >= 0 else ""
            row.append(f"<td style='{cell}{colour}'>{e(c)}</td>")
        out.append("<tr>" + "".join(row) + "</tr>")
    out.append("</table>" + "".join(f"<small>{e(n)}</small><br>" for n in p.notes) + "</div>")
    return "\n".join(out)


__all__ = ["PALETTE", "pictures_text", "to_html", "to_markdown", "to_text"]
