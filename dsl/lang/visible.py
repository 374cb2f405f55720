"""User text made safe to echo to a terminal: control characters shown as escapes (`\\x1b`, as
rustc shows them), so a program, a file name or a flag value cannot move the cursor or retitle
the terminal through a diagnostic or a report (`shardc.lang.quoting.quoted` also cuts a long
value, so none floods the screen).
"""

from __future__ import annotations


def visible(text: str, keep: str = "") -> str:
    """`text` with every character a terminal would act on or not show written as a Python
    escape: C0 and C1 controls, DEL, line and paragraph separators, bidirectional overrides and
    other invisible formatting characters (`str.isprintable` is False for exactly these, and for
    spaces other than ' '). Characters in `keep` (say a tab) stay as they are.

    >>> visible("A\\x1b]0;pwned\\x07B"), visible("tab\\there", keep="\\t")
    ('A\\\\x1b]0;pwned\\\\x07B', 'tab\\there')
    >>> visible("I·J ≤ 2, \\u202eevil")
    'I·J ≤ 2, \\\\u202eevil'
    """
    plain = text
    for k in keep:
        plain = plain.replace(k, "")
    if plain.isprintable():  # the usual case, at C speed (a report is megabytes at most)
        return text
    return "".join(c if c.isprintable() or c in keep else _escape(c) for c in text)


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(c: str) -> str:
    if c in _SHORT:
        return _SHORT[c]
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def visible_columns(text: str, col: int, width: int, keep: str = "\t") -> tuple[str, int, int]:
    """`visible(text)` with a caret's 1-based column and width moved to where the characters
    they pointed at are shown.

    >>> visible_columns("a\\x1bB", 3, 1)
    ('a\\\\x1bB', 6, 1)
    """
    shown = visible(text, keep)
    if shown == text:
        return text, col, width
    before = visible(text[: col - 1], keep)
    under = visible(text[col - 1 : col - 1 + width], keep)
    return shown, len(before) + 1, max(1, len(under))


def visible_lines(text: str) -> str:
    """`visible` for a message of several lines (an error with a caret under a formula): its
    own line breaks kept, every other control character shown.

    >>> visible_lines("--y 'a +':\\n  a +\\x1b")
    "--y 'a +':\\n  a +\\\\x1b"
    """
    return visible(text, keep="\n")
