"""Colour on a terminal: diagnostics (errors red, warnings yellow, notes cyan, carets) and the
headers of text results, drawn with rich. Only when the stream is a terminal and `NO_COLOR` is
unset (https://no-color.org): pipes, files and `-o` get the text byte for byte as written, and
rich (40 ms to import) is imported only when colour is drawn."""

from __future__ import annotations

import os
import sys
from typing import IO, Any

DIAGNOSTIC_STYLES = (
    (r"(?m)^[^\s:][^:\n]*:\d+:\d+:", "bold"),  # programs/bad.shard:3:14:
    (r"\berror(\[[A-Z]+\d+\])?:", "bold red"),
    (r"\bwarning(\[[A-Z]+\d+\])?:", "bold yellow"),
    (r"(?m)^(note|help):", "bold cyan"),
    (r"(?m)^ +\^+", "bold red"),  # the carets under the source
    (r"^shardc:", "bold"),
)
"""(regex, rich style) for each part of a diagnostic that is coloured."""


def wants_colour(stream: IO[str]) -> bool:
    """Colour for `stream`: it is a terminal, `NO_COLOR` is unset or empty, and `TERM` is not
    `dumb`."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def console(stream: IO[str], **options: Any) -> Any:
    """A rich Console writing to `stream` as a terminal; `options` go to the constructor (the
    tests pass `force_terminal=True`, `width=`)."""
    from rich.console import Console

    options.setdefault("force_terminal", True)
    options.setdefault("highlight", False)
    return Console(file=stream, **options)


def styled_diagnostics(text: str) -> Any:
    """`text` (diagnostics as the compiler writes them) as a rich Text with its parts coloured."""
    from rich.text import Text

    out = Text(text)
    for pattern, style in DIAGNOSTIC_STYLES:
        out.highlight_regex(pattern, style)
    return out


def print_diagnostics(text: str, stream: IO[str] | None = None, *,
                      colour: bool | None = None) -> None:
    """Print diagnostics (and a line break) to `stream` (standard error), coloured where
    `wants_colour` says so (or `colour`, given)."""
    stream = sys.stderr if stream is None else stream
    if not (wants_colour(stream) if colour is None else colour):
        print(text, file=stream)
        return
    console(stream, soft_wrap=True).print(styled_diagnostics(text))


def styled_headers(text: str) -> Any:
    """A text result with its headers (the lines at the left margin: the report's title and
    section names) in bold cyan."""
    from rich.text import Text

    out = Text(text)
    out.highlight_regex(r"(?m)^[^\s].*$", "bold cyan")
    return out


def write_coloured(text: str, stream: IO[str]) -> None:
    """`text`, already wrapped to the terminal, with its headers coloured (no re-wrapping)."""
    console(stream, soft_wrap=True).print(styled_headers(text), end="")


__all__ = ["DIAGNOSTIC_STYLES", "console", "print_diagnostics", "styled_diagnostics",
           "styled_headers", "wants_colour", "write_coloured"]
