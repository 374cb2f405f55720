"""The syntax of a command-line formula (`shardc.driver.user_expr_syntax`, the AST in
`shardc.driver.user_expr_ast`): the AST `parse` builds, and the refusals with their columns.
What SymPy is built from the AST is tests/driver/test_user_expr.py's."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardc.driver import user_expr
from shardc.driver.user_expr_ast import (
    FUNCTIONS,
    MAX_EXPONENT,
    MAX_LENGTH,
    BinOp,
    Call,
    Compare,
    ExprError,
    Name,
    Neg,
    Num,
)
from shardc.driver.user_expr_syntax import parse


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("B/X", BinOp("/", Name("B"), Name("X"))),
        ("-B**2", Neg(BinOp("**", Name("B"), Num(Decimal(2))))),
        ("Max(B, 2*X)", Call("Max", (Name("B"), BinOp("*", Num(Decimal(2)), Name("X"))))),
        ("B >= 4k", Compare(">=", Name("B"), Num(Decimal(4000)))),
        ("((((B))))", Name("B")),
        ("B**(1/2)", BinOp("**", Name("B"), BinOp("/", Num(Decimal(1)), Num(Decimal(2))))),
        ("1 - 2 - 3", BinOp("-", BinOp("-", Num(Decimal(1)), Num(Decimal(2))), Num(Decimal(3)))),
    ],
)
def test_the_tree(text, tree):
    assert parse(text) == tree


@pytest.mark.parametrize(
    ("text", "column", "words"),
    [
        ("", 0, "empty formula"),
        ("B +", 3, "unexpected end"),
        ("B**B**B", 4, "'**' takes a whole number"),
        (f"B**{MAX_EXPONENT + 1}", 1, "up to 16"),
        ("x" * (MAX_LENGTH + 1), MAX_LENGTH, "at most 1000 characters"),
        ("B.subs", 1, "no attribute access"),
    ],
)
def test_refusals_say_where(text, column, words):
    with pytest.raises(ExprError) as info:
        parse(text)
    assert words in info.value.message and info.value.column == column


def test_the_public_home_names_the_same_error_and_functions():
    assert user_expr.ExprError is ExprError
    assert {"Max", "Min", "sqrt", "floor", "ceiling", "Lt", "Ge"} <= set(FUNCTIONS)


@given(
    st.lists(st.sampled_from(["B", "X", "2", "4k"]), min_size=1, max_size=8),
    st.sampled_from(["+", "*", "/"]),
)
def test_a_chain_of_one_operator_is_left_nested(operands, op):
    tree = parse(f" {op} ".join(operands))
    for operand in reversed(operands[1:]):
        assert isinstance(tree, BinOp) and tree.op == op
        assert tree.right == parse(operand)
        tree = tree.left
    assert tree == parse(operands[0])
