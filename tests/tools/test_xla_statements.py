"""xla-check's view of a compiled program, without JAX: the program split into statements with
the layouts their inputs have when they run (`shardc.tools.xla.statements`), and which inputs
each value a statement makes comes from (`shardc.tools.xla.arrays`)."""

from __future__ import annotations

import pytest

from shardc.driver.api import run_pipeline
from shardc.lang.layout import Layout
from shardc.lang.source import Source
from shardc.tools.xla.arrays import ArrayRef, StatementArrays
from shardc.tools.xla.statements import referenced, statements

SOURCE = Source(
    "t.shard",
    "mesh X=2\ndim I=8, J=8, K=8\nA: bf16[I, J_X]\nB: bf16[J_X, K]\n"
    "C[I, K] = A ·_J B\nD = gelu(C)\n",
)


@pytest.fixture(scope="module")
def split():
    r = run_pipeline(SOURCE)
    assert not r.diagnostics.items
    return statements(r.program, r.compiled, SOURCE)


def test_one_statement_per_assignment_with_its_inputs_as_they_are(split):
    c, d = split
    assert (c.line, c.target, d.line, d.target) == (5, "C", 6, "D")
    assert [(x.name, x.layout.format(x.name)) for x in c.inputs] == [
        ("A", "A[I, J_X]"),
        ("B", "B[J_X, K]"),
    ]
    # D reads C as C's statement left it: the AllReduce already summed the partial sums.
    assert [(x.name, x.layout.format(x.name)) for x in d.inputs] == [("C", "C[I, K]")]
    assert c.out_layout == Layout.of({"I": (), "K": ()}) and d.out_layout is None
    assert [type(op).__name__ for op in c.ops] == ["Einsum", "Collective"]
    assert [type(op).__name__ for op in d.ops] == ["Elementwise"]
    assert not c.skip and not d.skip and not c.is_backward
    assert referenced(c.expr) == ["A", "B"] and referenced(d.expr) == ["C"]


def test_each_value_is_traced_to_the_inputs_it_comes_from(split):
    c, d = split
    arrays = StatementArrays(c)
    partial, summed = (arrays.ref(op.out) for op in c.ops)
    assert partial == summed == ArrayRef(frozenset({"A", "B"}), "contraction")
    assert StatementArrays(d).ref(d.ops[0].out) == ArrayRef(frozenset({"C"}), "elementwise")


def test_joining_refs_keeps_the_strongest_kind():
    a, b = ArrayRef(frozenset({"A"})), ArrayRef(frozenset({"B"}), "elementwise")
    assert a.join(b) == ArrayRef(frozenset({"A", "B"}), "elementwise")
    assert a.join(b, "contraction").kind == "contraction"
