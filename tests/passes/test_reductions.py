"""Reductions in the language: `Sum_{D}(A)`, `Max_{D}(A)` and `softmax_{S}(A)`, with the
collectives a sharded reduced dimension needs, checked on the mesh simulator."""

from __future__ import annotations

import numpy as np
import pytest

import shardc
from shardc.driver.api import run_pipeline
from shardc.lang.source import Source
from shardc.tools.simulate import check, random_inputs

PROGRAM = """mesh X=2, Y=2
dim B=4, T=4, S=8, K=2
Sc: f32[B_X, T, S_Y, K]
P = softmax_{S}(Sc)
M = Max_{S}(Sc)
Z[B_X, T, K] = Sum_{S}(Sc)
U[B_X, T, K]{U_Y} = Sum_{S}(Sc)
"""
SIZES = {"X": 2, "Y": 2, "B": 4, "T": 4, "S": 8, "K": 2}


def _run(name: str, text: str, sizes: dict[str, int], seed: int, simulate: bool = True):
    """Compile `text`, draw normal inputs, run the sharded program on the mesh simulator when
    `simulate`, and return (the inputs, the reference values by array name)."""
    from shardc.tools.simulate import reference

    result = run_pipeline(Source(name, text))
    assert not result.diagnostics.has_errors, result.rendered()
    prog = result.compiled
    rng = np.random.default_rng(seed)
    inputs = {k: rng.normal(size=v.shape) for k, v in random_inputs(prog, sizes, rng).items()}
    if simulate:
        check(prog, inputs, sizes)
    values = reference(prog, inputs, sizes)
    return inputs, {op.out.array: values[op.out.id] for op in prog.ops}


def _numeric_gradient(loss, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """The gradient of `loss` at `x` by central differences, element by element."""
    numeric = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        numeric[i] = (loss(x + d) - loss(x - d)) / (2 * eps)
    return numeric


def _ops(line: int, prog) -> list[str]:
    return [
        getattr(op, "op", type(op).__name__)
        + ("(max)" if getattr(op, "combine", "sum") == "max" else "")
        for op in prog.ops
        if op.span.line == line
    ]


def test_collectives_of_a_sharded_reduction():
    """S is sharded over Y: the softmax combines the row maxima (an AllReduce of the maximum)
    and the row sums (an AllReduce); Max needs the first, Sum the second unless the left-hand
    side keeps the partial sums."""
    result = run_pipeline(Source("red", PROGRAM))
    assert not result.diagnostics.has_errors, result.rendered()
    prog = result.compiled
    assert _ops(4, prog) == [
        "Reduction",
        "AllReduce(max)",
        "Elementwise",
        "Elementwise",
        "Reduction",
        "AllReduce",
        "Elementwise",
    ]
    assert _ops(5, prog) == ["Reduction", "AllReduce(max)"]
    assert _ops(6, prog) == ["Reduction", "AllReduce"]
    assert _ops(7, prog) == ["Reduction"]
    check(prog, random_inputs(prog, SIZES, np.random.default_rng(2)), SIZES)


def test_an_unsharded_softmax_moves_nothing():
    r = shardc.compile(PROGRAM.replace("S_Y", "S").split("U[")[0])
    assert not [c for c in r.ops if c.kind == "collective" and c.line == 4]


ATTENTION = """mesh X=2, Y=2
dim B=4, T=4, S=4, D=4, K=2, H=2
In: f32[B_X, T, D_Y]
param W_Q: f32[D_X, K_Y, H]
param W_K: f32[D_X, K_Y, H]
param W_V: f32[D_X, K_Y, H]
param W_O: f32[K_Y, H, D_X]
Q[B_X, T, K_Y, H] = In[B_X, T, D] ·_D W_Q
Kc[B_X, S, K_Y, H] = In[B_X, T->S, D] ·_D W_K
V[B_X, S, K_Y, H] = In[B_X, T->S, D] ·_D W_V
Sc[B_X, T, S, K_Y] = Q ·_H Kc
Pr = softmax_{S}(Sc)
Att[B_X, T, K_Y, H] = Pr ·_S V
Out[B_X, T, D_Y] = Att ·_{K,H} W_O
backward
"""


def test_softmax_backward_simulates_and_keeps_the_probabilities():
    """dSc = P * (dP - Sum_S(dP * P)): the backward pass reads the probabilities only."""
    result = run_pipeline(Source("attention", ATTENTION))
    assert not result.diagnostics.has_errors, result.rendered()
    prog = result.compiled
    sizes = {"X": 2, "Y": 2, "B": 4, "T": 4, "S": 4, "D": 4, "K": 2, "H": 2}
    inputs = {k: v / 4 for k, v in random_inputs(prog, sizes, np.random.default_rng(4)).items()}
    check(prog, inputs, sizes)
    r = shardc.compile(ATTENTION)
    assert "Pr" in r.memory.saved and "Sc" not in r.memory.saved


def test_softmax_gradient_is_the_derivative():
    """The derived dSc against a finite difference of sum(dPr * softmax(Sc)) in numpy."""
    text = """mesh X=2
dim T=4, S=5, R=5
Sc: f32[T_X, R]
param W: f32[R, S]
A = Sc ·_R W
Pr[T_X, S] = softmax_{S}(A)
backward
"""
    inputs, values = _run("sm", text, {"X": 2, "T": 4, "S": 5, "R": 5}, 0, simulate=False)
    a, g = values["A"], inputs["dPr"]

    def loss(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return float(np.sum(g * e / e.sum(axis=1, keepdims=True)))

    assert np.allclose(values["dA"], _numeric_gradient(loss, a), atol=1e-6)


@pytest.mark.parametrize("attention", ["materialized", "flash"])
def test_flash_attention_keeps_the_softmax_on_chip(attention):
    r = shardc.compile(ATTENTION.replace("f32", "bf16"), hw="tpu-v5p", attention=attention)
    hbm = sum(r.value(c.hbm_bytes) for c in r.ops if c.kind != "collective")
    assert hbm > 0
    if attention == "flash":
        base = shardc.compile(ATTENTION.replace("f32", "bf16"), hw="tpu-v5p")
        assert hbm < sum(base.value(c.hbm_bytes) for c in base.ops if c.kind != "collective")


def test_gradients_of_a_sum_and_of_broadcast_operands():
    """N = Sum_F(H * g), Out = H * g - N: the backward pass copies dN along F (the gradient of
    a sum) and sums the broadcast operand's contributions over the dims it lacks; the derived
    dg and dH against finite differences of sum(dOut * Out), and the sharded run on the mesh
    simulator."""
    text = """mesh X=2, Y=2
dim B=4, D=4, F=8
In: f32[B_X, D]
param W: f32[D, F_Y]
param g: f32[F_Y]
H = In ·_D W
G = H * g
N[B_X] = Sum_{F}(G)
Out[B_X, F_Y] = G - N
backward
"""
    inputs, values = _run("bc", text, {"X": 2, "Y": 2, "B": 4, "D": 4, "F": 8}, 1)
    h, gain, seed = values["H"], inputs["g"], inputs["dOut"]

    def loss(h, gain):
        gg = h * gain
        return float(np.sum(seed * (gg - gg.sum(axis=1, keepdims=True))))

    for name, x, at in (("dg", gain, lambda v: loss(h, v)), ("dH", h, lambda v: loss(v, gain))):
        assert np.allclose(values[name], _numeric_gradient(at, x), atol=1e-6), name


MAX_BACKWARD = """mesh X=2, Y=2
dim T=4, S=6, R=5
Sc: f32[T_X, R]
param W: f32[R, S_Y]
A = Sc ·_R W
M[T_X] = Max_{S}(A)
backward
"""


def test_max_gradient_is_the_derivative():
    """dA of Max_S(A): dM copied onto the position of each row's maximum, 0 elsewhere, against a
    finite difference in numpy (random values: no ties); S is sharded, so the maximum and its
    mask cross devices, and the simulator runs the sharded program."""
    inputs, values = _run("max", MAX_BACKWARD, {"X": 2, "Y": 2, "T": 4, "S": 6, "R": 5}, 1)
    a, g = values["A"], inputs["dM"]

    def loss(x):
        return float(np.sum(g * x.max(axis=1)))

    assert np.allclose(values["dA"], _numeric_gradient(loss, a), atol=1e-6)
    r = shardc.compile(MAX_BACKWARD)
    assert "M" in r.memory.saved  # the mask reads the maximum, kept from the forward pass
