"""The parser: every spelling the issue names, spans, and the AST it builds."""

from __future__ import annotations

import pytest

from shardc.lang.diagnostics import Diagnostics
from shardc.lang.layout import Layout
from shardc.lang.parser import parse, split_subscript
from shardc.lang.source import Source
from shardc.lang.syntax import (
    ArrayDecl,
    Assign,
    Binary,
    Call,
    CollectiveCall,
    Contract,
    DimDecl,
    HardwareDecl,
    MeshDecl,
    Ref,
)

EXAMPLE = """\
# comment to end of line
mesh X=8, Y=4               # named mesh axes
dim B=1024, D=8192, F       # a bare name is a symbol
hardware tpu-v5e

A: bf16[B_X, D_Y]           # declaration
W: bf16[D, F_Y]
P: f32[B, F]{U_X}
C[B_X, F_Y] = A[B_X, D] ·_D W
G = AllGather_Y(C)
"""


def p(text: str):
    d = Diagnostics()
    prog = parse(Source("t.shard", text), d)
    assert not d.items, d.render(Source("t.shard", text))
    return prog


def test_issue_example_parses():
    prog = p(EXAMPLE)
    kinds = [type(s) for s in prog.statements]
    assert kinds == [
        MeshDecl,
        DimDecl,
        HardwareDecl,
        ArrayDecl,
        ArrayDecl,
        ArrayDecl,
        Assign,
        Assign,
    ]
    mesh = prog.statements[0]
    assert [(a.name, a.size) for a in mesh.axes] == [("X", 8), ("Y", 4)]
    dims = prog.statements[1]
    assert [(d.name, d.size) for d in dims.dims] == [("B", 1024), ("D", 8192), ("F", None)]
    assert prog.statements[2].name == "tpu-v5e"
    p_decl = prog.statements[5]
    assert p_decl.layout == Layout.of({"B": (), "F": ()}, {"X"})
    c = prog.statements[6]
    assert c.layout == Layout.of({"B": ("X",), "F": ("Y",)})
    assert isinstance(c.expr, Contract) and c.expr.dims == ("D",)
    assert c.expr.lhs == Ref("A", Layout.of({"B": ("X",), "D": ()}))
    g = prog.statements[7].expr
    assert isinstance(g, CollectiveCall) and g.kind == "AllGather" and g.axes == ("Y",)


def test_spans_point_at_the_source():
    prog = p(EXAMPLE)
    c = prog.statements[6]
    assert (c.target_span.line, c.target_span.col) == (9, 1)
    assert c.expr.dims_span.line == 9
    a = prog.statements[3]
    assert a.layout.dims[0].span.col == 9


@pytest.mark.parametrize(
    "text,dims",
    [
        ("C = A *_D W\n", ("D",)),
        ("C = A ·_{N,H} W\n", ("N", "H")),
        ("C = A ·_NH W\n", ("NH",)),
    ],
)
def test_contraction_spellings(text, dims):
    e = p(text).statements[0].expr
    assert isinstance(e, Contract) and e.dims == dims


def test_chains_associate_left():
    e = p("Out[B, D] = In[B_X, D] ·_D W_in[D_X, F] ·_F W_out[F, D_X]\n").statements[0].expr
    assert isinstance(e, Contract) and e.dims == ("F",)
    assert isinstance(e.lhs, Contract) and e.lhs.dims == ("D",)
    assert e.rhs.name == "W_out"


def test_numbers_with_underscores_and_subscripts():
    prog = p("mesh data=4, model=2\ndim B=4_194_304\nA: int4[B_{data,model}]\n")
    assert prog.statements[1].dims[0].size == 4194304
    assert prog.statements[2].layout.dims[0].axes == ("data", "model")


def test_elementwise_and_calls():
    e = p("H = gelu(C) + C * D - E\n").statements[0].expr
    assert isinstance(e, Binary) and e.op == "-"
    assert isinstance(e.lhs, Binary) and e.lhs.op == "+"
    assert isinstance(e.lhs.lhs, Call) and e.lhs.lhs.fn == "gelu"
    assert isinstance(e.lhs.rhs, Binary) and e.lhs.rhs.op == "*"


def test_collective_signatures():
    stmts = p(
        "A = AllGather_{XY}(B)\nC = ReduceScatter_{X,K}(D)\nE = AllToAll_{X,J}(F)\n"
        "G = AllReduce_Y(H)\nK[I, J]{U_X} = L\n"
    ).statements
    assert stmts[0].expr.axes == ("XY",)  # resolved to X, Y by validate
    assert (stmts[1].expr.axes, stmts[1].expr.dim) == (("X",), "K")
    assert (stmts[2].expr.axes, stmts[2].expr.dim) == (("X",), "J")
    assert stmts[3].expr.kind == "AllReduce"
    assert stmts[4].layout.unreduced == frozenset({"X"})


def test_semicolons_and_blank_lines():
    assert len(p("\n\nmesh X=2; dim I=4\n\n# c\n\nA: bf16[I_X]\n").statements) == 3


def test_split_subscript():
    assert split_subscript("·_{N,H}") == ("·", ("N", "H"), 2)
    assert split_subscript("AllGather_XY") == ("AllGather", ("XY",), 10)


@pytest.mark.parametrize(
    "text,code",
    [
        ("C = A · B\n", "P003"),
        ("C = A ·_J\n", "P002"),
        ("A: bf16[I_X J]\n", "P005"),
        ("mesh X=\n", "P002"),
        ("C = (A\n", "P002"),
        ("C = A $ B\n", "P001"),
    ],
)
def test_syntax_errors_have_codes_and_positions(text, code):
    d = Diagnostics()
    assert parse(Source("bad.shard", text), d) is None
    (diag,) = d.items
    assert diag.code == code and diag.span.line >= 1 and diag.span.col >= 1
    assert "__ANON" not in diag.render(Source("bad.shard", text))
