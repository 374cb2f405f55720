"""Expectations in a .shard file: the `# expect:` comments, parsed by `grammar/expect.lark` into
a small AST with spans (`shardc.testing.expect` checks them against a report). A syntax error is
an E001 diagnostic with the line, column and a caret, as a program's errors are.

>>> src = Source("p.shard", "mesh X=2\\n# expect: comm_bytes == 0 where B >= 4Ki\\n")
>>> [e.text for e in find(src)]
['comm_bytes == 0 where B >= 4Ki']
>>> parse(find(src)[0], Diagnostics()).where[0].operands[1]
Num(text='4Ki', value=Decimal('4096'))
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Literal

from lark import (
    Lark,
    Token,
    Tree,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)

from shardc import grammar
from shardc.lang.diagnostics import Diagnostics
from shardc.lang.input_limits import MAX_NESTING
from shardc.lang.numeric import NumberError, parse_decimal, parse_number
from shardc.lang.source import Source, Span

MAX_LENGTH = 2_000
"""Characters in one expectation."""
MARKER = re.compile(r"#[ \t]*expect[ \t]*:")
"""`# expect:` starts an expectation; the rest of the comment is its text."""
SYNTAX_NOTE = (
    "an expectation is a relation over the report's quantities (`comm_bytes == 0`, "
    "`T_comms <= T_math`), or `collectives == [AllGather_X(W)]`, optionally followed "
    "by `where` and conditions on sizes joined by `and` (docs/testing.md)"
)


# ---- the AST -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Num:
    text: str
    value: Decimal
    span: Span = field(default=Span(0, 0, 0, 0), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Name:
    name: str
    span: Span = field(default=Span(0, 0, 0, 0), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Neg:
    operand: Node
    span: Span = field(default=Span(0, 0, 0, 0), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class BinOp:
    op: str  # "+", "-", "*", "/", "**"
    left: Node
    right: Node
    span: Span = field(default=Span(0, 0, 0, 0), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Call:
    func: str
    args: tuple[Node, ...]
    span: Span = field(default=Span(0, 0, 0, 0), compare=False, repr=False)


Node = Num | Name | Neg | BinOp | Call


@dataclass(frozen=True, slots=True)
class Relation:
    """`a < b <= c`: `ops[i]` relates `operands[i]` and `operands[i + 1]`."""

    ops: tuple[str, ...]
    operands: tuple[Node, ...]
    span: Span = field(default=Span(0, 0, 0, 0), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Collective:
    """`AllGather_{X,Y}(W)`: the op, the subscript's entries as written, and the operand's
    text (`gelu(Tmp)`)."""

    op: str
    subscript: tuple[str, ...]
    operand: str
    span: Span = field(default=Span(0, 0, 0, 0), compare=False, repr=False)

    @property
    def text(self) -> str:
        sub = (
            self.subscript[0] if len(self.subscript) == 1 else "{" + ",".join(self.subscript) + "}"
        )
        return f"{self.op}_{sub}({self.operand})"


@dataclass(frozen=True, slots=True)
class Collectives:
    """`collectives == [...]` (`op` "==" or "!="), or one collective `in` / `not in` them."""

    op: Literal["==", "!=", "in", "not in"]
    items: tuple[Collective, ...]
    span: Span = field(default=Span(0, 0, 0, 0), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Found:
    """An expectation's text where it was found: `line` and `col` (1-based) of its first
    character; `statement` when it follows a statement on the same line."""

    source: Source
    line: int
    col: int
    text: str
    statement: bool


@dataclass(frozen=True, slots=True)
class Expectation:
    claim: Relation | Collectives
    where: tuple[Relation, ...]
    found: Found

    @property
    def text(self) -> str:
        return self.found.text

    @property
    def line(self) -> int:
        return self.found.line


# ---- finding them --------------------------------------------------------------------------
def _comment_start(line: str) -> int:
    """The index of the `#` that starts the line's comment (not one inside a `"..."` string),
    or -1."""
    inside = False
    for i, ch in enumerate(line):
        if ch == '"':
            inside = not inside
        elif ch == "#" and not inside:
            return i
    return -1


def find(source: Source) -> list[Found]:
    """Every `# expect:` comment of a program, in order."""
    out: list[Found] = []
    for number, line in enumerate(re.split(r"\r\n|\r|\n", source.text), start=1):
        if "expect" not in line:
            continue
        start = _comment_start(line)
        if start < 0:
            continue
        m = MARKER.match(line, start)
        if m is None:
            continue
        rest = line[m.end() :]
        stripped = rest.lstrip(" \t")
        col = m.end() + (len(rest) - len(stripped)) + 1
        out.append(Found(source, number, col, stripped.rstrip(), bool(line[:start].strip())))
    return out


# ---- parsing -------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(
        grammar.grammar_text("expect.lark"),
        parser="lalr",
        propagate_positions=True,
        maybe_placeholders=False,
    )


_SHOWN = {
    "COMPARE": "a comparison (==, !=, <, <=, >, >=)",
    "LISTOP": "'==' or '!='",
    "ADDOP": "'+' or '-'",
    "MULOP": "'*' or '/'",
    "POW": "'**'",
    "NAME": "a name",
    "NUMBER": "a number",
    "COLLECTIVE": "a collective such as AllGather_X(W)",
    "COLLECTIVES": "'collectives'",
    "WHERE": "'where'",
    "AND": "'and'",
    "IN": "'in'",
    "NOT": "'not'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "$END": "the end",
}


class ExpectError(ValueError):
    """An expectation that is not one: the message and the span to underline."""

    def __init__(self, message: str, span: Span, label: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.label = label


class _Parse:
    """Lark's tree to the AST, with spans in the source (Lark objects stay in this module)."""

    def __init__(self, found: Found) -> None:
        self.found = found

    def span(self, line_col: int, width: int) -> Span:
        return Span.point(self.found.line, self.found.col + line_col - 1, width)

    def tok_span(self, tok: Token) -> Span:
        return self.span(tok.column or 1, len(str(tok)))

    def tree_span(self, tree: Tree[Token]) -> Span:
        if tree.meta.empty:
            return self.span(1, 1)
        return self.span(tree.meta.column, max(1, tree.meta.end_column - tree.meta.column))

    def expectation(self, tree: Tree[Token]) -> Expectation:
        claim: Relation | Collectives | None = None
        where: tuple[Relation, ...] = ()
        for child in tree.children:
            if not isinstance(child, Tree):
                continue
            if child.data == "relation":
                claim = self.relation(child)
            elif child.data == "condition":
                where = tuple(self.relation(c) for c in child.children if isinstance(c, Tree))
            else:
                claim = self.collectives(child)
        assert claim is not None
        return Expectation(claim, where, self.found)

    def relation(self, tree: Tree[Token]) -> Relation:
        ops: list[str] = []
        operands: list[Node] = []
        for child in tree.children:
            if isinstance(child, Token):
                ops.append(str(child))
            else:
                operands.append(self.node(child))
        return Relation(tuple(ops), tuple(operands), self.tree_span(tree))

    def collectives(self, tree: Tree[Token]) -> Collectives:
        span = self.tree_span(tree)
        if tree.data == "list_claim":
            op = str(tree.children[1])
            items = [self.collective(c) for c in _subtrees(tree.children[2])]
            return Collectives("==" if op == "==" else "!=", tuple(items), span)
        item = self.collective(_subtrees(tree)[0])
        return Collectives("in" if tree.data == "member_claim" else "not in", (item,), span)

    def collective(self, tree: Tree[Token]) -> Collective:
        tok = tree.children[0]
        assert isinstance(tok, Token)
        op, _, sub = str(tok).partition("_")
        entries = tuple(s.strip() for s in sub[1:-1].split(",")) if sub.startswith("{") else (sub,)
        if not all(re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", s) for s in entries):
            raise ExpectError(
                f"the subscript of {op} names mesh axes: {str(tok)!r}",
                self.tok_span(tok),
                "expected `_X`, `_XY` or `_{X,Y}`",
            )
        return Collective(op, entries, _operand_text(tree.children[1]), self.tree_span(tree))

    def node(self, tree: Tree[Token] | Token) -> Node:
        if isinstance(tree, Token):  # a bare NUMBER or NAME is always wrapped by its rule
            raise ExpectError(f"unexpected {tree!s}", self.tok_span(tree))
        kids = tree.children
        match tree.data:
            case "number":
                tok = kids[0]
                assert isinstance(tok, Token)
                try:
                    parse_number(str(tok))  # finite as a float: no 1e400
                    return Num(str(tok), parse_decimal(str(tok)), self.tok_span(tok))
                except NumberError as exc:
                    raise ExpectError(str(exc), self.tok_span(tok)) from None
            case "name":
                tok = kids[0]
                assert isinstance(tok, Token)
                return Name(str(tok), self.tok_span(tok))
            case "signed":
                tok, operand = kids
                assert isinstance(tok, Token)
                inner = self.node(operand)
                return Neg(inner, self.tok_span(tok)) if str(tok) == "-" else inner
            case "binary":
                left, tok, right = kids
                assert isinstance(tok, Token)
                return BinOp(str(tok), self.node(left), self.node(right), self.tok_span(tok))
            case "call":
                tok = kids[0]
                assert isinstance(tok, Token)
                return Call(str(tok), tuple(self.node(k) for k in kids[1:]), self.tok_span(tok))
        raise ExpectError(f"unexpected {tree.data}", self.tree_span(tree))


def _subtrees(node: Tree[Token] | Token) -> list[Tree[Token]]:
    return [c for c in node.children if isinstance(c, Tree)] if isinstance(node, Tree) else []


def _operand_text(node: Tree[Token] | Token) -> str:
    if isinstance(node, Token):
        return str(node)
    names = [str(c) for c in node.children if isinstance(c, Token)]
    inner = _subtrees(node)
    if node.data == "operand_call":
        return f"{names[0]}({_operand_text(inner[0])})"
    return names[0]


def _depth(tree: Tree[Token]) -> int:
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        t, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in t.children if isinstance(c, Tree))
    return deepest


def _expected(names: set[str]) -> str:
    shown = sorted({_SHOWN.get(n, n) for n in names if not n.startswith("__")})
    return " or ".join(shown) if shown else "the end"


def _syntax_error(exc: UnexpectedInput, found: Found) -> ExpectError:
    text = found.text
    if isinstance(exc, UnexpectedCharacters):
        col = exc.column
        char = text[col - 1] if 0 < col <= len(text) else ""
        what = {
            ".": "'.' (no attribute access)",
            "'": "quote (no strings)",
            '"': "quote (no strings)",
            "[": "'[' (a list follows `collectives ==`)",
            "=": "'=' (compare with '==')",
        }.get(char, f"character {char!r}")
        # (the lexer's state lists terminals no parse could take here: none are named)
        return ExpectError(
            f"unexpected {what} in an expectation", Span.point(found.line, found.col + col - 1)
        )
    if isinstance(exc, UnexpectedEOF) or (
        isinstance(exc, UnexpectedToken) and exc.token.type == "$END"
    ):
        return ExpectError(
            "the expectation ends too early; expected " + _expected(set(exc.expected)),
            Span.point(found.line, found.col + len(text)),
        )
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    kind = {"NAME": "name", "NUMBER": "number"}.get(tok.type, "symbol")
    return ExpectError(
        f"unexpected {kind} {str(tok)!r} in an expectation; expected "
        + _expected(set(exc.expected)),
        Span.point(found.line, found.col + (tok.column or 1) - 1, len(str(tok))),
    )


def parse(found: Found, diags: Diagnostics) -> Expectation | None:
    """The expectation `found` holds; None after an E001 diagnostic in `diags`."""
    try:
        return _parse(found)
    except ExpectError as exc:
        diags.error("E001", exc.message, exc.span, exc.label, (SYNTAX_NOTE,))
        return None


def _parse(found: Found) -> Expectation:
    text = found.text
    if not text:
        raise ExpectError("empty expectation after `# expect:`", Span.point(found.line, found.col))
    if len(text) > MAX_LENGTH:
        raise ExpectError(
            f"an expectation is at most {MAX_LENGTH} characters, this one has {len(text)}",
            Span.point(found.line, found.col),
        )
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, found) from None
    if _depth(tree) > MAX_NESTING // 2:
        raise ExpectError(
            f"an expectation nested deeper than {MAX_NESTING // 2} levels",
            Span.point(found.line, found.col),
        )
    return _Parse(found).expectation(tree)


def parse_all(source: Source, diags: Diagnostics) -> list[Expectation]:
    """Every expectation of a program that parses; the others as diagnostics in `diags`."""
    out = []
    for f in find(source):
        e = parse(f, diags)
        if e is not None:
            out.append(e)
    return out


__all__ = [
    "BinOp",
    "Call",
    "Collective",
    "Collectives",
    "ExpectError",
    "Expectation",
    "Found",
    "Name",
    "Neg",
    "Node",
    "Num",
    "Relation",
    "find",
    "parse",
    "parse_all",
]
