"""The parts `# expect:` lines are checked with, each from its own module: exact decisions and
interval enclosures (`shardc.testing.expect_proofs`), operands written back and comparisons at
a point (`shardc.testing.expect_terms`), the program strategy (`shardc.testing.generate`) and
the pytest plugin's promise to import nothing of the compiler when it loads
(`shardc.testing.pytest_plugin`)."""

from __future__ import annotations

import math
import subprocess
import sys
from decimal import Decimal

import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings

import shardc
from shardc.lang.expect import BinOp, Call, Name, Neg, Num
from shardc.testing import expect_proofs, expect_terms, generate, pytest_plugin
from tests.paths import ROOT

B, X = sp.symbols("B X", positive=True, integer=True)


@pytest.mark.parametrize(
    ("op", "a", "b", "want"),
    [
        (">", B + X, B, True),
        (">=", B * X + 1, 1, True),
        (">", B * X, B, None),  # X = 1 makes them equal: not shown, so undecided
        ("==", B * (X + 1), B * X + B, True),
        ("<=", B, B, True),
        ("<", B, B, False),
        ("!=", B + 1, B, True),
        ("==", B, X, None),
    ],
)
def test_decided_for_every_positive_size(op, a, b, want):
    assert expect_proofs.decided(op, a, b) == want


def test_enclosures_over_a_box_of_sizes():
    box = {B: (1, 8), X: (2, 4)}
    lo, hi = expect_proofs.enclosure(B / X, box)
    assert (lo, hi) == (sp.Rational(1, 4), 4)
    assert expect_proofs.enclosure(B, {B: (3, math.inf)}) == (3, sp.oo)
    assert expect_proofs.enclosure(sp.Integer(5), box) == (5, 5)
    assert expect_proofs.inside(">", B * X - 1, box)
    assert not expect_proofs.inside(">", B - X, box)  # B = 1, X = 4 is negative
    assert not expect_proofs.inside(">", B, {})  # no box: nothing is shown


def test_operands_are_written_back_with_the_parentheses_they_need():
    two = Num("2", Decimal(2))
    t = Name("T_math")
    assert expect_terms.node_text(BinOp("*", two, BinOp("+", t, two))) == "2*(T_math + 2)"
    assert expect_terms.node_text(BinOp("-", t, BinOp("-", t, two))) == "T_math - (T_math - 2)"
    assert expect_terms.node_text(BinOp("**", BinOp("**", t, two), two)) == "(T_math**2)**2"
    assert expect_terms.node_text(Neg(Call("Max", (t, two)))) == "-Max(T_math, 2)"


def test_comparisons_at_a_point_allow_rounding():
    near = 1.0 + 1e-15
    assert expect_terms.compare("==", 1.0, near) and not expect_terms.compare("!=", 1.0, near)
    assert expect_terms.compare("<=", near, 1.0) and not expect_terms.compare("<", 1.0, near)
    assert expect_terms.compare(">", 2.0, 1.0) and not expect_terms.compare(">", 1.0, 2.0)


@settings(max_examples=10, suppress_health_check=[HealthCheck.too_slow])
@given(
    generate.programs(
        kinds=("contraction", "elementwise"), max_devices=8, max_axes=2, max_statements=2
    )
)
def test_drawn_programs_compile_within_their_bounds(text):
    mesh = next(line for line in text.splitlines() if line.startswith("mesh "))
    sizes = [int(axis.split("=")[1]) for axis in mesh.removeprefix("mesh ").split(",")]
    assert 1 <= len(sizes) <= 2 and math.prod(sizes) <= 8
    assert shardc.compile(text).ops


def test_loading_the_plugin_imports_nothing_of_the_compiler():
    code = (
        "import sys, shardc.testing.pytest_plugin\n"
        "print(sorted(m for m in sys.modules if m.startswith(('shardc.driver', "
        "'shardc.passes', 'shardc.lang', 'sympy', 'lark'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
    assert callable(pytest_plugin.pytest_collect_file)
