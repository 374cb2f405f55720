"""The command-line formula grammar (`grammar/expr.lark`, `shardc.driver.user_expr`): what it
accepts and the SymPy it builds, what it refuses and where, and a round trip through its own
printer."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc.driver.user_expr import (
    FUNCTIONS,
    MAX_LENGTH,
    BinOp,
    Call,
    ExprError,
    Name,
    Neg,
    Num,
    formula,
    number_formula,
    parse,
    to_sympy,
    to_text,
)
from shardc.lang.numeric import parse_decimal

B, X, C, W, T = (sp.Symbol(n, positive=True) for n in ("B", "X", "C", "W_ici", "t_math_s"))
NAMES = {"B": B, "X": X, "C": C, "W_ici": W, "t_math_s": T}


def resolve(name: str) -> sp.Expr:
    return NAMES[name] if name in NAMES else sp.Symbol(name, positive=True)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("B", B),
        ("B/X", B / X),
        ("  B / X  ", B / X),
        ("2*B*X/C", 2 * B * X / C),
        ("B - X - C", B - X - C),
        ("B/X/C", B / X / C),
        ("-B + X", X - B),
        ("+B", B),
        ("--B", B),
        ("-B**2", -(B**2)),
        ("B**2", B**2),
        ("B**-1", 1 / B),
        ("X**(1/2)", sp.sqrt(X)),
        ("X**(-1/2)", 1 / sp.sqrt(X)),
        ("(B + X)*C", (B + X) * C),
        ("4M*B", 4_000_000 * B),
        ("4_096", sp.Integer(4096)),
        ("1e6", sp.Integer(10**6)),
        ("1.5k", sp.Integer(1500)),
        ("2.5e-6*C", sp.Float("2.5e-6") * C),
        ("sqrt(B*X)", sp.sqrt(B * X)),
        ("Max(B, X, 2)", sp.Max(B, X, 2)),
        ("Min(B, X)", sp.Min(B, X)),
        ("log(B)", sp.log(B)),
        ("floor(B/X)", sp.floor(B / X)),
        ("ceiling(B/X)", sp.ceiling(B / X)),
        ("abs(B - X)", sp.Abs(B - X)),
        ("t_math_s/W_ici", T / W),
        ("N", sp.Symbol("N", positive=True)),  # a size, not SymPy's N()
        ("S + E", sp.Symbol("S", positive=True) + sp.Symbol("E", positive=True)),
    ],
)
def test_good_formulas(text, expected):
    got = formula(text, resolve)
    assert sp.simplify(got - expected) == 0


PAYLOAD = "B.subs.__globals__['__builtins__']['__import__']('os').system('touch pwned')"


@pytest.mark.parametrize(
    "text, message, column",
    [
        (PAYLOAD, "unexpected '.' (no attribute access)", 1),
        ('__import__("os").system("touch pwned")', "unexpected quote (no strings)", 11),
        ("__class__", "'__class__' is not allowed", 0),
        ("_u", "'_u' is not allowed", 0),
        ("a__b", "'a__b' is not allowed", 0),
        ("B.T", "no attribute access", 1),
        ("a[0]", "no subscripts", 1),
        ("'B'", "no strings", 0),
        ("lambda: 1", "no lambdas", 6),
        ("lambda x: x", "unexpected name 'x'", 7),
        ("sin(B)", "unknown function 'sin'", 0),
        ("eval(B)", "unknown function 'eval'", 0),
        ("exec(B)", "unknown function 'exec'", 0),
        ("sqrt(B, X)", "sqrt takes 1 argument, got 2", 0),
        ("B/(X", "unexpected end; expected ')'", 4),
        ("B +", "unexpected end; expected a name", 3),
        ("B +* X", "unexpected symbol '*'", 3),
        ("B X", "unexpected name 'X'", 2),
        ("", "empty formula", 0),
        ("   ", "empty formula", 0),
        ("B = 2", "unexpected character '='", 2),
        ("B > X", "a comparison (>) is not a quantity", 2),
        ("B**B**B**B**B", "'**' takes a whole number", 10),
        ("B**B", "'**' takes a whole number", 1),
        ("B**99", "'**' takes a whole number", 1),
        ("2**(1/0)", "'**' takes a whole number", 1),
        ("B/0", "division by zero", 1),
        ("B/(X - X)", "division by zero", 1),
        ("1e400", "too large", 0),
        ("1e-400", "too small", 0),
        ("(" * 60 + "B" + ")" * 60, "nested deeper than", None),
        ("-" * 60 + "B", "nested deeper than", None),
        ("B" + "+B" * 600, "at most 1000 characters", 1000),
    ],
)
def test_refused_formulas(text, message, column):
    with pytest.raises(ExprError) as exc:
        number_formula(text, resolve)
    assert message in exc.value.message
    if column is not None:
        assert exc.value.column == column


def test_report_formulas_may_be_comparisons():
    assert formula("B/X > C/W_ici", resolve) == sp.StrictGreaterThan(B / X, C / W)
    assert formula("B <= 2", resolve) == sp.LessThan(B, 2)
    assert formula("Eq(B, X)", resolve) == sp.Eq(B, X)
    with pytest.raises(ExprError, match="not a quantity"):
        number_formula("Eq(B, X)", resolve)


def test_an_unknown_name_is_refused_by_the_resolver_with_its_column():
    from shardc.driver.user_expr import known_names_resolver

    with pytest.raises(ExprError) as exc:
        formula("B/Q", known_names_resolver({"B": B}))
    assert exc.value.message == "unknown name 'Q' (known: B)" and exc.value.column == 2


def test_the_rendered_error_has_a_caret_under_the_column():
    with pytest.raises(ExprError) as exc:
        parse("B/(X")
    assert exc.value.render("--solve-for", "B/(X").splitlines() == [
        "shardc: error: --solve-for 'B/(X': unexpected end; expected ')'",
        "  B/(X",
        "      ^",
    ]


def test_the_ast_holds_no_sympy():
    node = parse("Max(B, 2) - X/3")
    assert node == BinOp(
        "-", Call("Max", (Name("B"), Num(Decimal(2)))), BinOp("/", Name("X"), Num(Decimal(3)))
    )


# ---- round trip: random ASTs printed and re-parsed give the same SymPy -----------------------
_names = st.sampled_from(["B", "X", "C", "W_ici", "t_math_s", "D"])
_leaves = st.one_of(
    st.builds(Name, _names),
    st.builds(Num, st.integers(1, 10**6).map(Decimal)),
    st.builds(Num, st.sampled_from(["0.5", "2.5", "1e3", "4M"]).map(parse_decimal)),
)
_exponents = st.one_of(
    st.integers(-4, 4)
    .filter(bool)
    .map(lambda n: Num(Decimal(n)) if n > 0 else Neg(Num(Decimal(-n)))),
    st.just(BinOp("/", Num(Decimal(1)), Num(Decimal(2)))),
)


def _extend(children):
    return st.one_of(
        st.builds(BinOp, st.sampled_from(["+", "-", "*"]), children, children),
        st.builds(BinOp, st.just("/"), children, st.builds(Name, _names)),
        st.builds(BinOp, st.just("**"), st.builds(Name, _names), _exponents),
        st.builds(Neg, children),
        st.builds(
            Call,
            st.sampled_from(["sqrt", "log", "floor", "ceiling", "abs"]),
            children.map(lambda c: (c,)),
        ),
        st.builds(
            Call,
            st.sampled_from(["Max", "Min"]),
            st.lists(children, min_size=1, max_size=3).map(tuple),
        ),
    )


ASTS = st.recursive(_leaves, _extend, max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(ASTS)
def test_printed_and_reparsed_asts_build_the_same_sympy(node):
    text = to_text(node)
    if len(text) > MAX_LENGTH:
        return
    again = parse(text)
    assert again == node
    try:
        want = to_sympy(node, resolve)
    except ExprError as exc:  # not a real number (Max(sqrt(1 - 2))): the reparsed one neither
        with pytest.raises(ExprError, match=re.escape(exc.message)):
            to_sympy(again, resolve)
        return
    assert to_sympy(again, resolve) == want


def test_a_function_that_is_not_a_real_number_is_a_diagnostic():
    """Max(sqrt(1 - 2)) was an internal error (SymPy: 'I' is not comparable)."""
    for text in ("Max(sqrt(1 - 2))", "sqrt(0 - 4)", "log(0 - 2)"):
        with pytest.raises(ExprError, match="not .*number"):
            to_sympy(parse(text), resolve)


def test_every_whitelisted_function_is_a_sympy_function():
    for name, fn in FUNCTIONS.items():
        args = [sp.Integer(4)] * (2 if name in ("Eq", "Ne", "Lt", "Le", "Gt", "Ge") else 1)
        out = fn(*args)
        assert isinstance(out, sp.Rel) or out.is_number, name
