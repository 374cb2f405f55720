"""Formulas as text and LaTeX, each distinct expression printed once.

A report repeats a few distinct formulas many times (every op of a repeated statement shape has
the same bytes, time and FLOPs): a 1,000-einsum chain prints 28 distinct formulas 38,000 times.
SymPy's printers cost about 0.5 ms a call, so every renderer (text, Markdown, LaTeX, JSON)
prints through `text` and `latex`, which keep each result keyed by the expression. The caches
live for the process (the notebook and the language server print the same formulas again):
they are `passes.memo`'s tables (`FORMULA_TEXT`, `FORMULA_LATEX`, the printers' terms).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from shardc.passes.memo import (
    CODE_TERMS,
    FORMULA_LATEX,
    FORMULA_TEXT,
    LATEX_TERMS,
    PRINTERS,
    STR_TERMS,
    Table,
    memoized,
)
from shardc.passes.symbols import as_expr


class _Names(dict):
    """`symbol_names` for the LaTeX printer: every symbol by `latex_name`, made on demand."""

    def get(self, key: Any, default: Any = None) -> Any:
        name = getattr(key, "name", None)
        return latex_name(name) if isinstance(name, str) else default


def _memo_printer(base: Any) -> Any:
    """`base` (a SymPy printer) printing each subexpression once per process: the formulas of
    a report share most of their terms, and SymPy prints a term again inside every formula
    that holds it. A subexpression's text does not depend on where it sits (its parent adds
    the parentheses), except a Float's digits at the top level (`_print_level`), which the key
    holds; calls with printing options (LaTeX's `exp=` for a power of a function) are not
    kept."""

    class Memo(base):
        _done: Table[Any, str]

        def _print(self, expr: Any, **kwargs: Any) -> str:
            if kwargs:
                return super()._print(expr, **kwargs)
            key = (type(expr), expr, self._print_level == 0)
            hit = self._done.get(key)
            if hit is None:
                hit = self._done[key] = super()._print(expr)
            return hit

    Memo.__name__ = f"Memo{base.__name__}"
    return Memo


@memoized(PRINTERS, lambda: "text-latex")
def _printers() -> tuple[Any, Any]:
    """The text and LaTeX printers, built on first use."""
    from sympy.printing.latex import LatexPrinter
    from sympy.printing.str import StrPrinter

    str_cls, tex_cls = _memo_printer(StrPrinter), _memo_printer(LatexPrinter)
    str_cls._done = STR_TERMS
    tex_cls._done = LATEX_TERMS
    return str_cls(), tex_cls({"symbol_names": _Names()})


@memoized(PRINTERS, lambda: "code")
def code_printer() -> Any:
    """The printer `sympy.lambdify(..., modules="math")` makes for itself, printing each
    subexpression once per process: a report's formulas share most of their terms, and
    printing them was most of a `lambdify` (the same code, so the same numbers)."""
    from sympy.printing.pycode import PythonCodePrinter

    cls = _memo_printer(PythonCodePrinter)
    cls._done = CODE_TERMS
    return cls(
        {
            "fully_qualified_modules": False,
            "inline": True,
            "allow_unknown_functions": True,
            "user_functions": {},
        }
    )


def text(expr: Any) -> str:
    """`str(expr)`, printed once per distinct expression (and each of its terms once).

    >>> B = sp.Symbol("B")
    >>> text(2 * B / 3), text(2 * B / 3) is text(2 * B / 3), text(sp.Float(0.5) * B)
    ('2*B/3', True, '0.5*B')
    """
    key = (type(expr), expr)  # 2 and 2.0 are equal keys, but print differently
    hit = FORMULA_TEXT.get(key)
    if hit is None:
        hit = FORMULA_TEXT[key] = (
            _printers()[0].doprint(expr) if isinstance(expr, sp.Basic) else str(expr)
        )
    return hit


def latex_name(name: str) -> str:
    r"""LaTeX for a symbol name: `W_hbm` -> `W_{\mathrm{hbm}}` (SymPy would bold the `bm`).

    >>> print(latex_name("W_hbm"), latex_name("B"), latex_name("data"), latex_name("eta_mxu"))
    W_{\mathrm{hbm}} B \mathrm{data} \eta_{\mathrm{mxu}}
    >>> print(latex_name("alpha_ib"), latex_name("n_half_ib"))
    \alpha_{\mathrm{ib}} n_{\mathrm{half\_ib}}
    """
    head, _, sub = name.partition("_")
    sub = sub.replace("_", "\\_")
    base = (
        head
        if len(head) == 1
        else f"\\{head}"
        if head in ("eta", "alpha") and sub
        else f"\\mathrm{{{head}}}"
    )
    return f"{base}_{{\\mathrm{{{sub}}}}}" if sub else base


def latex(expr: Any) -> str:
    """`sympy.latex` with every symbol named by `latex_name`, printed once per distinct
    expression (and each of its terms once).

    >>> print(latex(sp.Symbol("W_hbm") / sp.Symbol("B")))
    \\frac{W_{\\mathrm{hbm}}}{B}
    """
    key = (type(expr), expr)
    hit = FORMULA_LATEX.get(key)
    if hit is None:
        hit = FORMULA_LATEX[key] = _printers()[1].doprint(as_expr(expr))
    return hit


__all__ = ["latex", "latex_name", "text"]
