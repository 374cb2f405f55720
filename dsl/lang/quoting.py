"""A user's value quoted in a message: `repr` (control characters shown as escapes), cut to
`QUOTE_WIDTH` characters, the source-line width diagnostics already quote, so a 1 MB value in a
chip file, a card or a flag is never echoed in full."""

from __future__ import annotations

from typing import Any

from shardc.lang.diagnostics import QUOTE_WIDTH


def quoted(value: Any, width: int = QUOTE_WIDTH) -> str:
    """`repr(value)`, or its first `width` characters and how long the whole was.

    >>> quoted("B")
    "'B'"
    >>> quoted("x" * 1_000_000)[-36:]
    'xxx... (1,000,000 characters in all)'
    """
    if isinstance(value, str) and len(value) > width:
        return repr(value[:width]).rstrip("'\"") + f"... ({len(value):,} characters in all)"
    text = repr(value)
    if len(text) <= width:
        return text
    return text[:width] + f"... ({len(text):,} characters in all)"


def clipped(text: str, width: int = QUOTE_WIDTH) -> str:
    """`text` itself (not its repr) cut to `width` characters, for a value a message shows bare.

    >>> clipped("4096"), clipped("9" * 500)[-30:]
    ('4096', '99... (500 characters in all)')
    """
    if len(text) <= width:
        return text
    return text[:width] + f"... ({len(text):,} characters in all)"
