"""The parts of the lowering (passes/lower/): one classifier of the four cases, one home for the
layout rules of the collectives, and the re-export at the pass's old path."""

from __future__ import annotations

import itertools

import pytest

from shardc.lang.layout import Layout
from shardc.passes.einsum_plan import book_roles, case_label, classify_axis
from shardc.passes.reshard import Refusal, plan_reshard, transfer

L = Layout.of


@pytest.mark.parametrize(
    "lhs,rhs,contract,label,kinds",
    [
        # The sharding chapter's four cases, one axis X each, for A[I, J] ·_J B[J, K].
        (L({"I": ("X",), "J": ()}), L({"J": (), "K": ()}), ("J",), "Case 1", ["one-free"]),
        (L({"I": (), "J": ("X",)}), L({"J": (), "K": ()}), ("J",), "Case 2", ["one-contracted"]),
        (
            L({"I": (), "J": ("X",)}),
            L({"J": ("X",), "K": ()}),
            ("J",),
            "Case 3",
            ["same-contracted"],
        ),
        (L({"I": ("X",), "J": ()}), L({"J": (), "K": ("X",)}), ("J",), "Case 4", ["both-free"]),
        # A batch dim sharded alike is kept, as in Case 1; two contracted dims are Case 2 twice.
        (L({"B": ("X",), "J": ()}), L({"B": ("X",), "J": ()}), ("J",), "Case 1", ["same-free"]),
        (
            L({"I": ("X",), "J": ()}),
            L({"I": (), "J": ("X",)}),
            ("I", "J"),
            "Case 2",
            ["both-contracted"],
        ),
        (
            L({"I": ("X",), "J": ("Y",)}),
            L({"J": ("Y",), "K": ()}),
            ("J",),
            "Case 1+3",
            ["one-free", "same-contracted"],
        ),
    ],
)
def test_one_classifier_of_the_four_cases(lhs, rhs, contract, label, kinds):
    axes = sorted(set(lhs.sharding_axes) | set(rhs.sharding_axes))
    assert [classify_axis(a, lhs, rhs, contract).kind for a in axes] == kinds
    assert case_label(lhs, rhs, contract) == label


def test_the_books_roles_per_case():
    lhs, rhs = L({"I": ("X",), "J": ("Y",)}), L({"J": ("Z",), "K": ("X",)})
    roles = {a: book_roles(classify_axis(a, lhs, rhs, ("J",))) for a in "XYZW"}
    # X: Case 4, keep either; Y, Z: Case 2, gather that operand (the other does not use it).
    assert roles == {"X": {"I", "K"}, "Y": {None}, "Z": {None}, "W": None}
    c = classify_axis("Y", lhs, rhs, ("J",))
    assert (c.contracted_side, c.contracted_dim) == ("lhs", "J")


def _layouts(dims=("I", "J"), axes=("X", "Y")):
    """Every layout of `dims` over `axes`: each axis on a dim (in either order), as partial
    sums, or unused."""
    out = set()
    for places in itertools.product((*dims, "U", None), repeat=len(axes)):
        for order in itertools.permutations(axes):
            spec = {d: tuple(a for a in order if places[axes.index(a)] == d) for d in dims}
            out.add(L(spec, {a for a, p in zip(axes, places, strict=True) if p == "U"}))
    return sorted(out, key=repr)


def test_the_planner_takes_its_steps_from_the_layout_rules():
    """Every collective the reshard planner emits is `transfer` applied to its source."""
    seen = 0
    for src, dst in itertools.product(_layouts(), repeat=2):
        for s in plan_reshard(src, dst) or ():
            if s.kind not in ("slice", "CollectivePermute"):
                assert transfer(s.src, s.kind, s.axes, s.dim) == s.dst, (src, dst, s)
                seen += 1
    assert seen > 100


@pytest.mark.parametrize(
    "kind,axes,dim,refusal",
    [
        ("AllGather", ("Z",), None, Refusal("not-sharded", ("Z",))),
        ("AllGather", ("X",), None, Refusal("not-innermost", ("X",), "I")),
        ("AllReduce", ("Y", "W"), None, Refusal("no-partial-sums", ("Y", "W"))),
        ("ReduceScatter", ("Y",), "J", Refusal("no-partial-sums", ("Y",))),
        ("AllToAll", ("Z",), "J", Refusal("wrong-source", ("Z",), "J")),
        ("AllToAll", ("X",), "J", Refusal("not-innermost", ("X",), "I")),
    ],
)
def test_explicit_collectives_break_named_rules(kind, axes, dim, refusal):
    lay = L({"I": ("X", "Y"), "J": ()}, {"Z"})
    assert transfer(lay, kind, axes, dim) == refusal


def test_the_pass_is_the_walk_and_it_inserts_the_cases_collectives():
    """`insert-collectives` runs `passes.lower.walk.insert_collectives`; on the sharding
    chapter's Case 3 (both operands shard the contracted dim) it inserts the AllReduce."""
    from shardc.lang.source import Source
    from shardc.passes import lower
    from shardc.passes.context import Context
    from shardc.passes.lower import walk
    from shardc.passes.pipeline import run_passes

    assert lower.insert_collectives is walk.insert_collectives
    text = "mesh X=2\ndim I=8, J=8, K=8\nA: bf16[I, J_X]\nB: bf16[J_X, K]\nC[I, K] = A ·_J B\n"
    unit = run_passes(Context(Source("t.shard", text)), stop_after="insert-collectives")
    kinds = [(type(op).__name__, getattr(op, "op", "")) for op in unit.compiled.ops]
    assert kinds[-2:] == [("Einsum", ""), ("Collective", "AllReduce")]
    assert unit.compiled.ops[-1].reason.startswith("Case 3")


ATTENTION_STEP = """\
mesh X=2
dim B={b}, T=8, S=8, D={d}, F={f}
In: bf16[B, T, D{d_x}]
param WQ: bf16[D, F]
param WK: bf16[D, F]
Q = In ·_D WQ
Kc = In[B, T->S, D{d_x}] ·_D WK
Logits = Q ·_F Kc
Out[B{out}, T, S] = tanh(Logits)
backward
"""


@pytest.mark.parametrize(
    "sizes,out,moves",
    [
        # Nothing sharded: no term of dIn slices its operands over the idle X to halve its
        # FLOPs and leave the sum a gather (XLA's partitioner moves nothing; it was "XLA
        # cheaper" under shardc's own model).
        ((8, 8, 8, ""), "", []),
        # dQ and dKc sharded over X by the output: each term stays sharded and the sum of the
        # two is gathered once (gathering each term before the sum moved twice the bytes).
        ((8, 8, 32, ""), "_X", [("AllGather", "dIn_2+dIn_3")]),
        # In sharded over D, the output over B: the terms, computed B_X, are summed and the
        # sum AllToAll'd to D_X once (each term's AllToAll made XLA's two gathers cheaper).
        ((16, 4, 4, "_X"), "_X", [("AllToAll", "dIn_2+dIn_3")]),
    ],
)
def test_a_gradients_terms_leave_the_sum_one_move_it_needs(sizes, out, moves):
    import shardc

    b, d, f, d_x = sizes
    text = ATTENTION_STEP.format(b=b, d=d, f=f, d_x=d_x, out=out)
    r = shardc.compile(text, name="attention.shard")
    got = [(c.op, c.array) for c in r.ops if c.kind == "collective" and c.array.startswith("dIn")]
    assert got == moves


def test_a_term_that_inherits_its_sharding_leaves_the_gather_to_the_sum():
    """A draw of the random-program test's 1,000 (WQ sharded over F, the output over B): the
    terms of dIn hold B_X from dKc and dQ without slicing, so each is ranked without the
    sum's gather and the sum is gathered once. Charging the first term its gather made it
    gather dKc instead, and the second kept partial sums: a 134 MB AllReduce of dIn."""
    import shardc

    text = (
        "mesh X=4\ndim B=64, T=1024, S=1024, D=1024, F=8\nIn: bf16[B, T, D]\n"
        "param WQ: bf16[D, F_X]\nparam WK: bf16[D, F]\nQ = In ·_D WQ\n"
        "Kc = In[B, T->S, D] ·_D WK\nLogits = Q ·_F Kc\nOut[B_X, T, S] = gelu(Logits)\n"
        "backward\n"
    )
    r = shardc.compile(text, name="attention.shard")
    got = [(c.op, c.array) for c in r.ops if c.kind == "collective" and c.array.startswith("dIn")]
    assert got == [("AllGather", "dIn_2+dIn_3")]
