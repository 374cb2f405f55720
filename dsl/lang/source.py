"""Source text with file names, and the spans that point into it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source file: 1-based line and column, end exclusive."""

    line: int
    col: int
    end_line: int
    end_col: int

    @staticmethod
    def point(line: int, col: int, width: int = 1) -> Span:
        return Span(line, col, line, col + max(width, 1))

    def shifted(self, offset: int, width: int) -> Span:
        """A sub-span on the same line starting `offset` columns in."""
        return Span(self.line, self.col + offset, self.line, self.col + offset + max(width, 1))


NO_SPAN = Span(0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class Source:
    """The text of one program and the name it is reported under."""

    name: str
    text: str

    @staticmethod
    def from_path(path: str | Path) -> Source:
        p = Path(path)
        return Source(str(path), p.read_text(encoding="utf-8"))

    def line_text(self, line: int) -> str:
        r"""Line `line` (1-based), without its end; "" past the end.

        Lines end at `\n`, `\r\n` or `\r`, as the parser counts them; `str.splitlines` would
        also split at a form feed or U+2028 inside a comment and quote the wrong line.

        >>> Source("p", "a # x\u2028y\fz\r\nb").line_text(2)
        'b'
        """
        lines = _lines(self.text)
        if 1 <= line <= len(lines):
            return lines[line - 1]
        return ""


_LINE_END = re.compile(r"\r\n|\r|\n")


@lru_cache(maxsize=4)
def _lines(text: str) -> tuple[str, ...]:
    # Memo keyed by the text itself: a program with many diagnostics splits once, not per line.
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return tuple(lines)
