"""The parts of the lowering, each a function of the one lowering state
(`shardc.passes.lower.state.LoweringState`): a value brought to a layout with each step's reason
(`.resharding`), an elementwise function in its operand's layout (`.elementwise`), an explicit
collective checked against the layout rules (`.explicit`), and a contraction planned and emitted
(`.contract`). The walk over a whole program is tests/passes/test_lowering.py's."""

from __future__ import annotations

from shardc.lang.diagnostics import Diagnostics
from shardc.lang.layout import Layout
from shardc.lang.parser import parse
from shardc.lang.source import NO_SPAN, Source
from shardc.passes.context import Context
from shardc.passes.ir import Collective, Einsum, Elementwise, Value
from shardc.passes.lower import contract, elementwise, explicit, resharding
from shardc.passes.lower.state import LoweringState

L = Layout.of


def _state(text: str = "") -> LoweringState:
    st = LoweringState(Context(Source("t.shard", text)))
    st.mesh, st.dims = {"X": 2, "Y": 2}, {"I": 8, "J": 8, "K": 8}
    return st


def _expr(text: str):
    program = parse(Source("t.shard", text), Diagnostics())
    return program.statements[-1].expr


def _codes(st: LoweringState) -> list[str]:
    return [d.code for d in st.ctx.diagnostics.items]


A = Value("A", "A", "bf16", L({"I": ("X",), "J": ()}))


def test_a_value_brought_to_a_layout_step_by_step():
    st = _state()
    out = resharding.reshard(st, A, L({"I": (), "J": ()}), NO_SPAN, "requested")
    assert out is not None and out.layout == L({"I": (), "J": ()})
    assert [(type(op).__name__, op.op, op.reason) for op in st.ops] == [
        ("Collective", "AllGather", "requested: AllGather_X removes X from A[I_X, J]")
    ]
    assert resharding.reshard(st, A, A.layout, NO_SPAN, "no move") is A and len(st.ops) == 1
    assert resharding.reshard(st, A, A.layout.with_unreduced({"Y"}), NO_SPAN, "x") is None
    assert _codes(st) == ["C004"]  # no collective makes partial sums


def test_an_elementwise_function_keeps_its_operands_layout():
    st = _state()
    out = elementwise.unary(st, "exp", A, NO_SPAN)
    assert out is not None and out.layout == A.layout and out.dtype == "bf16"
    assert isinstance(st.ops[-1], Elementwise) and st.ops[-1].fn == "exp"
    assert elementwise.unary(st, "exp", None, NO_SPAN) is None


def test_an_explicit_collective_follows_the_rules_or_says_which_it_breaks():
    st = _state()
    out = explicit.explicit_collective(st, _expr("C = AllGather_X(A)\n"), A)
    assert out is not None and out.layout == L({"I": (), "J": ()})
    emitted = st.ops[-1]
    assert isinstance(emitted, Collective) and emitted.explicit
    assert emitted.reason == "explicit AllGather_X in the program"
    assert explicit.explicit_collective(st, _expr("C = AllGather_Y(A)\n"), A) is None
    assert _codes(st) == ["C005"]  # Y shards no dim of A


def test_a_contraction_of_the_third_case_ends_in_an_allreduce():
    st = _state()
    st.mesh = {"X": 2}
    lv = Value("A", "A", "bf16", L({"I": (), "J": ("X",)}))
    rv = Value("B", "B", "bf16", L({"J": ("X",), "K": ()}))
    out = contract.contract(st, _expr("C = A ·_J B\n"), lv, rv, L({"I": (), "K": ()}), "C", None)
    assert out is not None and out.layout == L({"I": (), "K": ()})
    assert [type(op).__name__ for op in st.ops] == ["Einsum", "Collective"]
    assert isinstance(st.ops[0], Einsum) and st.ops[1].op == "AllReduce"
    assert st.ops[1].reason.startswith("Case 3")
