"""Formulas as text and LaTeX, each distinct expression printed once.

A report repeats a few distinct formulas many times (every op of a repeated statement shape has
the same bytes, time and FLOPs): a 1,000-einsum chain prints 28 distinct formulas 38,000 times.
SymPy's printers cost about 0.5 ms a call, so every renderer (text, Markdown, LaTeX, JSON)
prints through `text` and `latex`, which keep each result keyed by the expression. The caches
live for the process (the notebook and the language server print the same formulas again) and
are emptied when they pass `passes.memo.MAX_ENTRIES`, or by `passes.memo.clear()`.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from shardc.passes.memo import MAX_ENTRIES, register
from shardc.passes.symbols import as_expr

_TEXT: dict[Any, str] = register("formulas.text")
_LATEX: dict[Any, str] = register("formulas.latex")


def text(expr: Any) -> str:
    """`str(expr)`, printed once per distinct expression.

    >>> B = sp.Symbol("B")
    >>> text(2 * B / 3), text(2 * B / 3) is text(2 * B / 3)
    ('2*B/3', True)
    """
    key = (type(expr), expr)  # 2 and 2.0 are equal keys, but print differently
    hit = _TEXT.get(key)
    if hit is None:
        if len(_TEXT) >= MAX_ENTRIES:
            _TEXT.clear()
        hit = _TEXT[key] = str(expr)
    return hit


def latex_name(name: str) -> str:
    r"""LaTeX for a symbol name: `W_hbm` -> `W_{\mathrm{hbm}}` (SymPy would bold the `bm`).

    >>> print(latex_name("W_hbm"), latex_name("B"), latex_name("data"))
    W_{\mathrm{hbm}} B \mathrm{data}
    """
    head, _, sub = name.partition("_")
    base = head if len(head) == 1 else f"\\mathrm{{{head}}}"
    return f"{base}_{{\\mathrm{{{sub}}}}}" if sub else base


def latex(expr: Any) -> str:
    """`sympy.latex` with every symbol named by `latex_name`, printed once per distinct
    expression."""
    key = (type(expr), expr)
    hit = _LATEX.get(key)
    if hit is None:
        e = as_expr(expr)
        if len(_LATEX) >= MAX_ENTRIES:
            _LATEX.clear()
        hit = _LATEX[key] = sp.latex(e, symbol_names={s: latex_name(s.name)
                                                       for s in e.free_symbols})
    return hit


__all__ = ["latex", "latex_name", "text"]
