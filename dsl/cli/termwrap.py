"""Text results on a terminal: lines longer than the terminal are broken at spaces, continuing
under the formula they belong to. Pipes, files and `-o` get the lines as the printers wrote them
(goldens, grep and diff see one line per item)."""

from __future__ import annotations

import re
import shutil
import sys

from shardc.lang.visible import visible

MIN_WIDTH = 40
"""Narrower terminals (or a `COLUMNS` of 5) still get lines of 40 characters at least."""

_TOKENS = re.compile(r"\s+|\S+")
_GAP = re.compile(r"  +")
_OPERATORS = {"+", "-", "->"}


def hanging_indent(line: str, width: int) -> int:
    """Where a broken line of prose continues: under the text after the first ` = ` (a
    formula) or `: ` (a label) when that lies in the left half of the terminal, else four
    columns in from the line's own indent."""
    lead = len(line) - len(line.lstrip(" "))
    for sep in (" = ", ": "):
        at = line.find(sep, lead)
        if at >= 0 and at + len(sep) <= width // 2:
            return at + len(sep)
    return min(lead + 4, width // 2)


def column_starts(line: str) -> set[int]:
    """Columns where a table cell starts: a word after two or more spaces."""
    return {m.end() for m in _GAP.finditer(line) if m.start() > 0 and m.end() < len(line)}


def wrap_line(line: str, width: int, indent: int | None = None) -> list[str]:
    """One line as lines of at most `width` characters, broken only at spaces; a word longer
    than the room left stays whole on a line of its own. Breaks outside parentheses come first,
    and a `+` or `-` between terms opens the next line rather than closing this one.

    >>> for piece in wrap_line("  T_comms   5.66 ms   = 16*B*D*T*(Y - 1)/(W_ici*X*Y) "
    ...                        "+ 8*B*H*K*S*(Y - 1)/(W_ici*X*Y)", 60):
    ...     print(piece)
      T_comms   5.66 ms   = 16*B*D*T*(Y - 1)/(W_ici*X*Y)
                            + 8*B*H*K*S*(Y - 1)/(W_ici*X*Y)
    """
    width = max(width, MIN_WIDTH)
    if len(line) <= width or not line.strip():
        return [line]
    pad = " " * (hanging_indent(line, width) if indent is None else indent)
    lead = len(line) - len(line.lstrip(" "))
    words: list[str] = []  # the words, each with the spaces before it (none for the first)
    depths: list[int] = []  # bracket depth at the space before each word
    depth, gap = 0, ""
    for token in _TOKENS.findall(line[lead:]):
        if token.isspace():
            gap = token
            continue
        words.append(gap + token if words else token)
        depths.append(depth)
        depth += sum(token.count(c) for c in "([{") - sum(token.count(c) for c in ")]}")
        gap = ""
    out: list[str] = []
    first, prefix = 0, line[:lead]
    while first < len(words):
        text, end = prefix + words[first], first + 1
        while end < len(words) and len(text) + len(words[end]) <= width:
            text += words[end]
            end += 1
        if end < len(words):
            end = _best_break(words, depths, first, end, len(prefix), width)
            text = prefix + "".join(words[first:end])
        out.append(text.rstrip(" "))
        if end < len(words):
            words[end] = words[end].lstrip(" ")
        first, prefix = end, pad
    return out


def _best_break(
    words: list[str], depths: list[int], first: int, end: int, start: int, width: int
) -> int:
    """Where to break a line holding `words[first:end]` (the next word does not fit): at the
    shallowest bracket depth on offer, before an operator there if there is one, else after the
    last word at that depth; only where the line keeps at least half the room it had."""
    room = width - start
    candidates = [
        k
        for k in range(first + 1, end + 1)
        if k < len(words) and len("".join(words[first:k])) >= room // 2
    ]
    if not candidates:
        return end
    shallowest = min(depths[k] for k in candidates)
    level = [k for k in candidates if depths[k] == shallowest]
    operators = [k for k in level if words[k].strip() in _OPERATORS]
    return (operators or level)[-1]


def wrap(text: str, width: int) -> str:
    """Every line of `text` at most `width` characters where it can be broken.

    Prose continues under its formula or label (`hanging_indent`). A table's row (a line whose
    cells start at columns another line of its block shares; a block is a run of lines with one
    indent) is broken only in its last cell, continuing under that cell, and only when the cell
    starts in the left half of the terminal: a table with a long middle cell stays one row a
    line, as a pager's `-S` would show it."""
    width = max(width, MIN_WIDTH)
    lines = text.split("\n")
    out: list[str] = []
    for block in _blocks(lines):
        starts = [column_starts(line) for line in block]
        shared = {c for s in starts for c in s if sum(c in t for t in starts) >= 2}
        for line, cells in zip(block, starts, strict=True):
            table = sorted(cells & shared)
            if not table:
                out.extend(wrap_line(line, width))
            elif table[-1] <= width // 2:
                last = table[-1] + (2 if line.startswith("= ", table[-1]) else 0)
                out.extend(wrap_line(line, width, indent=last))
            else:
                out.append(line)
    return "\n".join(out)


def _blocks(lines: list[str]) -> list[list[str]]:
    """Runs of consecutive lines with the same indent (an empty line is a run of its own)."""
    blocks: list[list[str]] = []
    previous: int | None = None
    for line in lines:
        lead = len(line) - len(line.lstrip(" ")) if line.strip() else -1
        if blocks and lead == previous and lead >= 0:
            blocks[-1].append(line)
        else:
            blocks.append([line])
        previous = lead
    return blocks


def write_result(text: str) -> None:
    """A text result on stdout, wrapped to the terminal's width when stdout is one (the width
    from `COLUMNS` or the terminal, as `shutil.get_terminal_size` reads it), its headers coloured
    unless `NO_COLOR` is set (`shardc.cli.style`); control characters from user text (a chip
    file's note, a file name) shown as escapes (`shardc.lang.visible`)."""
    from shardc.cli.style import wants_colour, write_coloured

    text = visible(text, keep="\n\t")
    if sys.stdout.isatty():
        text = wrap(text, shutil.get_terminal_size().columns)
        if wants_colour(sys.stdout):
            write_coloured(text, sys.stdout)
            return
    sys.stdout.write(text)


__all__ = ["MIN_WIDTH", "column_starts", "hanging_indent", "wrap", "wrap_line", "write_result"]
