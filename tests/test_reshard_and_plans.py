"""Reshard planning and the einsum plan search, in the terms of the sharding chapter."""

from __future__ import annotations

from pathlib import Path

import pytest

import shardc
from shardc.lang.layout import Layout
from shardc.passes.reshard import plan_reshard

L = Layout.of


def kinds(src, dst):
    return [(s.kind, s.axes, s.dim) for s in plan_reshard(src, dst)]


@pytest.mark.parametrize("src,dst,expected", [
    (L({"I": ("X",), "J": ()}), L({"I": (), "J": ()}), [("AllGather", ("X",), None)]),
    (L({"I": ("X",), "J": ()}), L({"I": (), "J": ("X",)}), [("AllToAll", ("X",), "J")]),
    (L({"I": (), "J": ()}), L({"I": ("X",), "J": ()}), [("slice", ("X",), None)]),
    (L({"I": (), "J": ()}, {"X"}), L({"I": (), "J": ()}), [("AllReduce", ("X",), None)]),
    (L({"I": (), "J": ()}, {"X"}), L({"I": (), "J": ("X",)}), [("ReduceScatter", ("X",), "J")]),
    (L({"I": ("X", "Y"), "J": ()}), L({"I": ("X",), "J": ()}), [("AllGather", ("Y",), None)]),
    (L({"I": ("X", "Y"), "J": ()}), L({"I": (), "J": ("X", "Y")}),
     [("AllToAll", ("X", "Y"), "J")]),
    (L({"B": ("X",), "D": ("Y",)}), L({"B": (), "D": ()}), [("AllGather", ("X", "Y"), None)]),
])
def test_reshard_rules(src, dst, expected):
    assert kinds(src, dst) == expected


def test_removing_the_outer_axis_is_not_a_gather():
    steps = kinds(L({"I": ("X", "Y")}), L({"I": ("Y",)}))
    assert steps == [("AllGather", ("X", "Y"), None), ("slice", ("Y",), None)]


def test_partial_sums_cannot_be_created():
    assert plan_reshard(L({"I": ("X",)}), L({"I": ()}, {"X"})) is None


def colls(text, **kw):
    r = shardc.compile(text, **kw)
    return [(c.op, "".join(c.axes), c.array) for c in r.ops if c.kind == "collective"]


HEAD = "mesh X=4, Y=2\ndim I=64, J=64, K=64\n"


def test_case1_no_communication():
    assert colls(HEAD + "A: bf16[I_X, J]\nB: bf16[J, K_Y]\nC[I_X, K_Y] = A ·_J B\n") == []


def test_case1_output_follows_inputs():
    r = shardc.compile(HEAD + "A: bf16[I_X, J]\nB: bf16[J, K_Y]\nC = A ·_J B\n")
    assert next(a for a in r.cost.arrays if a.name == "C").layout == "C[I_X, K_Y]"


def test_case2_gathers_by_default_symbolic():
    text = "mesh X\ndim I, J, K\nA: bf16[I, J_X]\nB: bf16[J, K]\nC[I, K] = A ·_J B\n"
    assert colls(text) == [("AllGather", "X", "A")]


def test_case3_allreduce_and_reducescatter():
    text = HEAD + "A: bf16[I, J_X]\nB: bf16[J_X, K]\nC[I, K] = A ·_J B\nD[I, K_X] = A ·_J B\n"
    assert colls(text) == [("AllReduce", "X", "C"), ("ReduceScatter", "X", "D")]


def test_case3_kept_unreduced():
    text = HEAD + "A: bf16[I, J_X]\nB: bf16[J_X, K]\nC[I, K]{U_X} = A ·_J B\n"
    assert colls(text) == []


def test_bare_lhs_reduces_partial_sums():
    text = HEAD + "A: bf16[I, J_X]\nB: bf16[J_X, K]\nC = A ·_J B\n"
    assert colls(text) == [("AllReduce", "X", "C")]


def test_case4_gathers_the_smaller_operand():
    text = ("mesh X=4\ndim I=1024, J=64, K=16\nA: bf16[I_X, J]\nB: bf16[J, K_X]\n"
            "C = A ·_J B\n")
    assert colls(text) == [("AllGather", "X", "B")]
    text2 = ("mesh X=4\ndim I=16, J=64, K=1024\nA: bf16[I_X, J]\nB: bf16[J, K_X]\n"
             "C = A ·_J B\n")
    assert colls(text2) == [("AllGather", "X", "A")]


def test_every_inserted_collective_has_a_reason_naming_the_case():
    r = shardc.compile(HEAD + "A: bf16[I, J_X]\nB: bf16[J, K]\nC[I, K] = A ·_J B\n")
    (c,) = [c for c in r.ops if c.kind == "collective"]
    assert c.reason.startswith("Case 2")


def test_elementwise_reshards_the_cheaper_operand():
    text = HEAD + "A: bf16[I_X, J]\nB: bf16[I, J]\nC = A + B\n"
    r = shardc.compile(text)
    assert colls(text) == []  # B is sliced locally for free
    assert [c.op for c in r.ops] == ["slice", "+"]


def test_nonlinear_function_reduces_partial_sums():
    text = HEAD + "A: bf16[I, J]{U_X}\nC = gelu(A)\n"
    assert colls(text) == [("AllReduce", "X", "A")]


def test_explicit_reshard():
    text = HEAD + "A: bf16[I_X, J]\nB[I, J_X] = A\n"
    assert colls(text) == [("AllToAll", "X", "A")]


def test_explicit_reduce_of_a_contraction_keeps_its_partial_sums():
    text = HEAD + ("A: bf16[I, J_X]\nB: bf16[J_X, K]\nC = AllReduce_X(A ·_J B)\n"
                   "D[I, K_X] = ReduceScatter_{X,K}(A ·_J B)\n")
    assert colls(text) == [("AllReduce", "X", "A·B"), ("ReduceScatter", "X", "A·B")]


def test_linear_functions_keep_partial_sums():
    text = HEAD + "P: f32[I, K]{U_X}\nS[I, K]{U_X} = neg(P)\nT[I, K]{U_X} = copy(P)\n"
    assert colls(text) == []


def test_symbolic_sizes_take_the_book_default_even_with_a_chip():
    """With a chip but symbolic sizes the ranking is by communication: Case 2 gathers."""
    text = "mesh X\ndim I, J, K\nA: bf16[I, J_X]\nB: bf16[J, K]\nC[I, K] = A ·_J B\n"
    assert colls(text, hw="tpu-v5e") == [("AllGather", "X", "A")]


def test_chip_path_is_relative_to_the_program(tmp_path):
    from shardc import hardware

    (tmp_path / "chips").mkdir()
    src = Path(hardware.load("tpu-v5e").path).read_text()
    (tmp_path / "chips" / "mine.toml").write_text(src.replace('name = "tpu-v5e"',
                                                              'name = "mine"'))
    prog = tmp_path / "p.shard"
    prog.write_text('mesh X=2\ndim I=4\nhardware "chips/mine.toml"\nA: bf16[I_X]\n')
    assert shardc.compile(prog).chip.name == "mine"
