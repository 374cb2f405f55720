"""The base of every format's writer: a section goes to `_section_<name>` if the writer has one,
else to `_section`; a row goes to `_print_<RowType>` (as SymPy's printers dispatch on the node's
type), and a row type a writer has no method for is not written in that format."""

from __future__ import annotations

from typing import Any, ClassVar

from shardc.driver.document import Section


class Writer:
    """Writes a document (`shardc.driver.sections.sections`) as lines of one format."""

    format: ClassVar[str] = ""
    sections: ClassVar[frozenset[str] | None] = None
    """The sections this format writes (None: all of them)."""
    detail: ClassVar[tuple[str, ...]] = ()
    """The detail sections it prints besides (`shardc.driver.detail_sections.DETAIL`)."""

    def write(self, doc: list[Section]) -> str:
        out: list[str] = []
        for s in doc:
            if self.sections is None or s.name in self.sections:
                out.extend(getattr(self, f"_section_{s.name}", self._section)(s))
        return "\n".join(out) + "\n"

    def _section(self, s: Section) -> list[str]:
        """A section by the generic path: its rows, each by its type."""
        return self.rows(s.rows)

    def rows(self, rows: tuple[Any, ...]) -> list[str]:
        out: list[str] = []
        for row in rows:
            out.extend(self.row(row))
        return out

    def row(self, row: Any) -> list[str]:
        method = getattr(self, f"_print_{type(row).__name__}", None)
        return [] if method is None else method(row)


def pct(x: float) -> str:
    """A share as a whole percentage: `0.456` -> `46%`."""
    return f"{x * 100:.0f}%"


def holds_text(h: bool | None) -> str:
    return {True: "holds", False: "does not hold", None: "undecided"}[h]


def past_text(past: str | None) -> str:
    """The limit a report's regions went past (`driver.region_totals.Shown.past`): "regions"
    (more than `MAX_REGIONS` of them), "statements" (more than `REGIONS_STATEMENTS` to lower
    to find them) or "seconds" (the CPU net, `REGIONS_NET_SECONDS`); None where the report
    does not say which."""
    from shardc.lang.input_limits import MAX_REGIONS, REGIONS_NET_SECONDS, REGIONS_STATEMENTS

    return {
        "regions": f"more than {MAX_REGIONS} regions",
        "statements": f"more than {REGIONS_STATEMENTS} statements to lower to find the regions",
        "seconds": f"more than {REGIONS_NET_SECONDS:g} s of CPU time to find the regions",
    }.get(
        past or "",
        f"more than {MAX_REGIONS} regions, or more than {REGIONS_STATEMENTS} statements to "
        "lower to find them",
    )


__all__ = ["Writer", "holds_text", "past_text", "pct"]
