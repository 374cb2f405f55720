"""The limits checked on the text and the tree before any pass runs: the program's size
(`shardc.lang.source_size`, P013), its nesting (`shardc.lang.nesting`, P012), and the syntax
errors' own helpers (`shardc.lang.parse_errors`); the old `shardc.lang.limits` path still names
the same limits."""

from __future__ import annotations

from lark import Lark, Token

import shardc.lang.limits as old_limits
from shardc import grammar
from shardc.lang import input_limits
from shardc.lang.input_limits import MAX_NESTING, MAX_STATEMENTS
from shardc.lang.nesting import nesting_problem
from shardc.lang.parse_errors import error, not_whole, token_span
from shardc.lang.source import Span
from shardc.lang.source_size import size_problem

LARK = Lark(grammar.grammar_text(), parser="lalr", keep_all_tokens=True, maybe_placeholders=False)
"""The grammar as the parser builds it (every token kept)."""


def test_the_old_limits_path_names_the_same_values():
    for name in old_limits.__all__:
        assert getattr(old_limits, name) == getattr(input_limits, name), name


def test_statements_are_counted_on_lines_and_across_semicolons():
    assert size_problem("mesh X=2\n" + "dim I=4\n" * (MAX_STATEMENTS - 1)) is None
    d = size_problem("mesh X=2\n" + "dim I=4\n" * MAX_STATEMENTS)
    assert d is not None and d.code == "P013" and d.span.line == MAX_STATEMENTS + 1
    assert str(MAX_STATEMENTS + 1) in d.label.replace(",", "")
    one_line = "; ".join(["dim I=4"] * (MAX_STATEMENTS + 1))
    d = size_problem(one_line)
    assert d is not None and d.span.line == 1 and d.span.col == len(one_line) - 6


def test_comments_strings_and_continuations_are_not_statements():
    body = "# dim I=4; dim J=4\n" * (MAX_STATEMENTS + 5)
    assert size_problem(body) is None
    assert size_problem('hardware "a;b;c"\n' * 10) is None
    assert size_problem("dim I=4, \\\n  J=8\n" * (MAX_STATEMENTS // 2)) is None


def test_a_program_over_the_byte_limit():
    d = size_problem("#" * (input_limits.MAX_SOURCE_BYTES + 10))
    assert d is not None and d.code == "P013" and "bytes" in d.message
    assert d.span.line == 1 and d.span.col == input_limits.MAX_SOURCE_BYTES + 1


def _sum_chain(terms: int) -> str:
    return "dim I=4\nA: bf16[I]\nB = " + " + ".join(["A"] * terms) + "\n"


def test_an_expression_nested_past_the_limit_gets_p012_at_its_first_level_too_deep():
    assert nesting_problem(LARK.parse(_sum_chain(MAX_NESTING))) is None
    d = nesting_problem(LARK.parse(_sum_chain(MAX_NESTING + 2)))
    assert d is not None and d.code == "P012" and "expression nests" in d.message
    assert d.span.line == 3 and d.label == f"level {MAX_NESTING + 1}"


def test_repeat_blocks_nested_past_the_limit():
    def blocks(n: int) -> str:
        return "dim I=4\n" + "repeat 2 {\n" * n + "A: bf16[I]\n" + "}\n" * n

    assert nesting_problem(LARK.parse(blocks(MAX_NESTING))) is None
    d = nesting_problem(LARK.parse(blocks(MAX_NESTING + 1)))
    assert d is not None and d.code == "P012" and "`repeat` blocks" in d.message
    assert d.span.line == MAX_NESTING + 2 and d.span.col == 1


def test_the_error_helpers():
    tok = Token("NAME", "Foo", line=3, column=5, end_line=3, end_column=8)
    assert token_span(tok) == Span(3, 5, 3, 8)
    d = not_whole("repeat count", "2.5", Span.point(1, 8))
    assert d.code == "P006" and d.severity == "error" and "2.5" in d.message
    assert d.notes and d.label == "expected a whole number"
    e = error("P005", "expected `=`", Span.point(2, 1), "here", ("a note",))
    assert (e.code, e.message, e.label, e.notes) == ("P005", "expected `=`", "here", ("a note",))
