"""What an expectation's names mean in a report, and whether it holds at one point: totals
and the text report's labels stand for their formulas (`to_sympy`), collectives are matched by
op, mesh axes and operand (`collectives_of`), and `fails_at` says why a rule fails in a report
at one point, with both sides' formulas and values."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

import sympy as sp

from shardc.driver import user_expr as formulas
from shardc.driver.printers import SUMMARY
from shardc.lang.expect import (
    BinOp,
    Call,
    Collective,
    Collectives,
    Expectation,
    ExpectError,
    Name,
    Neg,
    Node,
    Num,
    Relation,
)
from shardc.lang.source import Span
from shardc.passes.symbols import as_expr

if TYPE_CHECKING:
    from shardc.driver.report import Report

LABELS = {label: key for label, key, _ in SUMMARY if label.isidentifier()}
"""The text report's labels that are names (`T_comms`, `FLOPs`), by the total they show."""
FUNCTIONS: dict[str, Callable[..., sp.Expr]] = {
    name: formulas.FUNCTIONS[name] for name in ("Max", "Min", "sqrt", "abs")
}
"""The functions an expectation may call (a command-line formula's, fewer of them)."""
TOLERANCE = 1e-9
"""Relative: `==` and the non-strict comparisons forgive float rounding this small."""


class NoValue(Exception):
    """A quantity without a number at a point: a chip figure with no chip."""


# ---- names ---------------------------------------------------------------------------------
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "**": 4}


def node_text(node: Node) -> str:
    """An operand as the user would write it, parenthesized only where needed."""
    match node:
        case Num(text):
            return text
        case Name(name):
            return name
        case Neg(operand):
            return f"-{_child(operand, 3, strict=False)}"
        case BinOp(op, left, right):
            p = _PRECEDENCE[op]
            a = _child(left, p, strict=op == "**")
            b = _child(right, p, strict=op in ("-", "/"))
            return f"{a} {op} {b}" if p == 1 else f"{a}{op}{b}"
        case Call(func, args):
            return f"{func}({', '.join(node_text(a) for a in args)})"
    raise TypeError(node)


def _child(node: Node, outer: int, strict: bool) -> str:
    inner = _PRECEDENCE[node.op] if isinstance(node, BinOp) else 3 if isinstance(node, Neg) else 5
    text = node_text(node)
    return f"({text})" if inner < outer or (strict and inner == outer) else text


def known_names(report: Report) -> str:
    """What an expectation may name, for a message: the totals, the text report's labels and
    the sizes (and the chip's figures, not listed)."""
    sizes = [n for n, _ in (*report.program.dims, *report.program.mesh)]
    labels = [k for k, v in LABELS.items() if v in report.totals]
    return (
        f"totals: {', '.join(report.totals)}; labels: {', '.join(labels)}; sizes: "
        f"{', '.join(sizes)}; and the chip's figures (C, W_hbm, W_ici, ...)"
    )


def to_sympy(node: Node, report: Report) -> sp.Expr:
    """An expectation's operand over `report`: a total's name (or its text label) stands for
    its formula, any other name for the size or chip figure it names. `ExpectError` (E002)
    for an unknown name, and for what is not a real quantity (`1/0`, `sqrt(-1)`).

    The operand is built as a command-line formula (`shardc.driver.user_expr.to_sympy`, the one
    home of a formula's arithmetic); decimals stay exact (`0.5` is 1/2), and an exponent must
    come to a whole number up to 16."""
    spans: list[Span] = []
    values: dict[str, sp.Expr] = {}
    try:
        out = _build(_formula(node, report, spans, values), spans, values)
    except (TypeError, ValueError, ArithmeticError) as exc:
        if isinstance(exc, ExpectError):
            raise
        raise ExpectError(
            f"{node_text(node)} is not a quantity SymPy can build: {exc}", node.span
        ) from None
    if out.has(sp.zoo, sp.nan, sp.oo, -sp.oo, sp.I):
        raise ExpectError(f"{node_text(node)} is not a finite real quantity ({out})", node.span)
    return out


def _build(tree: formulas.Node, spans: list[Span], values: dict[str, sp.Expr]) -> sp.Expr:
    """`tree` in SymPy; its nodes' columns index `spans`, the expectation's own positions."""
    try:
        return formulas.to_sympy(tree, values.__getitem__)
    except formulas.ExprError as exc:
        raise ExpectError(exc.message, spans[exc.column]) from None


def _formula(
    node: Node, report: Report, spans: list[Span], values: dict[str, sp.Expr]
) -> formulas.Node:
    """The operand as a command-line formula's tree, its names resolved into `values` and the
    rules only an expectation has checked (its functions, whole exponents)."""
    column = len(spans)
    spans.append(node.span)
    match node:
        case Num(_, value):
            if value == value.to_integral_value():
                return formulas.Num(value, column)
            p, q = value.as_integer_ratio()  # exact: the formula's own literal would be a Float
            return formulas.BinOp(
                "/", formulas.Num(Decimal(p), column), formulas.Num(Decimal(q), column), column
            )
        case Name(name):
            values[name] = _quantity(name, node, report)
            return formulas.Name(name, column)
        case Neg(operand):
            return formulas.Neg(_formula(operand, report, spans, values), column)
        case BinOp(op, left, right):
            a = _formula(left, report, spans, values)
            b = _formula(right, report, spans, values)
            if op == "**":
                power = _build(b, spans, values)
                if not (power.is_Integer and abs(int(power)) <= 16):
                    raise ExpectError(
                        "'**' takes a whole number up to 16 as its exponent", node.span
                    )
            return formulas.BinOp(op, a, b, column)
        case Call(func, args):
            if func not in FUNCTIONS:
                raise ExpectError(
                    f"unknown function {func!r}; an expectation may call " + ", ".join(FUNCTIONS),
                    node.span,
                )
            if func != "Max" and func != "Min" and len(args) != 1:
                raise ExpectError(f"{func} takes 1 argument, got {len(args)}", node.span)
            return formulas.Call(
                func, tuple(_formula(a, report, spans, values) for a in args), column
            )
    raise TypeError(node)


def _quantity(name: str, node: Node, report: Report) -> sp.Expr:
    key = name if name in report.totals else LABELS.get(name)
    if key is not None and key in report.totals:
        return as_expr(report.totals[key])
    names = report.names()
    if name in names:
        return names[name]
    raise ExpectError(
        f"unknown quantity {name!r}; {known_names(report)}",
        node.span,
        "not a total, label, size or chip figure of this program",
    )


def axes_of(c: Collective, mesh: Sequence[str]) -> tuple[str, ...]:
    """A collective's subscript as mesh axes: `_{X,Y}`, `_XY` (single-letter axes), `_data`."""
    out: list[str] = []
    for entry in c.subscript:
        if entry in mesh:
            out.append(entry)
        elif all(ch in mesh for ch in entry):
            out.extend(entry)
        else:
            raise ExpectError(
                f"{entry!r} in {c.text} is not a mesh axis of this program "
                f"(mesh axes: {', '.join(mesh)})",
                c.span,
                "a collective in an expectation names its mesh axes only",
            )
    return tuple(out)


def resolve(report: Report, e: Expectation) -> None:
    """Raise `ExpectError` (E002) for a name the program does not have."""
    if isinstance(e.claim, Collectives):
        for c in e.claim.items:
            axes_of(c, report.program.mesh_axes)
    else:
        for n in e.claim.operands:
            to_sympy(n, report)
    for w in e.where:
        for n in w.operands:
            to_sympy(n, report)


# ---- one point -----------------------------------------------------------------------------
def compare(op: str, a: float, b: float) -> bool:
    close = math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=0.0)
    return {
        "==": close,
        "!=": not close,
        "<": a < b and not close,
        ">": a > b and not close,
        "<=": a <= b or close,
        ">=": a >= b or close,
    }[op]


def number(
    report: Report, expr: sp.Expr, text: str, point: str, bindings: Mapping[str, int]
) -> float:
    import warnings

    import numpy as np

    try:
        # past a float's range numpy warns and gives inf, which `value` turns into None
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            v = report.value(expr, **bindings) if bindings else report.value(expr)
    except (ArithmeticError, TypeError) as exc:  # OverflowError: past a float's range
        raise NoValue(f"{text} has no number {point}: {exc}") from None
    if v is None and expr.free_symbols <= report.environment().keys() | {
        report.names()[n] for n in bindings
    }:
        raise NoValue(f"{text} has no number {point}: it overflows a float (or divides by 0)")
    if v is None:
        env = report.environment()
        missing = sorted(s.name for s in expr.free_symbols if s not in env)
        why = (
            " (the program names no chip: add a `hardware` line, or pass --hw)"
            if report.chip is None
            else ""
        )
        raise NoValue(
            f"{text} has no number {point}: {', '.join(missing) or 'a term'} has no value{why}"
        )
    return v


def relation_fails(
    report: Report, rel: Relation, point: str, bindings: Mapping[str, int]
) -> str | None:
    """Why `rel` fails in `report` (its values, with `bindings`), or None where it holds."""
    values = [(node_text(n), to_sympy(n, report)) for n in rel.operands]
    numbers = [number(report, x, t, point, bindings) for t, x in values]
    for i, op in enumerate(rel.ops):
        if not compare(op, numbers[i], numbers[i + 1]):
            lines = []
            for (t, x), v in ((values[i], numbers[i]), (values[i + 1], numbers[i + 1])):
                shown = str(x)
                lines.append(
                    f"    {t} = {v:.6g}"
                    if shown in (t, f"{v:g}") or len(shown) > 200
                    else f"    {t} = {shown} = {v:.6g}"
                )
            return f"  {values[i][0]} {op} {values[i + 1][0]} is false:\n" + "\n".join(lines)
    return None


def holds(report: Report, rel: Relation, bindings: Mapping[str, int]) -> bool:
    try:
        return relation_fails(report, rel, "", bindings) is None
    except NoValue:
        return False


def collectives_of(report: Report, line: int | None) -> list[tuple[str, tuple[str, ...], str]]:
    """The collectives a program (or its statement on `line`) runs, in order."""
    return [
        (c.op, tuple(c.axes), c.array)
        for c in report.ops
        if c.kind == "collective" and (line is None or c.line == line)
    ]


def listed(items: Sequence[tuple[str, tuple[str, ...], str]]) -> str:
    """`[AllGather_X(W), ReduceScatter_{data,model}(G)]`."""

    def sub(axes: tuple[str, ...]) -> str:
        return "".join(axes) if all(len(a) == 1 for a in axes) else "{" + ",".join(axes) + "}"

    return "[" + ", ".join(f"{op}_{sub(axes)}({arr})" for op, axes, arr in items) + "]"


def collectives_fail(report: Report, e: Expectation, claim: Collectives) -> str | None:
    line = e.line if e.found.statement else None
    have = collectives_of(report, line)
    mesh = report.program.mesh_axes
    want = [(c.op, axes_of(c, mesh), c.operand) for c in claim.items]
    scope = f"line {line}'s collectives" if line is not None else "collectives"
    if claim.op == "==" and have != want:
        return f"  {scope} are {listed(have)}, expected {listed(want)}"
    if claim.op == "!=" and have == want:
        return f"  {scope} are {listed(have)}"
    if claim.op == "in" and want[0] not in have:
        return f"  {claim.items[0].text} is not among {scope} {listed(have)}"
    if claim.op == "not in" and want[0] in have:
        return f"  {claim.items[0].text} is among {scope} {listed(have)}"
    return None


def where_holds(report: Report, e: Expectation, bindings: Mapping[str, int] | None = None) -> bool:
    """Whether the expectation's `where` conditions hold in `report` (with `bindings`)."""
    return all(holds(report, w, bindings or {}) for w in e.where)


def fails_at(
    report: Report, e: Expectation, point: str = "", bindings: Mapping[str, int] | None = None
) -> str | None:
    """Why `e` fails in `report` (a report at one point, or with `bindings` the sizes it
    leaves symbolic), None where it holds or its `where` does not."""
    bindings = bindings or {}
    if not where_holds(report, e, bindings):
        return None
    if isinstance(e.claim, Collectives):
        return collectives_fail(report, e, e.claim)
    return relation_fails(report, e.claim, point, bindings)


__all__ = [
    "FUNCTIONS",
    "LABELS",
    "TOLERANCE",
    "NoValue",
    "axes_of",
    "collectives_fail",
    "collectives_of",
    "compare",
    "fails_at",
    "holds",
    "known_names",
    "listed",
    "node_text",
    "number",
    "relation_fails",
    "resolve",
    "to_sympy",
    "where_holds",
]
