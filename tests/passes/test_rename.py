"""Renaming a dimension in a use, `In[B_X, T->S, D]`: attention's keys and values read the
queries' input along S. The rename moves no data: the array is resharded in its own dims (so a
copy already gathered is reused), read with T called S, and its gradient is named back."""

from __future__ import annotations

import numpy as np
import pytest

import shardc
from shardc.driver.api import run_pipeline
from shardc.lang.source import Source
from shardc.tools.simulate import check, random_inputs

ATTENTION = """mesh X=2, Y=4
dim B, T, S, D, K, H
param W_Q: f32[D_X, K_Y, H]
param W_K: f32[D_X, K_Y, H]
param W_V: f32[D_X, K_Y, H]
param W_O: f32[K_Y, H, D_X]
In: f32[B_X, T, D_Y]
Q[B_X, T, K_Y, H] = In[B_X, T, D] ·_D W_Q
Kc[B_X, S, K_Y, H] = In[B_X, T->S, D] ·_D W_K
V[B_X, S, K_Y, H] = In[B_X, T->S, D] ·_D W_V
Sc[B_X, T, S, K_Y] = Q ·_H Kc
Pr = exp(Sc)
Att[B_X, T, K_Y, H] = Pr ·_S V
Out[B_X, T, D_Y] = Att ·_{K,H} W_O
backward
"""
SIZES = {"X": 2, "Y": 4, "B": 4, "T": 8, "S": 8, "D": 8, "K": 4, "H": 2}


def _compiled(text: str = ATTENTION):
    result = run_pipeline(Source("attention", text), bindings=SIZES)
    assert not result.diagnostics.has_errors, result.rendered()
    return result.compiled


def test_the_keys_read_the_gathered_input_of_the_queries():
    """One AllGather of the layer input serves Q, K and V (with a second input array, `Kin`,
    it was gathered twice and kept twice)."""
    prog = _compiled()
    gathers = [
        op
        for op in prog.ops
        if getattr(op, "op", None) == "AllGather"
        and op.out.array == "In"
        and op.span.line < prog.backward_line
    ]
    assert len(gathers) == 1
    (k_proj,) = [op for op in prog.ops if op.out.array == "Kc"]
    assert k_proj.lhs.id == gathers[0].out.id and k_proj.lhs.dims == ("B", "S", "D")


def test_gradients_through_a_rename_equal_the_unsharded_ones():
    """dIn sums the queries' contribution (in T) and the keys' and values' (computed in S,
    named back to T); the mesh simulator checks every gradient against numpy."""
    prog = _compiled(ATTENTION.replace("exp(Sc)", "copy(Sc)"))  # integer inputs: exp overflows
    check(prog, random_inputs(prog, SIZES, np.random.default_rng(5)), SIZES)


def test_the_layer_input_is_kept_once():
    """Block remat keeps the layer input once, sharded as it arrives."""
    r = shardc.compile(ATTENTION, set=SIZES, remat="block")
    assert r.memory.saved == ("In",)
    assert r.value(r.memory.activations) == SIZES["B"] / 2 * SIZES["T"] * SIZES["D"] / 4 * 4


def test_a_rename_alone_is_another_name_for_the_same_blocks():
    r = shardc.compile(
        "mesh X=2\ndim T=8, S=8, D=4\nIn: bf16[T_X, D]\nOut[S_X, D] = copy(In[T->S_X, D])\n"
    )
    assert [op.kind for op in r.ops if op.kind == "collective"] == []


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("In: bf16[T->S, D_X]\n", "S013"),
        ("In: bf16[T, D_X]\nOut[T->S, D] = copy(In)\n", "S013"),
        ("In: bf16[T, D_X]\nOut = copy(In[S->T, D])\n", "S013"),
        ("In: bf16[T, D_X]\nOut = copy(In[T->E, D])\n", "S013"),
        ("Out = copy(In[T->S, D_X])\n", "S013"),
        ("In: bf16[T, D_X]\nOut = copy(In[T->S, D->S])\n", "S006"),
    ],
)
def test_renames_that_cannot_be(text, code):
    with pytest.raises(shardc.CompileError) as info:
        shardc.compile("mesh X=2\ndim T=8, S=8, E=16, D=4\n" + text)
    assert info.value.diagnostics[0].code == code
