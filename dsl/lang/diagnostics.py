"""Diagnostics: stable codes, spans, and the `file:line:col: error[CODE]` rendering with a caret.

Codes by family: P parse, N names/types, S sharding, C collectives, H hardware, K cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from shardc.lang.source import NO_SPAN, Source, Span
from shardc.lang.visible import visible, visible_columns

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    severity: Severity
    code: str
    message: str
    span: Span = NO_SPAN
    label: str = ""
    notes: tuple[str, ...] = ()

    def render(self, source: Source | None) -> str:
        """Render as `file:line:col: severity[CODE]: message`, the source line and a caret.
        Control characters anywhere (the file name, a quoted name, the source line) are shown
        as escapes (`shardc.lang.visible`), the caret moved to match."""
        name = visible(source.name) if source is not None else "<input>"
        message = visible(self.message)
        notes = [f"note: {visible(n)}" for n in self.notes]
        if self.span.line <= 0:
            head = f"{name}: {self.severity}[{self.code}]: {message}"
            return "\n".join([head, *notes])
        head = f"{name}:{self.span.line}:{self.span.col}: {self.severity}[{self.code}]: {message}"
        lines = [head]
        text = source.line_text(self.span.line) if source is not None else ""
        if text:
            width = self.span.end_col - self.span.col if self.span.end_line == self.span.line else 1
            width = max(1, min(width, len(text) - self.span.col + 2))
            text, col, width = _window(text, self.span.col, width)
            text, col, width = visible_columns(text, col, width)
            lines.append(f"  {text}")
            caret = " " * (col - 1) + "^" * width
            lines.append(f"  {caret}" + (f" {visible(self.label)}" if self.label else ""))
        lines.extend(notes)
        return "\n".join(lines)


QUOTE_WIDTH = 120
"""The most characters of a source line a diagnostic quotes; a longer line is shown as a window
around the caret, with `...` where it was cut."""


def _window(text: str, col: int, width: int) -> tuple[str, int, int]:
    """(the quoted text, the caret's 1-based column in it, the caret's width), at most
    QUOTE_WIDTH characters of `text` around column `col`.

    >>> _window("x" * 50 + "^" + "y" * 500, 51, 1)[0][:10], _window("ab", 2, 1)
    ('...xxxxxxx', ('ab', 2, 1))
    """
    if len(text) <= QUOTE_WIDTH:
        return text, col, width
    width = min(width, QUOTE_WIDTH // 2)
    start = max(0, min(col - 1 - QUOTE_WIDTH // 3, len(text) - QUOTE_WIDTH))
    end = start + QUOTE_WIDTH
    head = "..." if start > 0 else ""
    tail = "..." if end < len(text) else ""
    return head + text[start:end] + tail, col - start + len(head), width


@dataclass(slots=True)
class Diagnostics:
    """Collects the diagnostics of one compilation; passes report here instead of raising."""

    items: list[Diagnostic] = field(default_factory=list)

    def error(
        self,
        code: str,
        message: str,
        span: Span = NO_SPAN,
        label: str = "",
        notes: tuple[str, ...] = (),
    ) -> None:
        self.items.append(Diagnostic("error", code, message, span, label, notes))

    def warning(
        self,
        code: str,
        message: str,
        span: Span = NO_SPAN,
        label: str = "",
        notes: tuple[str, ...] = (),
    ) -> None:
        self.items.append(Diagnostic("warning", code, message, span, label, notes))

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)

    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity == "error"]

    def render(self, source: Source | None) -> str:
        return "\n".join(d.render(source) for d in self.items)


class CompileError(Exception):
    """Raised by the public API when a program has errors; carries the rendered diagnostics."""

    def __init__(self, diagnostics: list[Diagnostic], source: Source | None) -> None:
        self.diagnostics = diagnostics
        self.source = source
        super().__init__("\n".join(d.render(source) for d in diagnostics))
