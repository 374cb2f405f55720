"""The nesting limit (MAX_NESTING) on a parsed tree: an expression, a repeat count or a stack of
`repeat` blocks nested deeper than it gets P012 at the first level past it, before any pass
recurses into it.
"""

from __future__ import annotations

from lark import Token, Tree

from shardc.lang.diagnostics import Diagnostic
from shardc.lang.input_limits import MAX_NESTING
from shardc.lang.parse_errors import error, token_span
from shardc.lang.source import Span

# Tree nodes that stack one expression (or count, or block) inside another, and the child whose
# token marks where: the operator of `a + b` and `a ·_J b`, the name of `f(a)`, the collective,
# the reduction (`softmax_{S}(a)`).
_NESTING = {
    "binary": 1,
    "contract": 1,
    "count_binary": 1,
    "call": 0,
    "collective": 0,
    "reduce": 0,
    "repeat_block": None,
}
_NESTING_NOTE = (
    f"an expression or a repeat count nests at most {MAX_NESTING} deep: each "
    "operator, call, reduction or collective inside another adds a level, and a "
    "chain such as A + A + ... adds one per operator; split it into several "
    "assignments"
)
_REPEAT_NOTE = f"`repeat` blocks nest at most {MAX_NESTING} deep"


def nesting_problem(tree: Tree[Token]) -> Diagnostic | None:
    """P012 where an expression or a `repeat` block first nests deeper than MAX_NESTING.

    An explicit stack, not recursion: the walk must survive what the transformer would not.
    """
    stack = [(tree, 0, 0)]  # (node, expression depth, repeat depth): two separate limits
    while stack:
        node, depth, blocks = stack.pop()
        kind = node.data
        if kind == "repeat_block":
            depth, blocks = 0, blocks + 1
        elif kind in _NESTING:
            depth += 1
        if depth > MAX_NESTING or blocks > MAX_NESTING:
            return _nesting_diagnostic(node, kind)
        for c in node.children:  # a loop, not a generator: this walk sees every node
            if isinstance(c, Tree):
                stack.append((c, depth, blocks))
    return None


def _nesting_diagnostic(node: Tree[Token], kind: str) -> Diagnostic:
    at = _NESTING[kind]
    tok = node.children[at] if at is not None else None
    if at is None and node.children and isinstance(node.children[0], Token):
        tok = node.children[0]  # the `repeat` keyword (every token stays in the tree)
    if isinstance(tok, Token):
        span = (
            token_span(tok)
            if at is not None
            else Span.point(tok.line or 1, tok.column or 1, len("repeat"))
        )
    else:
        span = Span.point(node.meta.line, node.meta.column, len("repeat"))
    what = "`repeat` blocks nest" if kind == "repeat_block" else "the expression nests"
    note = _REPEAT_NOTE if kind == "repeat_block" else _NESTING_NOTE
    return error(
        "P012", f"{what} more than {MAX_NESTING} deep", span, f"level {MAX_NESTING + 1}", (note,)
    )
