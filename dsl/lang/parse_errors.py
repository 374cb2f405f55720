"""Syntax errors in the language's terms: a Lark error becomes a P-diagnostic with a span and a
note naming what was expected (docs/language.md's words); also `error`, `not_whole`, `token_span`
for the parser's other modules. Used by `shardc.lang.parser` and `.nesting` only; Lark objects
go no further."""

from __future__ import annotations

import re

from lark import Token, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from shardc.lang.diagnostics import Diagnostic
from shardc.lang.numeric import SIZE_PATTERN
from shardc.lang.quoting import quoted
from shardc.lang.source import Source, Span


def token_span(tok: Token) -> Span:
    # Tokens from the parser always carry positions (propagate_positions=True).
    line, col = tok.line or 1, tok.column or 1
    return Span(line, col, tok.end_line or line, tok.end_column or col + 1)


def not_whole(what: str, value: str, span: Span) -> Diagnostic:
    """P006: a size, mesh axis or repeat count that is not a positive whole number."""
    return error(
        "P006",
        f"the {what} is not a positive whole number: {quoted(value)}",
        span,
        "expected a whole number",
        (SIZE_NOTE,),
    )


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
_PUNCTUATION = {
    "EQUAL": "`=`",
    "COLON": "`:`",
    "LSQB": "`[`",
    "LBRACE": "`{`",
    "COMMA": "`,`",
    "RSQB": "`]`",
    "RBRACE": "`}`",
    "LPAR": "`(`",
    "RPAR": "`)`",
}
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
SIZE_NOTE = (
    "a size is a positive whole number such as 4096, 4_096, 4k (4000) or 4Ki (4096), "
    "with no sign; leave out `=SIZE` to keep it symbolic"
)


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
            words.append(
                {
                    "COLLECTIVE": "a collective",
                    "CONTRACT": "`·_J`",
                    "ADDOP": "`+` or `-`",
                    "MULOP": "`*`",
                }[term]
            )
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


def error(
    code: str, message: str, span: Span, label: str = "", notes: tuple[str, ...] = ()
) -> Diagnostic:
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
                return error(
                    "P005",
                    f"unmatched `{ch}`",
                    Span.point(line, i + 1),
                    f"no `{_CLOSERS[ch]}` opens it",
                )
            opener, j = stack.pop()
            if opener != _CLOSERS[ch]:
                return error(
                    "P005",
                    f"`{ch}` does not match the `{opener}` at column {j + 1}",
                    Span.point(line, i + 1),
                    f"expected `{_OPENERS[opener]}` first",
                )
        i += 1
    if stack:
        opener, j = stack[-1]
        return error(
            "P002",
            f"`{opener}` is never closed",
            Span.point(line, j + 1),
            f"no matching `{_OPENERS[opener]}` on this line",
            ("a statement ends at the end of its line; continue it with a trailing `\\`",),
        )
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
            return not_whole(
                f"size of {what} {entry.group(1)!r}",
                value,
                Span(line, entry.start(2) + 1, line, entry.end(2) + 1),
            )
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
        return error(
            "P007",
            f"`{word}` is a keyword and cannot name an array",
            span,
            "a keyword",
            (keywords + "; choose another name",),
        )
    if word.lower() in _KEYWORDS and word not in _KEYWORDS:
        return error(
            "P007",
            f"unknown statement {word!r}",
            span,
            f"keywords are lowercase: `{word.lower()}`",
            (keywords,),
        )
    return None


def _subscript_problem(
    line_text: str, line: int, col0: int, after_word: bool = False
) -> Diagnostic | None:
    """P008 / P004 for a misplaced `_` at column `col0`; with `after_word`, only P008 for an
    empty subscript just after the word at `col0` (`{U_}` lexes as `U`, then `_`)."""
    i = col0
    if after_word:
        m = re.match(r"[A-Za-z][A-Za-z0-9]*", line_text[i:])
        if not m or line_text[i + m.end() : i + m.end() + 1] != "_":
            return None
        i += m.end()
    elif i >= len(line_text) or line_text[i] != "_":
        return None
    before = line_text[:i]
    after = line_text[i + 1 : i + 2]
    span = Span.point(line, i + 1)
    word = re.search(r"([A-Za-z][A-Za-z0-9_]*|·|\*)$", before)
    if after_word and (after.isalnum() or after == "{"):
        return None
    if word and re.search(r"[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9]+$", before):
        head = before[word.start() :].split("_")[0]
        return error(
            "P004",
            f"a second subscript on {before[word.start() :]!r}",
            span,
            "one subscript per dimension",
            (f"list every mesh axis in one subscript: {head}_XY or {head}_{{X,Y}}",),
        )
    if word and not (after.isalnum() or after == "{"):
        if word.group(1) == "U" and "{" in before:
            what = "the mesh axes holding partial sums, as in {U_X}"
        else:
            what = "mesh axes, as in I_X or I_{X,Y}"
        return error(
            "P008",
            f"empty subscript after {word.group(1)!r}",
            span,
            f"expected {what}",
            ("write the dimension alone (I) to leave it unsharded",)
            if word.group(1) != "U"
            else (),
        )
    return error(
        "P004",
        "misplaced subscript `_`",
        span,
        "a subscript follows the name it belongs to, as in I_X",
        ("I_X is dimension I sharded over mesh axis X",),
    )


def syntax_diagnostic(exc: UnexpectedInput, source: Source) -> Diagnostic:
    accepts = _accepts(exc)
    if (
        isinstance(exc, UnexpectedToken)
        and exc.token.type == "$END"
        or isinstance(exc, UnexpectedEOF)
    ):
        lines = source.text.rstrip("\n").splitlines() or [""]
        line = len(lines)
        span = Span.point(line, len(lines[-1]) + 1)
        found = _bracket_problem(lines[-1], line)
        if found is not None:
            return found
        opened = [i for i, t in enumerate(lines, 1) if re.match(r"\s*repeat\b.*\{\s*(#.*)?$", t)]
        if "RBRACE" in accepts and opened:
            return error(
                "P002",
                "a `repeat` block is never closed",
                span,
                "expected `}`",
                (
                    f"the last block opens on line {opened[-1]}; close it with `}}` "
                    "on a line of its own",
                ),
            )
        prefix = _statement_prefix(lines[-1], len(lines[-1]))
        return error(
            "P002",
            "the program ends in the middle of a statement",
            span,
            _expected(accepts, _context(prefix), prefix),
        )
    line = getattr(exc, "line", 0) or 0
    col = getattr(exc, "column", 0) or 0
    line_text = source.line_text(line).replace("\ufeff", " ")
    col0 = col - 1
    prefix = _statement_prefix(line_text, col0)
    ctx = _context(prefix)
    continued = line_text.rstrip().endswith("\\") or source.line_text(line - 1).rstrip().endswith(
        "\\"
    )
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


def _unexpected_character(
    exc: UnexpectedCharacters,
    source: Source,
    line: int,
    col: int,
    line_text: str,
    accepts: set[str],
    ctx: str,
    prefix: str,
) -> Diagnostic:
    pos = exc.pos_in_stream or 0
    ch = source.text[pos] if pos < len(source.text) else ""
    span = Span.point(line, col)
    if ch == '"':
        return error(
            "P009",
            "unterminated string",
            Span(line, col, line, len(line_text) + 1),
            'no closing `"` on this line',
            ('a chip file is named in double quotes: hardware "chips/mine.toml"',),
        )
    if ch == "_":
        found = _subscript_problem(line_text, line, col - 1)
        if found is not None:
            return found
    if ch in ("·", "*"):
        return error(
            "P003",
            "a contraction needs the dimensions it sums over",
            span,
            "write `·_J` (or `*_J`) to contract over J",
            ("contractions are written A ·_J B; several dims as A ·_{N,H} B",),
        )
    notes = (_CONFUSABLES[ch],) if ch in _CONFUSABLES else ()
    return error(
        "P001", f"unexpected character {ch!r}", span, _expected(accepts, ctx, prefix), notes
    )


def _unexpected_token(
    tok: Token, line: int, col: int, line_text: str, accepts: set[str], ctx: str, prefix: str
) -> Diagnostic:
    text = str(tok)
    if tok.type == "_NL":
        return error(
            "P002",
            "the statement ends too early",
            Span.point(line, col),
            _expected(accepts, ctx, prefix),
        )
    span = token_span(tok)
    if tok.type in _KEYWORD_TOKENS and "RBRACE" in accepts and tok.type not in accepts:
        return error(
            "P010",
            f"`{text}` cannot be inside a `repeat` block",
            span,
            "not allowed here",
            (
                "a repeat block holds array and param declarations, assignments and "
                "other repeat blocks; put `mesh`, `dim`, `hardware` and `backward` "
                "outside it",
            ),
        )
    if ctx == "repeat" and text == "{":
        return error(
            "P010",
            "`repeat` needs a count",
            span,
            "expected a count before `{`",
            (
                "write repeat L { ... } with L a whole number, a dim or a mesh axis, "
                "or a sum or product of those",
            ),
        )
    found = _keyword_problem(prefix, line, col - 1, text)
    if found is not None:
        return found
    found = _subscript_problem(line_text, line, col - 1, after_word=True)
    if found is not None:
        return found
    name_like = tok.type in ("NAME", "DIMSPEC", "HWNAME", "COLLECTIVE", "UNREDUCED") or bool(
        re.fullmatch(r"[A-Za-z]\w*", text)
    )
    starts_expr = name_like or text == "("
    before = prefix.rstrip()
    if accepts == {"UNREDUCED"}:
        return error(
            "P005",
            f"unexpected {_token_phrase(tok)} in a partial-sum set",
            span,
            f"expected U_ followed by mesh axes, as in {{U_{text}}}"
            if name_like
            else "expected U_X",
            ("{U_X} marks an array that holds partial sums over mesh axis X",),
        )
    if "RBRACE" in accepts and text == "," and re.search(r"\{\s*U_\w+$", before):
        return error(
            "P005",
            "unexpected `,` in a partial-sum set",
            span,
            "expected `}`",
            ("list several axes in one subscript: {U_XY} or {U_{X,Y}}",),
        )
    if "COMMA" in accepts and name_like and before and (before[-1].isalnum() or before[-1] == "}"):
        last = re.search(r"[A-Za-z0-9_=.]+(?:\{[^{}]*\})?$", before)
        return error(
            "P005",
            f"missing `,` between {last.group(0) if last else before!r} and {text!r}",
            span,
            "expected `,` before this",
        )
    after = line_text[(tok.end_column or col) - 1 :]
    if (
        "COLON" in accepts
        and name_like
        and re.fullmatch(r"\s*[A-Za-z]\w*\s*", prefix)
        and (after.lstrip().startswith("[") and "=" not in after)
    ):
        return error(
            "P005",
            f"missing `:` between {before.strip()!r} and its dtype {text!r}",
            span,
            "expected `:` before the dtype",
            ("an array is declared as A: bf16[I, J]",),
        )
    if "EQUAL" in accepts and starts_expr:
        return error(
            "P005",
            f"missing `=` after {before.strip()!r}",
            span,
            "expected `=` before the expression",
            ("an assignment is written C[I, K] = A ·_J B",),
        )
    if _OPERATORS <= accepts and starts_expr:
        return error(
            "P005",
            f"missing operator before {text!r}",
            span,
            "expected `+`, `-`, `*` or `·_J`",
            ("contractions are written A ·_J B; elementwise products A * B",),
        )
    if _END & accepts and name_like and accepts <= _END | {"LBRACE", "LSQB"}:
        words = before.split()
        if len(words) >= 2 and words[-2] == "hardware":
            # `hardware TPU v5e 4x4`: a chip's name is one word; the slice is the mesh's.
            guess = "-".join([words[-1], text]).lower()
            return error(
                "P005",
                f"a chip's name is one word: unexpected {_token_phrase(tok)} "
                f"after `hardware {words[-1]}`",
                span,
                "expected the end of the statement",
                (
                    f"write `hardware {guess}` (names and aliases: `shardc hw list`); the "
                    "slice's shape is the mesh's (`mesh X=4 @ici(x), Y=4 @ici(y)`)",
                ),
            )
        return error(
            "P005",
            f"unexpected {_token_phrase(tok)} after a complete statement",
            span,
            "expected the end of the statement",
            ("write one statement per line, or separate statements with `;`",),
        )
    notes: tuple[str, ...] = ()
    if ctx == "expr" and text == "=" and before.endswith("="):
        notes = ("an assignment has one `=`; the language has no comparisons",)
    elif ctx == "decl" and text == "=":
        notes = (
            "a declaration `A: bf16[I, J]` has no `=`; to compute an array write A2[I, J] = A",
        )
    elif ctx == "expr" and text.isdigit():
        notes = ("expressions combine arrays; the language has no numeric constants",)
    elif accepts == {"LPAR"}:
        notes = ("a collective or function takes its argument in parentheses: AllGather_X(A)",)
    elif text in _CONFUSABLES:
        # `@` is a token now (mesh links: `X=16 @ici`), so it reaches here inside expressions.
        notes = (_CONFUSABLES[text] + "; `@` only names a mesh axis's link (`mesh X=4 @ici`)",)
    return error(
        "P005", f"unexpected {_token_phrase(tok)}", span, _expected(accepts, ctx, prefix), notes
    )
