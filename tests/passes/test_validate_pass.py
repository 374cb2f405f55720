"""The validate pass: each rule gives its code; valid programs come back resolved."""

from __future__ import annotations

import pytest

from shardc.driver.api import run_pipeline
from shardc.lang.source import Source
from shardc.lang.syntax import Assign


def codes(text: str, **bindings) -> list[str]:
    r = run_pipeline(Source("t.shard", text), bindings=bindings, stop_after="validate")
    return [d.code for d in r.diagnostics.items]


MESH = "mesh X=4, Y=2\ndim I=8, J=16, K=4\n"


@pytest.mark.parametrize(
    "body,code",
    [
        ("C = A ·_J B\n", "N011"),  # undefined array
        ("dim I=9\n", "N006"),  # two sizes
        ("A: bf16[I_X, J_X]\n", "S002"),  # axis used twice
        ("A: bf16[I_Q, J]\n", "S001"),  # unknown axis
        ("A: bf32[I, J]\n", "N007"),  # unknown dtype
        ("A: bf16[I, J_XY]\nB: bf16[K_XY]\n", "S004"),  # 4 not divisible by 8
        ("A: bf16[I, J]\nB: bf16[I, K]\nC = A ·_J B\n", "S009"),  # contraction over a missing dim
        ("A: bf16[I, Q]\n", "N009"),  # undeclared dim
        ("A: bf16[I_X, J]{U_X}\n", "S003"),  # axis shards and is unreduced
        ("A: bf16[I, J]\nC[I] = A\n", "S005"),  # lhs dims mismatch
        ("A: bf16[I, J]\nC = foo(A)\n", "N012"),  # unknown function
        ("A: bf16[I, J]\nB: bf16[J, K]\nC = A + B\n", "S010"),  # cannot broadcast
        ("A: bf16[I, J]\nC = ReduceScatter_X(A)\n", "C001"),  # missing dim
        ("mesh Z=2\n", "N001"),  # mesh twice
        ("A: bf16[I, I]\n", "S006"),  # dim twice
    ],
)
def test_rules(body, code):
    assert code in codes(MESH + body)


def test_axis_and_dim_share_no_name():
    assert "N003" in codes("mesh X=2\ndim X=4\n")


def test_sharding_without_mesh():
    assert "S007" in codes("dim I=4\nA: bf16[I_X]\n")


def test_unknown_set_name():
    assert "N010" in codes(MESH, Q=4)


def test_set_binding_checks_divisibility():
    assert "S004" in codes("mesh X\ndim I=6\nA: bf16[I_X]\n", X=4)
    assert codes("mesh X\ndim I=8\nA: bf16[I_X]\n", X=4) == []


def test_subscripts_resolve_to_axes_and_dims():
    r = run_pipeline(
        Source(
            "t",
            MESH + "A: bf16[I_XY, J]\nB: bf16[J, K]\n"
            "C = AllGather_XY(A)\nE: bf16[I, J, K]\nD = E ·_JK B\n",
        ),
        stop_after="validate",
    )
    assert not r.diagnostics.items
    decl = r.program.statements[2]
    assert decl.layout.dims[0].axes == ("X", "Y")
    gather = r.program.statements[4]
    assert isinstance(gather, Assign) and gather.expr.axes == ("X", "Y")
    contraction = r.program.statements[-1].expr
    assert contraction.dims == ("J", "K")
