"""Formulas typed on the command line (`--solve-for B/X`, `--y t_math_s/t_comms_s`): parsed by
`grammar/expr.lark` into a small AST, then built into SymPy by `to_sympy`. User text is never
handed to `sympify`, `eval` or `parse_expr`.

>>> import sympy as sp
>>> to_sympy(parse("2*B*D/X**2"), sp.Symbol)
2*B*D/X**2
>>> parse("B/(X")
Traceback (most recent call last):
...
shardc.driver.user_expr.ExprError: unexpected end; expected ')'
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import sympy as sp

from shardc.driver.user_expr_ast import (
    ARITY,
    FUNCTIONS,
    MAX_EXPONENT,
    MAX_LENGTH,
    RELATIONS,
    BinOp,
    Call,
    Compare,
    ExprError,
    Name,
    Neg,
    Node,
    Num,
)
from shardc.driver.user_expr_syntax import parse


# ---- to SymPy --------------------------------------------------------------------------------
def number(value: Decimal) -> sp.Expr:
    """A literal as SymPy: whole numbers exact, others as Float (as SymPy's own parser does)."""
    if value == value.to_integral_value():
        return sp.Integer(int(value))
    return sp.Float(str(value))


def to_sympy(node: Node, resolve: Callable[[str], sp.Expr]) -> sp.Expr:
    """Build the SymPy expression of a formula; `resolve(name)` gives each name's symbol (or
    raises `ExprError`/`KeyError` for an unknown one).

    >>> to_sympy(parse("Max(B, 2) - 1/2"), lambda n: sp.Symbol(n, positive=True))
    Max(2, B) - 1/2
    """
    match node:
        case Num(value):
            return number(value)
        case Name(name):
            try:
                return resolve(name)
            except KeyError as exc:
                raise ExprError(
                    str(exc.args[0]) if exc.args else f"unknown name {name!r}", node.column
                ) from None
            except ExprError as exc:
                raise ExprError(exc.message, node.column) from None
        case Neg(operand):
            return -to_sympy(operand, resolve)
        case BinOp(op, left, right):
            a, b = to_sympy(left, resolve), to_sympy(right, resolve)
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            if op == "/":
                if b.is_zero:
                    raise ExprError("division by zero", node.column)
                return a / b
            if b.is_negative and a.is_zero:
                raise ExprError("division by zero (0 to a negative power)", node.column)
            return a**b
        case Call(func, args):
            values = [to_sympy(a, resolve) for a in args]
            try:
                out = FUNCTIONS[func](*values)
            except (ValueError, TypeError, ArithmeticError) as exc:  # Max(I): not comparable
                raise ExprError(
                    f"{func}(...) of these arguments is not a number: {exc}", node.column
                ) from None
            if out.is_extended_real is False:  # sqrt(-1), log(-2): not a cost or a size
                raise ExprError(f"{func}(...) of these arguments is not a real number", node.column)
            return out
        case Compare(op, left, right):
            return RELATIONS[op](to_sympy(left, resolve), to_sympy(right, resolve))
    raise TypeError(f"not a formula node: {node!r}")


def number_formula(text: str, resolve: Callable[[str], sp.Expr]) -> sp.Expr:
    """`formula`, refusing a comparison: what a flag such as --y or --solve-for takes."""
    node = parse(text)
    if isinstance(node, Compare):
        raise ExprError(f"a comparison ({node.op}) is not a quantity; give a formula", node.column)
    out = to_sympy(node, resolve)
    if not isinstance(out, sp.Expr):
        raise ExprError("a comparison is not a quantity; give a formula", 0)
    return out


def formula(text: str, resolve: Callable[[str], sp.Expr]) -> sp.Expr:
    """`to_sympy(parse(text), resolve)`."""
    return to_sympy(parse(text), resolve)


def known_names_resolver(known: dict[str, sp.Expr], what: str = "name") -> Callable[[str], sp.Expr]:
    """A `resolve` that knows only `known` and lists them for any other name.

    >>> formula("B/Q", known_names_resolver({"B": sp.Symbol("B")}))
    Traceback (most recent call last):
    ...
    shardc.driver.user_expr.ExprError: unknown name 'Q' (known: B)
    """

    def resolve(name: str) -> sp.Expr:
        if name in known:
            return known[name]
        listed = ", ".join(sorted(known, key=lambda n: (n.lower(), n)))
        raise ExprError(f"unknown {what} {name!r} (known: {listed})")

    return resolve


def to_text(node: Node) -> str:
    """A formula's text, fully parenthesized (re-parses to the same AST).

    >>> to_text(parse("-B + 2*X**2"))
    '((-B) + (2 * (X ** 2)))'
    """
    match node:
        case Num(value):
            return str(value)
        case Name(name):
            return name
        case Neg(operand):
            return f"(-{to_text(operand)})"
        case BinOp(op, left, right):
            return f"({to_text(left)} {op} {to_text(right)})"
        case Call(func, args):
            return f"{func}({', '.join(to_text(a) for a in args)})"
        case Compare(op, left, right):
            return f"{to_text(left)} {op} {to_text(right)}"
    raise TypeError(f"not a formula node: {node!r}")


__all__ = [
    "ARITY",
    "FUNCTIONS",
    "MAX_EXPONENT",
    "MAX_LENGTH",
    "RELATIONS",
    "BinOp",
    "Call",
    "Compare",
    "ExprError",
    "Name",
    "Neg",
    "Node",
    "Num",
    "formula",
    "known_names_resolver",
    "number",
    "number_formula",
    "parse",
    "to_sympy",
    "to_text",
]
