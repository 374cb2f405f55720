"""The program-size limits (dsl/lang/input_limits.py) checked on the raw text before Lark sees
it: a source over MAX_SOURCE_BYTES or with more than MAX_STATEMENTS statements gets P013 in one
linear scan.
"""

from __future__ import annotations

import re

from shardc.lang.diagnostics import Diagnostic
from shardc.lang.input_limits import MAX_SOURCE_BYTES, MAX_STATEMENTS
from shardc.lang.source import Span

_SIZE_NOTE = (
    f"a program holds at most {MAX_SOURCE_BYTES // 2**20} MiB of text and "
    f'{MAX_STATEMENTS:,} statements (docs/language.md, "Limits")'
)
# A piece of a line: a string, a comment (which ends the line), `;`, or any other run of text.
_PIECE = re.compile(r'"[^"\n]*"|#.*|;|[^";#]+|"')


def size_problem(text: str) -> Diagnostic | None:
    """P013 for `text` (newlines already `\\n`) over the byte or the statement limit.

    >>> size_problem("mesh X=2; dim I=4  # two statements\\n") is None
    True
    """
    if len(text) * 4 > MAX_SOURCE_BYTES and len(text.encode("utf-8")) > MAX_SOURCE_BYTES:
        head = text.encode("utf-8")[:MAX_SOURCE_BYTES].decode("utf-8", errors="ignore")
        line = head.count("\n") + 1
        col = len(head) - (head.rfind("\n") + 1) + 1
        return Diagnostic(
            "error",
            "P013",
            f"the program is larger than the limit of {MAX_SOURCE_BYTES:,} bytes",
            Span.point(line, col),
            "the limit is reached here",
            (_SIZE_NOTE,),
        )
    count = 0
    continued = False
    for number, row in enumerate(text.split("\n"), 1):
        starts_new = not continued
        continued = row.rstrip(" \t\f").endswith("\\") and "#" not in row
        if "#" not in row and ";" not in row and '"' not in row:
            body = row.strip(" \t\f\\{}")
            if body and starts_new:
                count += 1
                if count > MAX_STATEMENTS:
                    return _too_many(number, len(row) - len(row.lstrip()) + 1)
            continue
        col = 0
        for piece in _PIECE.finditer(row):
            p = piece.group(0)
            if p.startswith("#"):
                break
            if p == ";":
                starts_new = True
            elif starts_new and p.strip(" \t\f\\{}"):
                count += 1
                if count > MAX_STATEMENTS:
                    col = piece.start() + len(p) - len(p.lstrip()) + 1
                    return _too_many(number, col)
                starts_new = False
    return None


def _too_many(line: int, col: int) -> Diagnostic:
    return Diagnostic(
        "error",
        "P013",
        f"the program has more than {MAX_STATEMENTS:,} statements",
        Span.point(line, col),
        f"statement {MAX_STATEMENTS + 1:,}",
        (_SIZE_NOTE,),
    )
