"""The parser of a formula typed on the command line: `parse` (`grammar/expr.lark`, Lark's
errors rewritten as `ExprError`) into the AST of `shardc.driver.user_expr_ast`, within its limits.
`shardc.driver.user_expr` builds SymPy from the AST and is the public home of these names.
"""

from __future__ import annotations

from collections.abc import Iterable

from lark import Lark, Token, Transformer, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from shardc.driver.user_expr_ast import (
    ARITY,
    FUNCTIONS,
    MAX_EXPONENT,
    MAX_LENGTH,
    BinOp,
    Call,
    Compare,
    ExprError,
    Name,
    Neg,
    Node,
    Num,
)
from shardc.lang.input_limits import MAX_NESTING
from shardc.lang.numeric import NumberError, parse_decimal, parse_number
from shardc.passes.memo import USER_EXPR_PARSER, memoized


# ---- parsing ---------------------------------------------------------------------------------
@memoized(USER_EXPR_PARSER, lambda: "expr")
def _lark() -> Lark:
    from importlib.resources import files

    text = files("shardc.grammar").joinpath("expr.lark").read_text(encoding="utf-8")
    return Lark(text, parser="lalr", propagate_positions=True, maybe_placeholders=False)


_TOKEN = {"NAME": "name", "NUMBER": "number"}
_SHOWN = {
    "PLUS": "'+'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "POW": "'**'",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "COMPARE": "a comparison",
    "NAME": "a name",
    "NUMBER": "a number",
    "$END": "the end",
}


def _expected(names: Iterable[str]) -> str:
    shown = sorted({_SHOWN.get(n, n) for n in names})
    if {"a name", "a number"} <= set(shown):
        shown = ["a name", "a number", "'('"] if "'('" in shown else shown
        shown = [s for s in shown if s not in ("'+'", "'-'")] if "'('" in shown else shown
    return " or ".join(shown)


def _column(token: Token | None, text: str) -> int:
    if token is None or token.column is None:
        return len(text)
    return int(token.column) - 1


def _name(token: Token) -> str:
    name = str(token)
    if name.startswith("_") or "__" in name:
        raise ExprError(
            f"{name!r} is not allowed (no names starting with '_' or holding '__')",
            _column(token, ""),
        )
    return name


class _Build(Transformer):
    """Lark's tree to the AST (Lark objects stay in this module)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def number(self, items):
        (tok,) = items
        try:
            parse_number(str(tok))  # finite as a float: no 1e400
            return Num(parse_decimal(str(tok)), _column(tok, self.text))
        except NumberError as exc:
            raise ExprError(str(exc), _column(tok, self.text)) from None

    def name(self, items):
        (tok,) = items
        return Name(_name(tok), _column(tok, self.text))

    def negate(self, items):
        tok, operand = items
        return Neg(operand, _column(tok, self.text))

    def plus(self, items):
        return items[1]

    def group(self, items):
        return items[1]

    def args(self, items):
        return tuple(x for x in items if not isinstance(x, Token))

    def call(self, items):
        tok, _, args, _ = items
        func = _name(tok)
        col = _column(tok, self.text)
        if func not in FUNCTIONS:
            raise ExprError(
                f"unknown function {func!r}; a formula may call " + ", ".join(FUNCTIONS), col
            )
        lo, hi = ARITY[func]
        if not lo <= len(args) <= hi:
            raise ExprError(
                f"{func} takes {lo if lo == hi else f'{lo} or more'} argument"
                f"{'s' if hi > 1 else ''}, got {len(args)}",
                col,
            )
        return Call(func, args, col)

    def compare(self, items):
        left, tok, right = items
        return Compare(str(tok), left, right, _column(tok, self.text))

    def binary(self, items):
        left, tok, right = items
        if tok.type == "POW":
            _exponent(right, _column(tok, self.text))
        return BinOp(str(tok), left, right, _column(tok, self.text))


def _whole(node: Node) -> int | None:
    if isinstance(node, Num) and node.value == node.value.to_integral_value():
        return int(node.value) if abs(node.value) <= MAX_EXPONENT else None
    if isinstance(node, Neg):
        inner = _whole(node.operand)
        return None if inner is None else -inner
    return None


def _exponent(node: Node, column: int) -> None:
    """Refuse any exponent but a small literal whole number or ratio (`2`, `-1`, `1/2`)."""
    if _whole(node) is not None:
        return
    if isinstance(node, Neg):
        node = node.operand
    if (
        isinstance(node, BinOp)
        and node.op == "/"
        and _whole(node.left) is not None
        and (_whole(node.right) not in (None, 0))
    ):
        return
    raise ExprError(
        f"'**' takes a whole number or a ratio of whole numbers up to "
        f"{MAX_EXPONENT} as its exponent (B**2, X**(1/2))",
        column,
    )


def _depth(tree: Tree) -> tuple[int, Tree]:
    """The depth of a Lark tree (iteratively) and its deepest subtree."""
    deepest, where = 0, tree
    stack = [(tree, 1)]
    while stack:
        t, d = stack.pop()
        if d > deepest:
            deepest, where = d, t
        stack.extend((c, d + 1) for c in t.children if isinstance(c, Tree))
    return deepest, where


def parse(text: str) -> Node:
    """Parse a formula into the AST; `ExprError` (with a column) when it is not one.

    >>> parse("B/X")
    BinOp(op='/', left=Name(name='B'), right=Name(name='X'))
    >>> parse("B.subs")
    Traceback (most recent call last):
    ...
    shardc.driver.user_expr.ExprError: unexpected '.' (no attribute access); expected ...
    """
    if len(text) > MAX_LENGTH:
        raise ExprError(
            f"a formula is at most {MAX_LENGTH} characters, this one has {len(text)}", MAX_LENGTH
        )
    if not text.strip():
        raise ExprError("empty formula; expected a name, a number or '('", 0)
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, text) from None
    if isinstance(tree, Token):  # a single name or number
        tree = Tree("start", [tree])
    depth, where = _depth(tree)
    if depth > MAX_NESTING // 2:
        col = where.meta.column - 1 if not where.meta.empty else 0
        raise ExprError(f"formula nested deeper than {MAX_NESTING // 2} levels", col)
    try:
        out = _Build(text).transform(tree)
    except Exception as exc:  # lark wraps our errors in VisitError
        inner = getattr(exc, "orig_exc", exc)
        if isinstance(inner, ExprError):
            raise inner from None
        raise
    if isinstance(out, Tree):  # the "start" wrapper of a single token
        out = out.children[0]
    return out


def _syntax_error(exc: UnexpectedInput, text: str) -> ExprError:
    if isinstance(exc, UnexpectedCharacters):
        col = exc.column - 1
        char = text[col] if 0 <= col < len(text) else ""
        what = {
            ".": "'.' (no attribute access)",
            "[": "'[' (no subscripts)",
            "'": "quote (no strings)",
            '"': "quote (no strings)",
            ":": "':' (no lambdas or slices)",
        }.get(char, f"character {char!r}")
        return ExprError(f"unexpected {what}; expected " + _expected(exc.allowed or ()), col)
    if isinstance(exc, UnexpectedEOF) or (
        isinstance(exc, UnexpectedToken) and exc.token.type == "$END"
    ):
        expected = ["RPAR"] if "RPAR" in exc.expected else exc.expected
        return ExprError("unexpected end; expected " + _expected(expected), len(text))
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    return ExprError(
        f"unexpected {_TOKEN.get(tok.type, 'symbol')} {str(tok)!r}; expected "
        + _expected(exc.expected),
        _column(tok, text),
    )
