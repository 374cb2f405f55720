"""Colour on a terminal: diagnostics (errors red, warnings yellow, notes cyan, carets) and the
headers of text results, drawn with rich. Only when the stream is a terminal and `NO_COLOR` is
unset (https://no-color.org): pipes, files and `-o` get the text byte for byte as written, and
rich (40 ms to import) is imported only when colour is drawn."""

from __future__ import annotations

import os
import re
import sys
from typing import IO, Any

DIAGNOSTIC_STYLES = (
    (r"^[^\s:][^:\n]*:\d+:\d+:", "bold"),  # programs/bad.shard:3:14:
    (r"\berror(?:\[[A-Z]+\d+\])?:", "bold red"),
    (r"\bwarning(?:\[[A-Z]+\d+\])?:", "bold yellow"),
    (r"^(?:note|help):", "bold cyan"),
    (r"^ +\^+", "bold red"),  # the carets under the source
    (r"^shardc:", "bold"),
)
"""(regex, rich style) for each part of a diagnostic that is coloured (the first that matches
at a place wins; `^` is a line's start)."""
_DIAGNOSTIC = re.compile(
    "|".join(f"(?P<s{k}>{p})" for k, (p, _) in enumerate(DIAGNOSTIC_STYLES)), re.M
)


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


def _escapes(out: Any, style: str) -> tuple[str, str]:
    """The escape sequences that start and end `style` on the console `out`'s terminal."""
    from rich.text import Text

    with out.capture() as captured:
        out.print(Text("\x00", style=style), end="")
    before, _, after = captured.get().partition("\x00")
    return before, after


def styled_diagnostics(text: str, out: Any) -> str:
    """`text` (diagnostics as the compiler writes them) with its parts coloured for the console
    `out`: the escapes from rich, the text written as is (rich's renderer took 0.7 s over a
    1.3 MB text; thousands of diagnostics are as long)."""
    marks = {f"s{k}": _escapes(out, style) for k, (_, style) in enumerate(DIAGNOSTIC_STYLES)}

    def colour(m: re.Match[str]) -> str:
        before, after = marks[m.lastgroup or ""]
        return before + m.group(0) + after

    return _DIAGNOSTIC.sub(colour, text)


def print_diagnostics(
    text: str, stream: IO[str] | None = None, *, colour: bool | None = None
) -> None:
    """Print diagnostics (and a line break) to `stream` (standard error), coloured where
    `wants_colour` says so (or `colour`, given)."""
    stream = sys.stderr if stream is None else stream
    if not (wants_colour(stream) if colour is None else colour):
        print(text, file=stream)
        return
    stream.write(styled_diagnostics(text, console(stream)) + "\n")
    stream.flush()


HEADER = re.compile(r"(?m)^[^\s].*$")
"""A header of a text result: a line at the left margin (the report's title, a section name)."""


def write_coloured(text: str, stream: IO[str], style: str = "bold cyan") -> None:
    """`text`, already wrapped to the terminal, with its headers in `style`. Only the escapes
    come from rich (for the terminal's colour system): the 9,500-line report of a
    2,000-einsum program took 0.7 s through rich's renderer, and takes 20 ms so (after rich's
    import)."""
    before, after = _escapes(console(stream), style)
    stream.write(HEADER.sub(lambda m: before + m.group(0) + after, text))


__all__ = [
    "DIAGNOSTIC_STYLES",
    "HEADER",
    "console",
    "print_diagnostics",
    "styled_diagnostics",
    "wants_colour",
    "write_coloured",
]
