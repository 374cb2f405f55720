"""The `derive-backward` pass's rules, from its own module (`shardc.passes.backward`): each
function's derivative in its table is the derivative (against central differences of the
simulator's numpy functions), the written statements follow the training chapter's Appendix B
(dX = dY * f'(X), dA = dC ·_(B's own dims) B, dB = A ·_(A's own dims) dC, dW in W's layout),
and a forward pass whose last layout is inferred is refused (K012). The prose the lowering gives
each collective (`shardc.passes.lower.explain`) closes the file."""

from __future__ import annotations

import numpy as np
import pytest

from shardc.lang.diagnostics import Diagnostics
from shardc.lang.layout import Layout
from shardc.lang.parser import parse
from shardc.lang.source import Source
from shardc.lang.syntax import ArrayDecl, Assign, Backward, Binary, Call, Contract, Ref
from shardc.passes.backward import DERIVATIVES, backward_line, derive_backward
from shardc.passes.context import Context
from shardc.passes.ir import Value
from shardc.passes.lower.explain import case_reason, describe_step, describe_steps, step_text
from shardc.passes.reshard import Step
from shardc.tools.simulate_machine import UNARY_FUNCTIONS

MLP = (
    "mesh X=2\ndim B=8, D=4, F=6\nIn: bf16[B_X, D]\nparam W: bf16[D, F]\n"
    "H[B_X, F] = gelu(In ·_D W)\nbackward\n"
)


@pytest.mark.parametrize(("f", "df"), sorted(DERIVATIVES.items()))
def test_each_derivative_is_the_derivative(f, df):
    x = np.concatenate([np.linspace(-3, -0.1, 40), np.linspace(0.1, 3, 40)])  # relu: not at 0
    h = 1e-6
    numeric = (UNARY_FUNCTIONS[f](x + h) - UNARY_FUNCTIONS[f](x - h)) / (2 * h)
    assert np.allclose(UNARY_FUNCTIONS[df](x), numeric, rtol=1e-5, atol=1e-6)


def _derived(text: str) -> tuple[dict[str, object], Context]:
    source = Source("t.shard", text)
    program = parse(source, Diagnostics())
    assert program is not None and backward_line(program) == text.count("\n")
    ctx = Context(source)
    out = derive_backward(program, ctx)
    assert not any(isinstance(s, Backward) for s in out.statements) or ctx.diagnostics.items
    return {getattr(s, "target", getattr(s, "name", "")): s for s in out.statements}, ctx


def test_the_backward_of_a_layer_follows_the_rules():
    by, ctx = _derived(MLP)
    assert not ctx.diagnostics.items
    seed = by["dH"]
    assert isinstance(seed, ArrayDecl) and seed.layout == Layout.of({"B": ("X",), "F": ()})
    grad = by["gelu_grad_In_W_1"]
    assert isinstance(grad, Assign) and grad.expr == Call("gelu_grad", (Ref("In_W"),))
    assert by["dIn_W"].expr == Binary("*", Ref("dH"), Ref("gelu_grad_In_W_1"))
    d_in, d_w = by["dIn"], by["dW"]
    assert d_in.expr == Contract(Ref("dIn_W"), Ref("W"), ("F",))  # W's own dim F
    assert d_w.expr == Contract(Ref("In"), Ref("dIn_W"), ("B",))  # In's own dim B
    assert d_w.layout == by["W"].layout  # a parameter's gradient is sharded like it
    assert d_in.layout == by["In"].layout


def test_a_program_without_backward_is_returned_as_it_is():
    source = Source("t.shard", MLP.removesuffix("backward\n"))
    program = parse(source, Diagnostics())
    assert backward_line(program) is None
    assert derive_backward(program, Context(source)) == program


def test_an_inferred_last_layout_is_refused():
    _, ctx = _derived(MLP.replace("H[B_X, F] =", "H ="))
    assert [d.code for d in ctx.diagnostics.items] == ["K012"]


A = Layout.of({"I": ("X",), "J": ()})
WHOLE = Layout.of({"I": (), "J": ()})


def test_each_step_in_words():
    gather = Step("AllGather", ("X",), None, A, WHOLE)
    assert describe_step(gather, "A", ("X",)) == "AllGather_X removes X from A[I_X, J]"
    move = Step("AllToAll", ("X",), "J", A, Layout.of({"I": (), "J": ("X",)}))
    assert describe_step(move, "A", ("X",)) == "AllToAll_{X,J} moves X to J"
    reduce = Step("AllReduce", ("Y",), None, WHOLE.with_unreduced({"Y"}), WHOLE)
    assert describe_step(reduce, "C", ("Y",)) == "AllReduce_Y sums the partial sums over Y"
    assert (
        step_text(gather, "A") == "AllGather_X(A)" and step_text(move, "A") == "AllToAll_{X,J}(A)"
    )
    assert step_text(Step("slice", ("X",), None, WHOLE, A), "B") == "slice B over X"
    assert describe_steps((gather,), (), (reduce,), "A", "W", "C") == (
        "AllGather_X(A), local einsum, AllReduce_Y(C)"
    )


def test_a_step_on_the_way_to_the_result_names_the_requested_layout():
    # C[I, K] computed as C[I, K_X], then moved: the gather's reason is the request, not the
    # layout it passes through on the way.
    lhs = Value("a", "A", "f32", Layout.of({"I": (), "J": ()}))
    rhs = Value("b", "B", "f32", Layout.of({"J": (), "K": ("X",)}))
    local = Layout.of({"I": (), "K": ("X",)})
    middle = Layout.of({"I": ("X",), "K": ()})
    final = Layout.of({"I": ("Y", "X"), "K": ()})
    move = Step("AllToAll", ("X",), "I", local, middle)
    why = case_reason(lhs, rhs, ("J",), "out", "C", ("X", "Y"), final)
    assert why(move) == "the result C[I_YX, K] is requested"
    assert case_reason(lhs, rhs, ("J",), "out", "C", ("X", "Y"))(move) == (
        "the result C[I_X, K] is requested"
    )
