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
        _done: dict[Any, str]

        def _print(self, expr: Any, **kwargs: Any) -> str:
            if kwargs:
                return super()._print(expr, **kwargs)
            key = (type(expr), expr, self._print_level == 0)
            hit = self._done.get(key)
            if hit is None:
                if len(self._done) >= MAX_ENTRIES:
                    self._done.clear()
                hit = self._done[key] = super()._print(expr)
            return hit

    Memo.__name__ = f"Memo{base.__name__}"
    return Memo


_STR: Any = None
_TEX: Any = None


def _printers() -> tuple[Any, Any]:
    global _STR, _TEX
    if _STR is None:
        from sympy.printing.latex import LatexPrinter
        from sympy.printing.str import StrPrinter

        str_cls, tex_cls = _memo_printer(StrPrinter), _memo_printer(LatexPrinter)
        str_cls._done = register("formulas.str-terms")
        tex_cls._done = register("formulas.latex-terms")
        _STR, _TEX = str_cls(), tex_cls({"symbol_names": _Names()})
    return _STR, _TEX


_CODE: Any = None


def code_printer() -> Any:
    """The printer `sympy.lambdify(..., modules="math")` makes for itself, printing each
    subexpression once per process: a report's formulas share most of their terms, and
    printing them was most of a `lambdify` (the same code, so the same numbers)."""
    global _CODE
    if _CODE is None:
        from sympy.printing.pycode import PythonCodePrinter

        cls = _memo_printer(PythonCodePrinter)
        cls._done = register("formulas.code-terms")
        _CODE = cls({"fully_qualified_modules": False, "inline": True,
                     "allow_unknown_functions": True, "user_functions": {}})
    return _CODE


def text(expr: Any) -> str:
    """`str(expr)`, printed once per distinct expression (and each of its terms once).

    >>> B = sp.Symbol("B")
    >>> text(2 * B / 3), text(2 * B / 3) is text(2 * B / 3), text(sp.Float(0.5) * B)
    ('2*B/3', True, '0.5*B')
    """
    key = (type(expr), expr)  # 2 and 2.0 are equal keys, but print differently
    hit = _TEXT.get(key)
    if hit is None:
        if len(_TEXT) >= MAX_ENTRIES:
            _TEXT.clear()
        hit = _TEXT[key] = _printers()[0].doprint(expr) if isinstance(expr, sp.Basic) \
            else str(expr)
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
    base = (head if len(head) == 1 else f"\\{head}" if head in ("eta", "alpha") and sub
            else f"\\mathrm{{{head}}}")
    return f"{base}_{{\\mathrm{{{sub}}}}}" if sub else base


def latex(expr: Any) -> str:
    """`sympy.latex` with every symbol named by `latex_name`, printed once per distinct
    expression (and each of its terms once).

    >>> print(latex(sp.Symbol("W_hbm") / sp.Symbol("B")))
    \\frac{W_{\\mathrm{hbm}}}{B}
    """
    key = (type(expr), expr)
    hit = _LATEX.get(key)
    if hit is None:
        if len(_LATEX) >= MAX_ENTRIES:
            _LATEX.clear()
        hit = _LATEX[key] = _printers()[1].doprint(as_expr(expr))
    return hit


__all__ = ["latex", "latex_name", "text"]
