"""Parse .shard text into `shardc.lang.syntax.Program`; Lark trees and tokens never leave the
parser's modules (this one, `parse_errors`, `nesting`).

Syntax errors are rewritten in the language's own terms (P-codes) with a span
(`shardc.lang.parse_errors`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from lark import Lark, Token, Tree, UnexpectedInput

from shardc import grammar
from shardc.lang.diagnostics import Diagnostic, Diagnostics
from shardc.lang.input_limits import MAX_AXES_PER_DIM, MAX_MESH_AXES
from shardc.lang.layout import DimSharding, Layout
from shardc.lang.nesting import nesting_problem
from shardc.lang.numeric import MAX_INTEGER, MAX_NUMBER_CHARS, NumberError, parse_decimal
from shardc.lang.parse_errors import (
    error,
    not_whole,
    syntax_diagnostic,
    token_span,
)
from shardc.lang.send import SEND_NOTE, SendSyntaxError, parse_send
from shardc.lang.source import Source, Span
from shardc.lang.source_size import size_problem
from shardc.lang.syntax import (
    COLLECTIVE_KINDS,
    ArrayDecl,
    Assign,
    Backward,
    Binary,
    BinaryOp,
    Call,
    CollectiveCall,
    CollectiveKind,
    Contract,
    Count,
    CountTree,
    DimDecl,
    Expr,
    HardwareDecl,
    MeshAxis,
    MeshDecl,
    Program,
    Reduce,
    ReduceKind,
    Ref,
    Sized,
)


@lru_cache(maxsize=1)
def _lark() -> Lark:
    # Built once per process: constructing the LALR tables is the costliest step of start-up.
    # Every token stays in the tree (punctuation and keywords too) and positions are not
    # propagated by Lark: `_ToSyntax` takes a node's span from its first and last tokens,
    # only where it needs one (Lark's propagation was 40% of the parse of a large program).
    return Lark(
        grammar.grammar_text(),
        parser="lalr",
        keep_all_tokens=True,
        maybe_placeholders=False,
        cache=True,
    )


@lru_cache(maxsize=1)
def _kept() -> frozenset[str]:
    """The terminals a transformer method sees: the grammar's named terminals (not `_NL`, not
    the keywords and punctuation written as strings in the rules)."""
    names = re.findall(r"^([A-Z][A-Z0-9_]*)(?:\.\d+)?\s*:", grammar.grammar_text(), re.M)
    return frozenset(names)


# What the grammar's operator and head tokens (ADDOP, MULOP, COLLECTIVE, REDUCE) may spell, as the
# syntax tree's types: a token outside them means the grammar and the tree disagree, a bug.
_BINARY_OPS: dict[str, BinaryOp] = {"+": "+", "-": "-", "*": "*"}
_COLLECTIVES: dict[str, CollectiveKind] = {k: k for k in COLLECTIVE_KINDS}
_REDUCTIONS: dict[str, ReduceKind] = {"Sum": "Sum", "Max": "Max", "softmax": "softmax"}

_PARENS = frozenset({"atom", "count_atom"})
"""`( expr )` and `( count )`: with every token kept they are nodes of their own; the transform
looks through them, keeping the outermost parentheses as the inner node's container."""


def _edge(
    node: Tree[Token] | Token, first: bool, containers: dict[int, tuple[Token, Token]]
) -> Token | None:
    """The first (or last) token a node spans, its container's parenthesis where it has one
    (a parenthesized node's own first and last tokens are those parentheses too)."""
    i = 0 if first else -1
    while isinstance(node, Tree):
        box = containers.get(id(node))
        if box is not None:
            return box[i]
        kids = node.children
        if not kids:
            return None
        edge = kids[i]
        if len(kids) > 1 and isinstance(edge, Tree) and not edge.children:
            kids = [k for k in kids if not (isinstance(k, Tree) and not k.children)]
            if not kids:
                return None
        node = kids[i]
    return node


def _tree_span(node: Tree[Token], containers: dict[int, tuple[Token, Token]]) -> Span:
    """A node's span as Lark's propagated positions gave it: from the start of its first token
    (an opening parenthesis around it included) to the end of its last; zero when it has no
    token."""
    first = _edge(node, True, containers)
    last = _edge(node, False, containers)
    if first is None or last is None:
        return Span(0, 0, 0, 0)
    line, col, end_line, end_col = first.line, first.column, last.end_line, last.end_column
    assert line is not None and col is not None and end_line is not None and end_col is not None
    return Span(line, col, end_line, end_col)  # the lexer sets every token's position


def split_subscript(text: str) -> tuple[str, tuple[str, ...], int]:
    """Split `B_X` / `·_{N,H}` into (head, parts, column offset of the parts).

    >>> split_subscript("I_{data,model}")
    ('I', ('data', 'model'), 2)
    >>> split_subscript("B")
    ('B', (), 0)
    """
    head, sep, sub = text.partition("_")
    if not sep:
        return head, (), 0
    offset = len(head) + 1
    if sub.startswith("{"):
        inner = sub[1:-1]
        parts = tuple(p.strip() for p in inner.split(","))
        return head, parts, offset
    return head, (sub,), offset


def _size(tok: Token, what: str) -> int:
    """The value of a SIZE token (`4096`, `8_192`, `4Ki`, `1.5k`), read by
    `shardc.lang.numeric` as `--set` reads numbers; P006 for a value that is not whole (`1.5`),
    P011 past `MAX_INTEGER`. `what` names the size in the message ("dimension 'I'")."""
    text = str(tok)
    try:
        value = parse_decimal(text)
    except NumberError:
        if len(text) > MAX_NUMBER_CHARS and re.fullmatch(r"[0-9_]+", text):
            value = None  # hundreds of digits: larger than any size (P011 below)
        elif not re.search(r"[eE]\+?[0-9]", text):  # `1__0`, `1_`: `_` only between digits
            raise _SyntaxProblem(not_whole(what, text, token_span(tok))) from None
        value = None  # an exponent past 400: larger than any size
    if value is None or value > MAX_INTEGER:
        raise _SyntaxProblem(
            Diagnostic(
                "error",
                "P011",
                f"the number {_shown(text)} is larger than the limit 2**63 - 1",
                token_span(tok),
                "too large",
                (
                    "sizes, mesh axes and repeat counts are at most 2**63 - 1 "
                    "(9223372036854775807); leave a size out to keep it symbolic",
                ),
            )
        )
    if value != value.to_integral_value():
        raise _SyntaxProblem(not_whole(what, text, token_span(tok)))
    return int(value)


def _shown(text: str) -> str:
    """A literal as a message quotes it: plain digits without `_` or leading zeros, a long one
    cut to its first digits and its length."""
    if not re.fullmatch(r"[0-9_]+", text):
        return text if len(text) <= 30 else f"{text[:6]}... ({len(text)} characters)"
    digits = text.replace("_", "").lstrip("0") or "0"
    return digits if len(digits) <= 30 else f"{digits[:6]}... ({len(digits)} digits)"


_CountParts = tuple[str, int, tuple[str, ...], CountTree]
"""A `repeat` count while it is built: (text, precedence, names, tree); precedence 0 sum,
1 product, 2 atom."""
_Link = tuple[Literal["link"], str, tuple[str, ...], Span]
"""`@ici(x, y)` on a mesh axis: the link, its physical axes, where it is written."""
_Flag = tuple[Literal["flag"], str, Span]
"""`wrap` / `nowrap` on a mesh axis."""
_Unreduced = tuple[Literal["unreduced"], tuple[str, ...], Span]
"""`{U_X}`: the mesh axes holding partial sums."""


@dataclass(frozen=True, slots=True)
class _Repeat:
    """A parsed `repeat` block, flattened into its parent by `_ToSyntax`."""

    count: Count
    body: tuple[Any, ...]
    repeats: tuple[Count, ...]


def _flatten(items: list[Any]) -> tuple[list[Any], list[Count]]:
    statements: list[Any] = []
    repeats: list[Count] = []
    for item in items:
        if isinstance(item, _Repeat):
            statements.extend(item.body)
            repeats.extend(item.repeats)
        else:
            statements.append(item)
    return statements, repeats


class _ToSyntax:
    """Lark tree to syntax objects, children first, left to right: each method gets its node
    (for its span, `_span`) and the children a default Lark tree would have (named tokens and
    transformed subtrees). A walk of our own, not Lark's `Transformer`: a call per node instead
    of a wrapper, a generator and a `meta` object (a third of the parse of a large program)."""

    def __init__(self) -> None:
        self._containers: dict[int, tuple[Token, Token]] = {}
        """Per parenthesized node (by id): its outermost parentheses, the ends of its span."""
        self._kept = _kept()
        self._renames: dict[int, tuple[tuple[str, str, Span], ...]] = {}
        """Per layout object (by id): the renames it was written with (`T->S`), with spans."""
        self._rules = {name: getattr(self, name) for name in _RULES}

    def transform(self, node: Tree[Token]) -> Any:
        """The syntax object for `node`; recursion is bounded by the nesting limit, which
        `nesting_problem` checked first (a level of the tree is one call here)."""
        kept, rules = self._kept, self._rules
        items: list[Any] = []
        for c in node.children:
            if isinstance(c, Tree) and c.data in _PARENS and len(c.children) == 3:
                c = self._inside(c)
            if isinstance(c, Tree):
                items.append(self.transform(c))
            elif c.type in kept:
                items.append(c)
        return rules[node.data](node, items)

    def _inside(self, parens: Tree[Token]) -> Tree[Token] | Token:
        """The node inside `( ... )`, however many pairs deep (a loop: 5,000 nested
        parentheses are a program too), with the outermost pair recorded as its container."""
        inner: Tree[Token] | Token = parens
        while isinstance(inner, Tree) and inner.data in _PARENS and len(inner.children) == 3:
            inner = inner.children[1]
        if isinstance(inner, Tree):
            opening, closing = parens.children[0], parens.children[2]
            assert isinstance(opening, Token) and isinstance(closing, Token)
            self._containers[id(inner)] = (opening, closing)
        return inner

    def _span(self, node: Tree[Token]) -> Span:
        return _tree_span(node, self._containers)

    def start(self, node: Tree[Token], items: list[Any]) -> Program:
        statements, repeats = _flatten(items)
        return Program(tuple(statements), tuple(repeats))

    # `repeat COUNT { ... }`: a count is built as (text, precedence, names, tree); precedence
    # 0 sum, 1 product, 2 atom, so `(M + P) * 2` keeps its parentheses and `M + P - 1` needs none.
    def count_name(self, node: Tree[Token], items: list[Any]) -> _CountParts:
        return (str(items[0]), 2, (str(items[0]),), str(items[0]))

    def count_int(self, node: Tree[Token], items: list[Any]) -> _CountParts:
        n = _size(items[0], "repeat count")
        return (str(n), 2, (), n)

    def count_binary(self, node: Tree[Token], items: list[Any]) -> _CountParts:
        (lt, lp, ln, ltree), op, (rt, rp, rn, rtree) = items
        prec = 0 if str(op) in "+-" else 1
        if lp < prec:
            lt = f"({lt})"
        if rp <= prec and not (prec == 1 and rp == 1):
            rt = f"({rt})"
        return (f"{lt} {op} {rt}", prec, ln + rn, (str(op), ltree, rtree))

    def count(self, node: Tree[Token], items: list[Any]) -> Count:
        text, _, names, tree = items[0]
        span = self._span(node)
        return Count(text, tuple(dict.fromkeys(names)), span.line, tree, span)

    def repeat_block(self, node: Tree[Token], items: list[Any]) -> _Repeat:
        count, body = items[0], items[1:]
        statements, repeats = _flatten(body)
        statements = [dataclasses.replace(s, times=(count, *s.times)) for s in statements]
        return _Repeat(count, tuple(statements), (count, *repeats))

    def dim_size(self, node: Tree[Token], items: list[Any]) -> Sized:
        name = items[0]
        size = _size(items[1], f"size of dimension {str(name)!r}") if len(items) > 1 else None
        return Sized(str(name), size, token_span(name))

    def link(self, node: Tree[Token], items: list[Any]) -> _Link:
        return ("link", str(items[0]), tuple(str(t) for t in items[1:]), self._span(node))

    def wrap_flag(self, node: Tree[Token], items: list[Any]) -> _Flag:
        return ("flag", str(items[0]), token_span(items[0]))

    def mesh_axis(self, node: Tree[Token], items: list[Any]) -> MeshAxis:
        name = items[0]
        size = None
        link, physical, flag = None, (), None
        attr_span = Span(0, 0, 0, 0)
        for item in items[1:]:
            if isinstance(item, Token):
                size = _size(item, f"size of mesh axis {str(name)!r}")
            elif item[0] == "link":
                link, physical, attr_span = item[1], item[2], item[3]
            else:
                flag = item[1]
                if attr_span.line == 0:
                    attr_span = item[2]
        wrap = {"wrap": True, "nowrap": False}.get(flag) if flag else None
        return MeshAxis(str(name), size, link, physical, wrap, token_span(name), attr_span, flag)

    def mesh_decl(self, node: Tree[Token], items: list[Any]) -> MeshDecl:
        if len(items) > MAX_MESH_AXES:
            raise _SyntaxProblem(
                error(
                    "S011",
                    f"the mesh has {len(items)} axes, more than the limit of {MAX_MESH_AXES}",
                    items[MAX_MESH_AXES].span,
                    f"axis {MAX_MESH_AXES + 1}",
                    (
                        f"a mesh has at most {MAX_MESH_AXES} axes; merge axes that always shard "
                        "together",
                    ),
                )
            )
        return MeshDecl(tuple(items), self._span(node))

    def dim_decl(self, node: Tree[Token], items: list[Any]) -> DimDecl:
        return DimDecl(tuple(items), self._span(node))

    def hardware_decl(self, node: Tree[Token], items: list[Any]) -> HardwareDecl:
        text = str(items[0])
        if text.startswith('"'):
            text = text[1:-1]
        return HardwareDecl(text, self._span(node))

    def layout(self, node: Tree[Token], items: list[Any]) -> Layout:
        dims = []
        renames = []
        for tok in items:
            if tok.type == "RENAME":
                whole = token_span(tok)
                old, tok = _split_rename(tok)
                renames.append((old, str(tok).split("_", 1)[0], whole))
            head, parts, offset = _checked_subscript(tok, "layout")
            if len(parts) > MAX_AXES_PER_DIM:
                sp = token_span(tok)
                raise _SyntaxProblem(
                    error(
                        "S012",
                        f"dimension {head!r} is sharded over {len(parts)} mesh axes, more "
                        f"than the limit of {MAX_AXES_PER_DIM}",
                        Span(sp.line, sp.col + offset, sp.end_line, sp.end_col),
                        "too many axes",
                        (
                            f"one dimension is sharded over at most {MAX_AXES_PER_DIM} mesh axes; "
                            "merge axes that always shard together",
                        ),
                    )
                )
            dims.append(DimSharding(head, parts, token_span(tok)))
        layout = Layout(tuple(dims))
        if renames:
            self._renames[id(layout)] = tuple(renames)
        return layout

    def _no_renames(self, layout: Layout | None, what: str) -> None:
        """S013: a rename outside a use of an array (a declaration or a left-hand side)."""
        if layout is not None and id(layout) in self._renames:
            old, new, span = self._renames[id(layout)][0]
            raise _SyntaxProblem(
                error(
                    "S013",
                    f"{what} cannot rename a dimension ({old}->{new})",
                    span,
                    "a rename here",
                    (
                        f"rename where the array is read: `{old}->{new}` in "
                        "`In[B, T->S, D]` on the right of `=`",
                    ),
                )
            )

    def unreduced(self, node: Tree[Token], items: list[Any]) -> _Unreduced:
        tok = items[0]
        _, parts, _ = _checked_subscript(tok, "unreduced")
        return ("unreduced", parts, token_span(tok))

    def array_decl(self, node: Tree[Token], items: list[Any]) -> ArrayDecl:
        name, dtype, layout = items[0], items[1], items[2]
        self._no_renames(layout, "a declaration")
        if len(items) > 3:
            layout = Layout(layout.dims, _unreduced_set(items[3]))
        return ArrayDecl(str(name), str(dtype), layout, token_span(name), token_span(dtype))

    def param_decl(self, node: Tree[Token], items: list[Any]) -> ArrayDecl:
        name, dtype, layout = items[0], items[1], items[2]
        self._no_renames(layout, "a declaration")
        return ArrayDecl(
            str(name), str(dtype), layout, token_span(name), token_span(dtype), param=True
        )

    def backward(self, node: Tree[Token], items: list[Any]) -> Backward:
        return Backward(self._span(node))

    def assign(self, node: Tree[Token], items: list[Any]) -> Assign:
        name = items[0]
        layout = None
        rest = items[1:]
        if rest and isinstance(rest[0], Layout):
            layout = rest[0]
            self._no_renames(layout, "a left-hand side")
            rest = rest[1:]
            if rest and isinstance(rest[0], tuple):
                layout = Layout(layout.dims, _unreduced_set(rest[0]))
                rest = rest[1:]
        return Assign(str(name), layout, rest[0], self._span(node), token_span(name))

    def ref(self, node: Tree[Token], items: list[Any]) -> Ref:
        name = items[0]
        layout = None
        renames: tuple[tuple[str, str], ...] = ()
        if len(items) > 1:
            layout = items[1]
            renames = tuple((a, b) for a, b, _ in self._renames.get(id(layout), ()))
            if len(items) > 2:
                layout = Layout(layout.dims, _unreduced_set(items[2]))
        return Ref(str(name), layout, self._span(node), renames)

    def contract(self, node: Tree[Token], items: list[Any]) -> Contract:
        lhs, tok, rhs = items
        _, parts, offset = _checked_subscript(tok, "contraction")
        sp = token_span(tok)
        dims_span = Span(sp.line, sp.col + offset, sp.end_line, sp.end_col)
        return Contract(lhs, rhs, parts, self._span(node), dims_span)

    def binary(self, node: Tree[Token], items: list[Any]) -> Binary:
        lhs, op, rhs = items
        return Binary(_BINARY_OPS[str(op)], lhs, rhs, self._span(node))

    def call(self, node: Tree[Token], items: list[Any]) -> Call:
        return Call(str(items[0]), tuple(items[1:]), self._span(node))

    def collective(self, node: Tree[Token], items: list[Any]) -> CollectiveCall:
        tok, arg = items
        kind, parts, offset = _checked_subscript(tok, "collective")
        sp = token_span(tok)
        sub_span = Span(sp.line, sp.col + offset, sp.end_line, sp.end_col)
        if kind == "Send":
            return _send_call(tok, arg, self._span(node), sub_span)
        if kind in ("ReduceScatter", "AllToAll") and len(parts) >= 2:
            axes, dim = parts[:-1], parts[-1]
        else:
            axes, dim = parts, None
        return CollectiveCall(_COLLECTIVES[kind], tuple(axes), dim, arg, self._span(node), sub_span)

    def reduce(self, node: Tree[Token], items: list[Any]) -> Reduce:
        tok, arg = items
        kind, parts, offset = _checked_subscript(tok, "reduction")
        sp = token_span(tok)
        return Reduce(
            _REDUCTIONS[kind],
            tuple(parts),
            arg,
            self._span(node),
            Span(sp.line, sp.col + offset, sp.end_line, sp.end_col),
        )


_RULES = (
    "start",
    "count_name",
    "count_int",
    "count_binary",
    "count",
    "repeat_block",
    "dim_size",
    "link",
    "wrap_flag",
    "mesh_axis",
    "mesh_decl",
    "dim_decl",
    "hardware_decl",
    "layout",
    "unreduced",
    "array_decl",
    "param_decl",
    "backward",
    "assign",
    "ref",
    "contract",
    "binary",
    "call",
    "collective",
    "reduce",
)
"""The grammar's rules as the parser leaves them (`atom` and `count_atom` looked through): one
`_ToSyntax` method each."""


def _send_call(tok: Token, arg: Expr, span: Span, sub_span: Span) -> CollectiveCall:
    """`Send_{X: 0->3}(A)` / `Send_{P: +1}(A)`; C011 for an entry that is neither form."""
    sp = token_span(tok)
    moves = parse_send(str(tok))
    if isinstance(moves, SendSyntaxError):
        raise _SyntaxProblem(
            Diagnostic(
                "error",
                "C011",
                moves.message,
                sp.shifted(moves.offset, moves.width),
                moves.label,
                (SEND_NOTE,),
            )
        )
    moves = tuple(
        dataclasses.replace(m, span=sp.shifted(m.span.col, m.span.end_col - m.span.col))
        for m in moves
    )
    return CollectiveCall("Send", tuple(m.axis for m in moves), None, arg, span, sub_span, moves)


def _unreduced_set(item: _Unreduced) -> frozenset[str]:
    return frozenset(item[1])


class _SyntaxProblem(Exception):
    """Raised inside the transformer for a problem the grammar lets through (`I_{}`)."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


_SUBSCRIPT_EXAMPLES = {
    "layout": (
        "mesh axes, as in I_X or I_{X,Y}",
        "write the dimension alone (I) to leave it unsharded",
    ),
    "unreduced": (
        "the mesh axes holding partial sums, as in {U_X}",
        "leave out `{U_...}` when the array holds no partial sums",
    ),
    "contraction": (
        "the dimensions to sum over, as in ·_J or ·_{N,H}",
        "contractions are written A ·_J B; several dims as A ·_{N,H} B",
    ),
    "collective": (
        "mesh axes, as in AllGather_X or ReduceScatter_{X,K}",
        "a collective names the mesh axes it works over",
    ),
    "reduction": (
        "the dimensions to reduce over, as in Sum_D or softmax_{S}",
        "a reduction names the dimensions it reduces: Sum_{D}(A), softmax_{S}(A)",
    ),
}


_ARROW = re.compile(r"[ \t]*(->|→)[ \t]*")


def _split_rename(tok: Token) -> tuple[str, Token]:
    """`T->S_X` into the old name and a token for `S_X` at its own column."""
    text = str(tok)
    m = _ARROW.search(text)
    assert m is not None  # the RENAME terminal has an arrow
    rest = Token.new_borrow_pos("DIMSPEC", text[m.end() :], tok)
    rest.column = (tok.column or 1) + m.end()
    return text[: m.start()], rest


def _checked_subscript(tok: Token, what: str) -> tuple[str, tuple[str, ...], int]:
    """`split_subscript`, reporting P008 for an empty subscript or an empty entry in one."""
    text = str(tok)
    head, parts, offset = split_subscript(text)
    if parts and any(not p for p in parts):
        sp = token_span(tok)
        expected, note = _SUBSCRIPT_EXAMPLES[what]
        problem = "empty subscript in" if not any(parts) else "empty entry in the subscript of"
        raise _SyntaxProblem(
            Diagnostic(
                "error",
                "P008",
                f"{problem} {text!r}",
                Span(sp.line, sp.col + offset - 1, sp.end_line, sp.end_col),
                f"expected {expected}",
                (note,),
            )
        )
    return head, parts, offset


def parse(source: Source, diagnostics: Diagnostics) -> Program | None:
    """Parse `source`; on a syntax error report one P-diagnostic and return None."""
    # Lines end at `\n`, `\r\n` or a lone `\r`, as `Source.line_text` splits them and as
    # Python's universal newlines read a file; other separators (U+2028, form feed) are text.
    text = _NEWLINES.sub("\n", source.text) if "\r" in source.text else source.text
    if text.startswith("\ufeff"):
        text = " " + text[1:]  # a byte-order mark: blank it, keeping every column in place
    found = size_problem(text)
    if found is not None:
        diagnostics.items.append(found)
        return None
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as exc:
        diagnostics.items.append(syntax_diagnostic(exc, source))
        return None
    found = nesting_problem(tree)
    if found is not None:
        diagnostics.items.append(found)
        return None
    try:
        program = _ToSyntax().transform(tree)
    except _SyntaxProblem as exc:
        diagnostics.items.append(exc.diagnostic)
        return None
    assert isinstance(program, Program)  # the grammar's start rule
    return program


_NEWLINES = re.compile(r"\r\n?")
