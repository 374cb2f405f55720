"""Parse .shard text into `shardc.lang.syntax.Program`; Lark trees and tokens never leave this module.

Syntax errors are rewritten in the language's own terms (P-codes) with a span.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import lru_cache

from lark import (
    Lark,
    Token,
    Transformer,
    Tree,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    v_args,
)
from lark.exceptions import VisitError

from shardc import grammar
from shardc.lang.diagnostics import Diagnostic, Diagnostics
from shardc.lang.layout import DimSharding, Layout
from shardc.lang.limits import MAX_AXES_PER_DIM, MAX_MESH_AXES, MAX_NESTING
from shardc.lang.numeric import MAX_INTEGER, SIZE_PATTERN, NumberError, parse_decimal
from shardc.lang.send import SEND_NOTE, SendSyntaxError, parse_send
from shardc.lang.size_limits import size_problem
from shardc.lang.source import Source, Span
from shardc.lang.syntax import (
    ArrayDecl,
    Assign,
    Backward,
    Binary,
    Call,
    CollectiveCall,
    Contract,
    Count,
    DimDecl,
    HardwareDecl,
    MeshAxis,
    MeshDecl,
    Program,
    Ref,
    Sized,
)


@lru_cache(maxsize=1)
def _lark() -> Lark:
    # Built once per process: constructing the LALR tables is the costliest step of start-up.
    return Lark(grammar.grammar_text(), parser="lalr", propagate_positions=True,
                maybe_placeholders=False, cache=True)


def _span(tok: Token) -> Span:
    # Tokens from the parser always carry positions (propagate_positions=True).
    line, col = tok.line or 1, tok.column or 1
    return Span(line, col, tok.end_line or line, tok.end_column or col + 1)


def _tree_span(meta) -> Span:
    if getattr(meta, "empty", True):
        return Span(0, 0, 0, 0)
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


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
        if not re.search(r"[eE]\+?[0-9]", text):  # `1__0`, `1_`: `_` only between digits
            raise _SyntaxProblem(_not_whole(what, text, _span(tok))) from None
        value = None  # an exponent past 400: larger than any size
    if value is None or value > MAX_INTEGER:
        raise _SyntaxProblem(Diagnostic(
            "error", "P011", f"the number {_shown(text)} is larger than the limit 2**63 - 1",
            _span(tok), "too large",
            ("sizes, mesh axes and repeat counts are at most 2**63 - 1 "
             "(9223372036854775807); leave a size out to keep it symbolic",)))
    if value != value.to_integral_value():
        raise _SyntaxProblem(_not_whole(what, text, _span(tok)))
    return int(value)


def _shown(text: str) -> str:
    """A literal as a message quotes it: plain digits without `_` or leading zeros, a long one
    cut to its first digits and its length."""
    if not re.fullmatch(r"[0-9_]+", text):
        return text if len(text) <= 30 else f"{text[:6]}... ({len(text)} characters)"
    digits = text.replace("_", "").lstrip("0") or "0"
    return digits if len(digits) <= 30 else f"{digits[:6]}... ({len(digits)} digits)"


def _not_whole(what: str, value: str, span: Span) -> Diagnostic:
    """P006: a size, mesh axis or repeat count that is not a positive whole number."""
    return _error("P006", f"the {what} is not a positive whole number: {value!r}", span,
                  "expected a whole number", (_SIZE_NOTE,))


@dataclass(frozen=True, slots=True)
class _Repeat:
    """A parsed `repeat` block, flattened into its parent by `_ToSyntax`."""

    count: Count
    body: tuple
    repeats: tuple[Count, ...]


def _flatten(items) -> tuple[list, list[Count]]:
    statements: list = []
    repeats: list[Count] = []
    for item in items:
        if isinstance(item, _Repeat):
            statements.extend(item.body)
            repeats.extend(item.repeats)
        else:
            statements.append(item)
    return statements, repeats


@v_args(meta=True)
class _ToSyntax(Transformer):
    def start(self, meta, items):
        statements, repeats = _flatten(items)
        return Program(tuple(statements), tuple(repeats))

    # `repeat COUNT { ... }`: a count is built as (text, precedence, names, tree); precedence
    # 0 sum, 1 product, 2 atom, so `(M + P) * 2` keeps its parentheses and `M + P - 1` needs none.
    def count_name(self, meta, items):
        return (str(items[0]), 2, (str(items[0]),), str(items[0]))

    def count_int(self, meta, items):
        n = _size(items[0], "repeat count")
        return (str(n), 2, (), n)

    def count_binary(self, meta, items):
        (lt, lp, ln, ltree), op, (rt, rp, rn, rtree) = items
        prec = 0 if str(op) in "+-" else 1
        if lp < prec:
            lt = f"({lt})"
        if rp <= prec and not (prec == 1 and rp == 1):
            rt = f"({rt})"
        return (f"{lt} {op} {rt}", prec, ln + rn, (str(op), ltree, rtree))

    def count(self, meta, items):
        text, _, names, tree = items[0]
        return Count(text, tuple(dict.fromkeys(names)), meta.line, tree, _tree_span(meta))

    def repeat_block(self, meta, items):
        count, body = items[0], items[1:]
        statements, repeats = _flatten(body)
        statements = [dataclasses.replace(s, times=(count, *s.times)) for s in statements]
        return _Repeat(count, tuple(statements), (count, *repeats))

    def dim_size(self, meta, items):
        name = items[0]
        size = _size(items[1], f"size of dimension {str(name)!r}") if len(items) > 1 else None
        return Sized(str(name), size, _span(name))

    def link(self, meta, items):
        return ("link", str(items[0]), tuple(str(t) for t in items[1:]), _tree_span(meta))

    def wrap_flag(self, meta, items):
        return ("flag", str(items[0]), _span(items[0]))

    def mesh_axis(self, meta, items):
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
        return MeshAxis(str(name), size, link, physical, wrap, _span(name), attr_span, flag)

    def mesh_decl(self, meta, items):
        if len(items) > MAX_MESH_AXES:
            raise _SyntaxProblem(_error(
                "S011", f"the mesh has {len(items)} axes, more than the limit of {MAX_MESH_AXES}",
                items[MAX_MESH_AXES].span, f"axis {MAX_MESH_AXES + 1}",
                (f"a mesh has at most {MAX_MESH_AXES} axes; merge axes that always shard "
                 "together",)))
        return MeshDecl(tuple(items), _tree_span(meta))

    def dim_decl(self, meta, items):
        return DimDecl(tuple(items), _tree_span(meta))

    def hardware_decl(self, meta, items):
        text = str(items[0])
        if text.startswith('"'):
            text = text[1:-1]
        return HardwareDecl(text, _tree_span(meta))

    def layout(self, meta, items):
        dims = []
        for tok in items:
            head, parts, offset = _checked_subscript(tok, "layout")
            if len(parts) > MAX_AXES_PER_DIM:
                sp = _span(tok)
                raise _SyntaxProblem(_error(
                    "S012", f"dimension {head!r} is sharded over {len(parts)} mesh axes, more "
                    f"than the limit of {MAX_AXES_PER_DIM}",
                    Span(sp.line, sp.col + offset, sp.end_line, sp.end_col), "too many axes",
                    (f"one dimension is sharded over at most {MAX_AXES_PER_DIM} mesh axes; "
                     "merge axes that always shard together",)))
            dims.append(DimSharding(head, parts, _span(tok)))
        return Layout(tuple(dims))

    def unreduced(self, meta, items):
        tok = items[0]
        _, parts, _ = _checked_subscript(tok, "unreduced")
        return ("unreduced", parts, _span(tok))

    def array_decl(self, meta, items):
        name, dtype, layout = items[0], items[1], items[2]
        if len(items) > 3:
            layout = Layout(layout.dims, _unreduced_set(items[3]))
        return ArrayDecl(str(name), str(dtype), layout, _span(name), _span(dtype))

    def param_decl(self, meta, items):
        name, dtype, layout = items[0], items[1], items[2]
        return ArrayDecl(str(name), str(dtype), layout, _span(name), _span(dtype), param=True)

    def backward(self, meta, items):
        return Backward(_tree_span(meta))

    def assign(self, meta, items):
        name = items[0]
        layout = None
        rest = items[1:]
        if rest and isinstance(rest[0], Layout):
            layout = rest[0]
            rest = rest[1:]
            if rest and isinstance(rest[0], tuple):
                layout = Layout(layout.dims, _unreduced_set(rest[0]))
                rest = rest[1:]
        return Assign(str(name), layout, rest[0], _tree_span(meta), _span(name))

    def ref(self, meta, items):
        name = items[0]
        layout = None
        if len(items) > 1:
            layout = items[1]
            if len(items) > 2:
                layout = Layout(layout.dims, _unreduced_set(items[2]))
        return Ref(str(name), layout, _tree_span(meta))

    def contract(self, meta, items):
        lhs, tok, rhs = items
        _, parts, offset = _checked_subscript(tok, "contraction")
        sp = _span(tok)
        dims_span = Span(sp.line, sp.col + offset, sp.end_line, sp.end_col)
        return Contract(lhs, rhs, parts, _tree_span(meta), dims_span)

    def binary(self, meta, items):
        lhs, op, rhs = items
        return Binary(str(op), lhs, rhs, _tree_span(meta))

    def call(self, meta, items):
        return Call(str(items[0]), tuple(items[1:]), _tree_span(meta))

    def collective(self, meta, items):
        tok, arg = items
        kind, parts, offset = _checked_subscript(tok, "collective")
        sp = _span(tok)
        sub_span = Span(sp.line, sp.col + offset, sp.end_line, sp.end_col)
        if kind == "Send":
            return _send_call(tok, arg, _tree_span(meta), sub_span)
        if kind in ("ReduceScatter", "AllToAll") and len(parts) >= 2:
            axes, dim = parts[:-1], parts[-1]
        else:
            axes, dim = parts, None
        return CollectiveCall(kind, tuple(axes), dim, arg, _tree_span(meta), sub_span)


def _send_call(tok: Token, arg, span: Span, sub_span: Span) -> CollectiveCall:
    """`Send_{X: 0->3}(A)` / `Send_{P: +1}(A)`; C011 for an entry that is neither form."""
    sp = _span(tok)
    moves = parse_send(str(tok))
    if isinstance(moves, SendSyntaxError):
        raise _SyntaxProblem(Diagnostic(
            "error", "C011", moves.message, sp.shifted(moves.offset, moves.width), moves.label,
            (SEND_NOTE,)))
    moves = tuple(dataclasses.replace(m, span=sp.shifted(m.span.col, m.span.end_col - m.span.col))
                  for m in moves)
    return CollectiveCall("Send", tuple(m.axis for m in moves), None, arg, span, sub_span,
                          moves)


def _unreduced_set(item) -> frozenset[str]:
    return frozenset(item[1])


class _SyntaxProblem(Exception):
    """Raised inside the transformer for a problem the grammar lets through (`I_{}`)."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


_SUBSCRIPT_EXAMPLES = {
    "layout": ("mesh axes, as in I_X or I_{X,Y}", "write the dimension alone (I) to leave it unsharded"),
    "unreduced": ("the mesh axes holding partial sums, as in {U_X}",
                  "leave out `{U_...}` when the array holds no partial sums"),
    "contraction": ("the dimensions to sum over, as in ·_J or ·_{N,H}",
                    "contractions are written A ·_J B; several dims as A ·_{N,H} B"),
    "collective": ("mesh axes, as in AllGather_X or ReduceScatter_{X,K}",
                   "a collective names the mesh axes it works over"),
}


def _checked_subscript(tok: Token, what: str) -> tuple[str, tuple[str, ...], int]:
    """`split_subscript`, reporting P008 for an empty subscript or an empty entry in one."""
    text = str(tok)
    head, parts, offset = split_subscript(text)
    if parts and any(not p for p in parts):
        sp = _span(tok)
        expected, note = _SUBSCRIPT_EXAMPLES[what]
        problem = "empty subscript in" if not any(parts) else "empty entry in the subscript of"
        raise _SyntaxProblem(Diagnostic(
            "error", "P008", f"{problem} {text!r}",
            Span(sp.line, sp.col + offset - 1, sp.end_line, sp.end_col),
            f"expected {expected}", (note,)))
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
        diagnostics.items.append(_syntax_diagnostic(exc, source))
        return None
    found = _nesting_problem(tree)
    if found is not None:
        diagnostics.items.append(found)
        return None
    try:
        return _ToSyntax().transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, _SyntaxProblem):
            diagnostics.items.append(exc.orig_exc.diagnostic)
            return None
        raise


_NEWLINES = re.compile(r"\r\n?")
# Tree nodes that stack one expression (or count, or block) inside another, and the child whose
# token marks where: the operator of `a + b` and `a ·_J b`, the name of `f(a)`, the collective.
_NESTING = {"binary": 1, "contract": 1, "count_binary": 1, "call": 0, "collective": 0,
            "repeat_block": None}
_NESTING_NOTE = (f"an expression or a repeat count nests at most {MAX_NESTING} deep: each "
                 "operator, call or collective inside another adds a level, and a chain such as "
                 "A + A + ... adds one per operator; split it into several assignments")
_REPEAT_NOTE = f"`repeat` blocks nest at most {MAX_NESTING} deep"


def _nesting_problem(tree: Tree) -> Diagnostic | None:
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
        stack.extend((c, depth, blocks) for c in node.children if isinstance(c, Tree))
    return None


def _nesting_diagnostic(node: Tree, kind: str) -> Diagnostic:
    at = _NESTING[kind]
    tok = node.children[at] if at is not None else None
    if isinstance(tok, Token):
        span = _span(tok)
    else:
        span = Span.point(node.meta.line, node.meta.column, len("repeat"))
    what = "`repeat` blocks nest" if kind == "repeat_block" else "the expression nests"
    note = _REPEAT_NOTE if kind == "repeat_block" else _NESTING_NOTE
    return _error("P012", f"{what} more than {MAX_NESTING} deep", span,
                  f"level {MAX_NESTING + 1}", (note,))


# ---- syntax errors in the language's terms --------------------------------------------------
#
# Lark reports an unexpected token or character and the terminals it would have accepted. The
# rewriting below looks at the statement around the error to name the likely mistake:
#   P001 an unexpected character        P002 a statement that ends too early (an open bracket)
#   P003 `·` without its dimensions     P004 a misplaced `_`
#   P005 an unexpected token: a missing `=`, `:`, `,` or operator, a `)` that closes nothing
#   P006 a size that is not a whole number      P007 a keyword used as a name
#   P008 an empty subscript (`I_`, `I_{}`)      P009 an unterminated string
#   P010 a misplaced `repeat` block part (no count; `mesh` or `backward` inside one)

_KEYWORDS = ("mesh", "dim", "hardware", "param", "backward", "repeat")
_KEYWORD_TOKENS = {k.upper() for k in _KEYWORDS}
_END = {"_NL", "$END", "SEMICOLON"}
_EXPR_START = {"NAME", "COLLECTIVE", "LPAR"}
_OPERATORS = {"ADDOP", "MULOP", "CONTRACT"}
_PUNCTUATION = {"EQUAL": "`=`", "COLON": "`:`", "LSQB": "`[`", "LBRACE": "`{`", "COMMA": "`,`",
                "RSQB": "`]`", "RBRACE": "`}`", "LPAR": "`(`", "RPAR": "`)`"}
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_OPENERS = {v: k for k, v in _CLOSERS.items()}
_CONFUSABLES = {
    "×": "write `·_J` (or `*_J`) to contract over J, and `*` for an elementwise product",
    "@": "write `·_J` (or `*_J`) to contract over J, and `*` for an elementwise product",
    "⋅": "the contraction dot is `·` (U+00B7 middle dot), or write `*_J`",
    "∙": "the contraction dot is `·` (U+00B7 middle dot), or write `*_J`",
    "−": "write the ASCII `-` for subtraction",
    "–": "write the ASCII `-` for subtraction",
}
_SIZE_NOTE = ("a size is a positive whole number such as 4096, 4_096, 4k (4000) or 4Ki (4096), "
              "with no sign; leave out `=SIZE` to keep it symbolic")


def _accepts(exc: UnexpectedInput) -> set[str]:
    """The terminals the parser could take at the error, computed from its state."""
    parser = getattr(exc, "interactive_parser", None)
    if parser is not None:
        return set(parser.accepts())
    return set(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ())


def _statement_prefix(line_text: str, col0: int) -> str:
    """The text of the current statement before column `col0` (statements split at `;`)."""
    return line_text[:col0].rsplit(";", 1)[-1]


def _context(prefix: str) -> str:
    """Which kind of statement the error is in: mesh, dim, hardware, decl, expr or start."""
    text = prefix.lstrip()
    m = re.match(r"([A-Za-z][A-Za-z0-9_]*)(\s*)", text)
    if not m:
        return "start"
    if m.group(1) in _KEYWORDS and (m.group(2) or text.rstrip() == m.group(1)):
        return m.group(1)
    if re.match(r"[A-Za-z]\w*\s*:", text):
        return "decl"
    return "expr" if "=" in text else "start"


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _expected(accepts: set[str], ctx: str, prefix: str) -> str:
    """`accepts` in words, e.g. "expected an expression"; empty if nothing useful to say."""
    acc = set(accepts)
    words: list[str] = []
    if {"MESH", "DIM", "HARDWARE"} & acc:
        acc -= {"MESH", "DIM", "HARDWARE", "NAME", *_END}
        words.append("a statement")
    if _EXPR_START <= acc:
        acc -= _EXPR_START
        words.append("an expression")
    if _OPERATORS <= acc:
        # After an operand: `A[...]`, `A{...}` and `f(...)` continue it, but are rarely meant.
        acc -= _OPERATORS | {"LSQB", "LBRACE", "LPAR"}
        words.append("an operator (`+`, `-`, `*` or `·_J`)")
    if "NAME" in acc:
        acc.discard("NAME")
        if ctx == "mesh":
            words.append("a mesh axis name")
        elif ctx == "dim":
            words.append("a dimension name")
        elif ctx == "decl" and prefix.rstrip().endswith(":"):
            words.append("a dtype such as bf16")
        else:
            words.append("a name")
    if "SIZE" in acc:
        acc.discard("SIZE")
        words.append("a size (a whole number)")
    if "DIMSPEC" in acc:
        acc.discard("DIMSPEC")
        words.append("a dimension such as I or I_X")
    if "UNREDUCED" in acc:
        acc.discard("UNREDUCED")
        words.append("partial sums written U_X")
    if {"HWNAME", "STRING"} & acc:
        acc -= {"HWNAME", "STRING"}
        words.append("a chip name or a quoted path to a chip file")
    for term in ("COLLECTIVE", "CONTRACT", "ADDOP", "MULOP"):
        if term in acc:
            acc.discard(term)
            words.append({"COLLECTIVE": "a collective", "CONTRACT": "`·_J`",
                          "ADDOP": "`+` or `-`", "MULOP": "`*`"}[term])
    words.extend(_PUNCTUATION[t] for t in _PUNCTUATION if t in acc)
    if _END & acc:
        words.append("the end of the statement")
    return "expected " + _join(words) if words else ""


def _token_phrase(tok: Token) -> str:
    text = str(tok)
    if tok.type in _KEYWORD_TOKENS:
        return f"keyword `{text}`"
    if tok.type == "SIZE" or text.isdigit():
        return f"number {text}"
    if tok.type == "CONTRACT":
        return f"contraction {text!r}"
    if tok.type == "COLLECTIVE":
        return f"collective {text!r}"
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+{},-]*", text):
        return f"name {text!r}"
    return f"`{text}`"


def _error(code: str, message: str, span: Span, label: str = "",
           notes: tuple[str, ...] = ()) -> Diagnostic:
    return Diagnostic("error", code, message, span, label, notes)


def _bracket_problem(line_text: str, line: int) -> Diagnostic | None:
    """P002 for a bracket on the line that is never closed, P005 for one that closes nothing.
    The braces of a `repeat` block span lines: a `{` ending a `repeat` line and a `}` starting
    a line are not counted."""
    block = re.match(r"(\s*repeat\b[^{#]*)\{\s*(#.*)?$", line_text)
    if block:
        line_text = block.group(1)
    stack: list[tuple[str, int]] = []
    i = len(m.group(0)) if (m := re.match(r"\s*\}", line_text)) else 0
    while i < len(line_text):
        ch = line_text[i]
        if ch == "#":
            break
        if ch == '"':
            close = line_text.find('"', i + 1)
            if close < 0:
                break
            i = close + 1
            continue
        if ch in _OPENERS:
            stack.append((ch, i))
        elif ch in _CLOSERS:
            if not stack:
                return _error("P005", f"unmatched `{ch}`", Span.point(line, i + 1),
                              f"no `{_CLOSERS[ch]}` opens it")
            opener, j = stack.pop()
            if opener != _CLOSERS[ch]:
                return _error("P005", f"`{ch}` does not match the `{opener}` at column {j + 1}",
                              Span.point(line, i + 1), f"expected `{_OPENERS[opener]}` first")
        i += 1
    if stack:
        opener, j = stack[-1]
        return _error("P002", f"`{opener}` is never closed", Span.point(line, j + 1),
                      f"no matching `{_OPENERS[opener]}` on this line",
                      ("a statement ends at the end of its line; continue it with a "
                       "trailing `\\`",))
    return None


def _size_problem(line_text: str, line: int, col0: int) -> Diagnostic | None:
    """P006 when the error lies in the size of a `mesh` or `dim` entry (`I=1.5`, `X=-2`)."""
    m = re.match(r"\s*(mesh|dim)\s", line_text)
    if not m:
        return None
    for entry in re.finditer(r"([A-Za-z]\w*)\s*=\s*([^\s,;#]*)", line_text):
        value = entry.group(2)
        if value and entry.start(2) <= col0 <= entry.end(2):
            if re.fullmatch(SIZE_PATTERN, value):
                return None
            what = "mesh axis" if m.group(1) == "mesh" else "dimension"
            return _not_whole(f"size of {what} {entry.group(1)!r}", value,
                              Span(line, entry.start(2) + 1, line, entry.end(2) + 1))
    return None


def _keyword_problem(prefix: str, line: int, col0: int, tok_text: str) -> Diagnostic | None:
    """P007 for `mesh: f32[I]` (a keyword as a name) and `Mesh X=8` (a keyword's case)."""
    m = re.fullmatch(r"(\s*)([A-Za-z][A-Za-z0-9_]*)\s*", prefix)
    if not m:
        return None
    word = m.group(2)
    start = col0 - len(prefix) + m.start(2)
    span = Span(line, start + 1, line, start + 1 + len(word))
    keywords = "the keywords are " + ", ".join(f"`{k}`" for k in _KEYWORDS)
    if word in _KEYWORDS and tok_text in (":", "=", "[", "{"):
        return _error("P007", f"`{word}` is a keyword and cannot name an array", span,
                      "a keyword", (keywords + "; choose another name",))
    if word.lower() in _KEYWORDS and word not in _KEYWORDS:
        return _error("P007", f"unknown statement {word!r}", span,
                      f"keywords are lowercase: `{word.lower()}`", (keywords,))
    return None


def _subscript_problem(line_text: str, line: int, col0: int,
                       after_word: bool = False) -> Diagnostic | None:
    """P008 / P004 for a misplaced `_` at column `col0`; with `after_word`, only P008 for an
    empty subscript just after the word at `col0` (`{U_}` lexes as `U`, then `_`)."""
    i = col0
    if after_word:
        m = re.match(r"[A-Za-z][A-Za-z0-9]*", line_text[i:])
        if not m or line_text[i + m.end():i + m.end() + 1] != "_":
            return None
        i += m.end()
    elif i >= len(line_text) or line_text[i] != "_":
        return None
    before = line_text[:i]
    after = line_text[i + 1:i + 2]
    span = Span.point(line, i + 1)
    word = re.search(r"([A-Za-z][A-Za-z0-9_]*|·|\*)$", before)
    if after_word and (after.isalnum() or after == "{"):
        return None
    if word and re.search(r"[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9]+$", before):
        head = before[word.start():].split("_")[0]
        return _error("P004", f"a second subscript on {before[word.start():]!r}", span,
                      "one subscript per dimension",
                      (f"list every mesh axis in one subscript: {head}_XY or {head}_{{X,Y}}",))
    if word and not (after.isalnum() or after == "{"):
        if word.group(1) == "U" and "{" in before:
            what = "the mesh axes holding partial sums, as in {U_X}"
        else:
            what = "mesh axes, as in I_X or I_{X,Y}"
        return _error("P008", f"empty subscript after {word.group(1)!r}", span,
                      f"expected {what}",
                      ("write the dimension alone (I) to leave it unsharded",)
                      if word.group(1) != "U" else ())
    return _error("P004", "misplaced subscript `_`", span,
                  "a subscript follows the name it belongs to, as in I_X",
                  ("I_X is dimension I sharded over mesh axis X",))


def _syntax_diagnostic(exc: UnexpectedInput, source: Source) -> Diagnostic:
    accepts = _accepts(exc)
    if isinstance(exc, UnexpectedToken) and exc.token.type == "$END" or isinstance(
            exc, UnexpectedEOF):
        lines = source.text.rstrip("\n").splitlines() or [""]
        line = len(lines)
        span = Span.point(line, len(lines[-1]) + 1)
        found = _bracket_problem(lines[-1], line)
        if found is not None:
            return found
        opened = [i for i, t in enumerate(lines, 1) if re.match(r"\s*repeat\b.*\{\s*(#.*)?$", t)]
        if "RBRACE" in accepts and opened:
            return _error("P002", "a `repeat` block is never closed", span, "expected `}`",
                          (f"the last block opens on line {opened[-1]}; close it with `}}` "
                           "on a line of its own",))
        prefix = _statement_prefix(lines[-1], len(lines[-1]))
        return _error("P002", "the program ends in the middle of a statement", span,
                      _expected(accepts, _context(prefix), prefix))
    line = getattr(exc, "line", 0) or 0
    col = getattr(exc, "column", 0) or 0
    line_text = source.line_text(line).replace("\ufeff", " ")
    col0 = col - 1
    prefix = _statement_prefix(line_text, col0)
    ctx = _context(prefix)
    continued = line_text.rstrip().endswith("\\") or source.line_text(line - 1).rstrip(
        ).endswith("\\")
    if not continued:
        found = _bracket_problem(line_text, line)
        if found is not None:
            return found
    found = _size_problem(line_text, line, col0)
    if found is not None:
        return found
    if isinstance(exc, UnexpectedCharacters):
        return _unexpected_character(exc, source, line, col, line_text, accepts, ctx, prefix)
    assert isinstance(exc, UnexpectedToken)
    return _unexpected_token(exc.token, line, col, line_text, accepts, ctx, prefix)


def _unexpected_character(exc: UnexpectedCharacters, source: Source, line: int, col: int,
                          line_text: str, accepts: set[str], ctx: str, prefix: str) -> Diagnostic:
    pos = exc.pos_in_stream or 0
    ch = source.text[pos] if pos < len(source.text) else ""
    span = Span.point(line, col)
    if ch == '"':
        return _error("P009", "unterminated string", Span(line, col, line, len(line_text) + 1),
                      "no closing `\"` on this line", ("a chip file is named in double quotes: "
                                                       'hardware "chips/mine.toml"',))
    if ch == "_":
        found = _subscript_problem(line_text, line, col - 1)
        if found is not None:
            return found
    if ch in ("·", "*"):
        return _error("P003", "a contraction needs the dimensions it sums over", span,
                      "write `·_J` (or `*_J`) to contract over J",
                      ("contractions are written A ·_J B; several dims as A ·_{N,H} B",))
    notes = (_CONFUSABLES[ch],) if ch in _CONFUSABLES else ()
    return _error("P001", f"unexpected character {ch!r}", span,
                  _expected(accepts, ctx, prefix), notes)


def _unexpected_token(tok: Token, line: int, col: int, line_text: str, accepts: set[str],
                      ctx: str, prefix: str) -> Diagnostic:
    text = str(tok)
    if tok.type == "_NL":
        return _error("P002", "the statement ends too early", Span.point(line, col),
                      _expected(accepts, ctx, prefix))
    span = _span(tok)
    if tok.type in _KEYWORD_TOKENS and "RBRACE" in accepts and tok.type not in accepts:
        return _error("P010", f"`{text}` cannot be inside a `repeat` block", span,
                      "not allowed here",
                      ("a repeat block holds array and param declarations, assignments and "
                       "other repeat blocks; put `mesh`, `dim`, `hardware` and `backward` "
                       "outside it",))
    if ctx == "repeat" and text == "{":
        return _error("P010", "`repeat` needs a count", span, "expected a count before `{`",
                      ("write repeat L { ... } with L a whole number, a dim or a mesh axis, "
                       "or a sum or product of those",))
    found = _keyword_problem(prefix, line, col - 1, text)
    if found is not None:
        return found
    found = _subscript_problem(line_text, line, col - 1, after_word=True)
    if found is not None:
        return found
    name_like = tok.type in ("NAME", "DIMSPEC", "HWNAME", "COLLECTIVE", "UNREDUCED") or bool(
        re.fullmatch(r"[A-Za-z]\w*", text))
    starts_expr = name_like or text == "("
    before = prefix.rstrip()
    if accepts == {"UNREDUCED"}:
        return _error("P005", f"unexpected {_token_phrase(tok)} in a partial-sum set", span,
                      f"expected U_ followed by mesh axes, as in {{U_{text}}}" if name_like
                      else "expected U_X",
                      ("{U_X} marks an array that holds partial sums over mesh axis X",))
    if "RBRACE" in accepts and text == "," and re.search(r"\{\s*U_\w+$", before):
        return _error("P005", "unexpected `,` in a partial-sum set", span, "expected `}`",
                      ("list several axes in one subscript: {U_XY} or {U_{X,Y}}",))
    if "COMMA" in accepts and name_like and before and (before[-1].isalnum() or before[-1] == "}"):
        last = re.search(r"[A-Za-z0-9_=.]+(?:\{[^{}]*\})?$", before)
        return _error("P005", f"missing `,` between {last.group(0) if last else before!r} and "
                      f"{text!r}", span, "expected `,` before this")
    after = line_text[(tok.end_column or col) - 1:]
    if "COLON" in accepts and name_like and re.fullmatch(r"\s*[A-Za-z]\w*\s*", prefix) and (
            after.lstrip().startswith("[") and "=" not in after):
        return _error("P005", f"missing `:` between {before.strip()!r} and its dtype {text!r}",
                      span, "expected `:` before the dtype",
                      ("an array is declared as A: bf16[I, J]",))
    if "EQUAL" in accepts and starts_expr:
        return _error("P005", f"missing `=` after {before.strip()!r}", span,
                      "expected `=` before the expression",
                      ("an assignment is written C[I, K] = A ·_J B",))
    if _OPERATORS <= accepts and starts_expr:
        return _error("P005", f"missing operator before {text!r}", span,
                      "expected `+`, `-`, `*` or `·_J`",
                      ("contractions are written A ·_J B; elementwise products A * B",))
    if _END & accepts and name_like and accepts <= _END | {"LBRACE", "LSQB"}:
        return _error("P005", f"unexpected {_token_phrase(tok)} after a complete statement",
                      span, "expected the end of the statement",
                      ("write one statement per line, or separate statements with `;`",))
    notes: tuple[str, ...] = ()
    if ctx == "expr" and text == "=" and before.endswith("="):
        notes = ("an assignment has one `=`; the language has no comparisons",)
    elif ctx == "decl" and text == "=":
        notes = ("a declaration `A: bf16[I, J]` has no `=`; to compute an array write "
                 "A2[I, J] = A",)
    elif ctx == "expr" and text.isdigit():
        notes = ("expressions combine arrays; the language has no numeric constants",)
    elif accepts == {"LPAR"}:
        notes = ("a collective or function takes its argument in parentheses: AllGather_X(A)",)
    elif text in _CONFUSABLES:
        # `@` is a token now (mesh links: `X=16 @ici`), so it reaches here inside expressions.
        notes = (_CONFUSABLES[text] + "; `@` only names a mesh axis's link (`mesh X=4 @ici`)",)
    return _error("P005", f"unexpected {_token_phrase(tok)}", span,
                  _expected(accepts, ctx, prefix), notes)
