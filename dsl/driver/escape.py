"""One escaping function per output format, for every user string a writer puts in a report (a
file name, a chip's name, a name from the program, a note): Markdown text and code spans, HTML,
LaTeX text and comments. Control characters are written visibly first (`shardc.lang.visible`),
so no format carries a line break or a terminal escape out of its field. Names made of letters,
digits and `_` come out unchanged, so ordinary reports are what they were.
"""

from __future__ import annotations

import html
import re

from shardc.lang.visible import visible

_MD_TEXT = {"\\": "\\\\", "`": "\\`", "|": "\\|", "$": "\\$", "<": "&lt;", "&": "&amp;"}
_MD_SPECIAL = re.compile(r"[\\`|$<&]|\](?=\()")
_MD_SPECIAL_BUT_CODE = re.compile(r"[\\|$<&]|\](?=\()")


def md_text(text: str) -> str:
    """`text` for a Markdown paragraph or table cell (GitHub's and Jupyter's renderers): no HTML
    tag, entity, math, link or cell break can start in it, and no code span can reach past it
    (backticks in pairs stay, as the compiler's reasons quote `+` so; an odd one is escaped).
    `*` and `_` may still emphasise (cosmetic, and names such as AllGather_X are full of them).

    >>> md_text("<script>alert(1)</script> | $x$ [a](javascript:b)")
    '&lt;script>alert(1)&lt;/script> \\\\| \\\\$x\\\\$ [a]\\\\(javascript:b)'
    >>> md_text("AllGather_X(A) [2.54 ms comms + compute]"), md_text("`+` cannot"), md_text("a`b")
    ('AllGather_X(A) [2.54 ms comms + compute]', '`+` cannot', 'a\\\\`b')
    """
    shown = visible(text)
    special = _MD_SPECIAL if shown.count("`") % 2 else _MD_SPECIAL_BUT_CODE
    return special.sub(lambda m: _MD_TEXT.get(m.group(0), "]\\"), shown)


def md_code(text: str, table: bool = False, markup_as_text: bool = False) -> str:
    """`text` as a Markdown code span (backticks included): nothing inside a code span is HTML
    or Markdown, so only the span's end needs care: a fence longer than any run of backticks
    in the text, and `\\|` for `|` inside a table row (GitHub splits cells before code spans).
    With `markup_as_text`, text holding `<`, `&` or `](` (a file name, never a program's name
    or a condition such as `B < 2*F`) is written as `md_text` instead: no raw tag at all.

    >>> md_code("A[I_X]"), md_code("a`b"), md_code("x|y", table=True)
    ('`A[I_X]`', '`` a`b ``', '`x\\\\|y`')
    """
    shown = visible(text)
    if markup_as_text and ("<" in shown or "&" in shown or "](" in shown):
        return md_text(shown)  # a file name: no raw tag in the output at all
    if table:
        shown = shown.replace("|", "\\|")
    if "`" not in shown:
        return f"`{shown}`"
    fence = "`" * (max(len(run) for run in re.findall(r"`+", shown)) + 1)
    return f"{fence} {shown} {fence}"


def html_text(text: str) -> str:
    """`text` for HTML content or a quoted attribute value (line breaks and tabs kept: a `<pre>`
    block shows them).

    >>> html_text('<b title="x">&\\x1b\\n')
    '&lt;b title=&quot;x&quot;&gt;&amp;\\\\x1b\\n'
    """
    return html.escape(visible(text, keep="\n\t"))


_LATEX = {
    "\\": "\\textbackslash{}",
    "{": "\\{",
    "}": "\\}",
    "_": "\\_",
    "$": "\\$",
    "%": "\\%",
    "&": "\\&",
    "#": "\\#",
    "^": "\\^{}",
    "~": "\\~{}",
    "->": "$\\to$",
}
_LATEX_SPECIAL = re.compile(r"->|[\\{}_$%&#^~]")


def latex_text(text: str) -> str:
    r"""Text for LaTeX's text mode: an op such as `Send_{X: 0->3}` or `gelu_grad`, a file name;
    every character TeX treats specially is escaped, so no command can run from it.

    >>> print(latex_text("Send_{X: 0->3}"))
    Send\_\{X: 0$\to$3\}
    >>> print(latex_text("a$b%c\\input{x}"))
    a\$b\%c\textbackslash{}input\{x\}
    """
    return _LATEX_SPECIAL.sub(lambda m: _LATEX[m.group(0)], visible(text))


def latex_comment(text: str) -> str:
    """`text` inside a LaTeX `%` comment: one line, so nothing after it becomes LaTeX."""
    return visible(text)
