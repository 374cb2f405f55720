"""Plain-text tables for the text reports: each column as wide as its widest cell (header
included), numbers right-aligned, two spaces between columns, so no column drifts from its
header whatever the values' lengths. On a terminal they are written as they are (colour is
added around headers only: `shardc.cli.style`), so pipes and terminals read the same table."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def aligned(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    right: Collection[int] = (),
    indent: str = "  ",
) -> list[str]:
    """The table's lines: `head`, then `rows`; the columns numbered in `right` right-aligned.
    The last column is not padded (no trailing spaces).

    >>> for line in aligned(("preset", "C MAC/s", "T_crit"), [("h100", "3.96e+15", "1.9e+28"),
    ...                                                      ("h100-gnvl", "4e+15", "2e+28")],
    ...                     right={1}):
    ...     print(line)
      preset      C MAC/s  T_crit
      h100       3.96e+15  1.9e+28
      h100-gnvl     4e+15  2e+28
    """
    table = [list(head), *(list(r) for r in rows)]
    widths = [max(len(r[k]) for r in table) for k in range(len(head))]
    out = []
    for r in table:
        cells = [
            c.rjust(w) if k in right else c.ljust(w)
            for k, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        out.append((indent + "  ".join(cells)).rstrip())
    return out


__all__ = ["aligned"]
