"""The vocabulary of a command-line formula: its AST (small frozen dataclasses), the functions
and relations it may use, the limits on its size and `ExprError` (`shardc.driver.user_expr_syntax`
parses into it; `shardc.driver.user_expr` is the public home of these names).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial

import sympy as sp

from shardc.lang.input_limits import MAX_NESTING

MAX_LENGTH = 1_000
"""Characters in one formula."""
MAX_EXPONENT = 16
"""`**` takes a literal whole exponent or ratio of whole numbers up to this size: `B**2`,
`X**(1/2)`; `B**B**B` is refused, so no formula can build a tower SymPy cannot hold."""
FUNCTIONS: dict[str, Callable[..., sp.Expr]] = {
    "Max": sp.Max,
    "Min": sp.Min,
    "sqrt": sp.sqrt,
    "log": sp.log,
    "floor": sp.floor,
    "ceiling": sp.ceiling,
    "abs": sp.Abs,
    **{
        name: partial(rel, evaluate=False)
        for name, rel in (
            ("Eq", sp.Eq),
            ("Ne", sp.Ne),
            ("Lt", sp.Lt),
            ("Le", sp.Le),
            ("Gt", sp.Gt),
            ("Ge", sp.Ge),
        )
    },
}
"""The only functions a formula may call (the relations only where a comparison is allowed)."""
ARITY = {
    "sqrt": (1, 1),
    "log": (1, 1),
    "floor": (1, 1),
    "ceiling": (1, 1),
    "abs": (1, 1),
    "Max": (1, MAX_NESTING),
    "Min": (1, MAX_NESTING),
    **{r: (2, 2) for r in ("Eq", "Ne", "Lt", "Le", "Gt", "Ge")},
}


class ExprError(ValueError):
    """A formula that is not accepted; `column` (0-based) is where in the text."""

    __module__ = "shardc.driver.user_expr"  # its public home, as raised and documented

    def __init__(self, message: str, column: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.column = column

    def render(self, flag: str, text: str) -> str:
        """`shardc: error: --solve-for 'B/(X': ...` with the text and a caret under the column.

        >>> print(ExprError("unexpected end; expected ')'", 4).render("--solve-for", "B/(X"))
        shardc: error: --solve-for 'B/(X': unexpected end; expected ')'
          B/(X
              ^
        """
        shown = text if len(text) <= 120 else text[:117] + "..."
        line = f"shardc: error: {flag} {shown!r}: {self.message}"
        if not shown.isprintable() or not shown:
            return line
        caret = " " * min(self.column, len(shown)) + "^"
        return f"{line}\n  {shown}\n  {caret}"


# ---- the AST ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Num:
    value: Decimal
    column: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Name:
    name: str
    column: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Neg:
    operand: Node
    column: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class BinOp:
    op: str  # "+", "-", "*", "/", "**"
    left: Node
    right: Node
    column: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Call:
    func: str
    args: tuple[Node, ...]
    column: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Compare:
    """A relation; only `Report.parse` accepts one (the command-line flags want numbers)."""

    op: str  # ">", "<", ">=", "<=", "==", "!="
    left: Node
    right: Node
    column: int = field(default=0, compare=False, repr=False)


Node = Num | Name | Neg | BinOp | Call | Compare
RELATIONS = {
    ">": sp.StrictGreaterThan,
    "<": sp.StrictLessThan,
    ">=": sp.GreaterThan,
    "<=": sp.LessThan,
    "==": sp.Eq,
    "!=": sp.Ne,
}
