"""What `validate` knows while it walks a program (`Env`: the mesh, dims, arrays, bindings and
where each was declared), and the small helpers its diagnostics share."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field

from shardc.lang.source import Span
from shardc.passes.sizes import size_of


@dataclass(slots=True)
class Env:
    mesh: dict[str, int | None] = field(default_factory=dict)
    mesh_declared: bool = False
    mesh_line: int = 0
    later_mesh_line: int = 0
    dims: dict[str, int | None] = field(default_factory=dict)
    arrays: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    bindings: dict[str, float] = field(default_factory=dict)
    spans: dict[str, Span] = field(default_factory=dict)
    """Where each mesh axis and dimension was declared."""
    array_lines: dict[str, int] = field(default_factory=dict)
    """The line on which each array was first declared or assigned."""
    failed: set[str] = field(default_factory=set)
    """Arrays whose definition had an error: their uses are not reported again."""

    def size(self, name: str) -> int | None:
        return size_of(name, self.dims if name in self.dims else self.mesh, self.bindings)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A caret label suggesting the closest known name, or "" when none is close.

    >>> did_you_mean("gelo", ["gelu", "silu"])
    "did you mean 'gelu'?"
    """
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def where(span: Span | int) -> str:
    line = span.line if isinstance(span, Span) else span
    return f"line {line}" if line > 0 else "an earlier line"
