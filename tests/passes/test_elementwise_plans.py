"""Elementwise statements plan like contractions: the result may take either operand's layout,
their union, or the statement's request, each operand moved there the cheapest way and the
result moved on to the request (issue "Never worse than XLA": XLA moves a small operand where
shardc used to reshard the large result)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import shardc
from shardc.testing.strategies import layout_text, meshes


def _collectives(r) -> list[tuple[str, str]]:
    return [(op.op, op.src) for op in r.ops if op.kind == "collective"]


def test_a_requested_result_moves_the_small_operand_not_the_result():
    r = shardc.compile(
        "mesh X=2, Y=2\ndim I=1024, J=1024\nhardware tpu-v5e\n"
        "A: f32[I, J]\nb: f32[J_Y]\nC[I, J_X] = A + b\n"
    )
    moved = _collectives(r)
    assert moved and all(src.startswith("b[") for _, src in moved), moved
    assert r.value("comm_bytes") == 4 * 1024  # b gathered whole (4 kB), not C's 4 MB


def test_two_operands_sharded_on_different_dims_meet_in_their_union_for_free():
    r = shardc.compile(
        "mesh X=2, Y=2\ndim I=1024, J=1024\nA: f32[I_X, J]\nB: f32[I, J_Y]\nC = A + B\n"
    )
    assert _collectives(r) == []
    assert r.program.arrays[-1].layout.format("C") == "C[I_X, J_Y]"


def test_an_operand_sharded_less_on_a_dim_slices_to_the_others_axes_for_free():
    """`A[I_YX, K] * B[I_Y, K_Z]`: B's I blocks hold A's (Y leads YX), so both operands slice
    to `[I_YX, K_Z]` and each device computes one block; shardc gathered A over X, XLA slices
    (a statement of the differential test)."""
    r = shardc.compile(
        "mesh X=2, Y=4, Z=2\ndim I=32, K=16\nA: bf16[I_YX, K]\nB: f32[I_Y, K_Z]\nC = A * B\n"
    )
    assert _collectives(r) == []
    assert r.program.arrays[-1].layout.format("C") == "C[I_YX, K_Z]"
    assert r.value("flops_per_device") == 32 * 16 / 16


def test_axes_that_do_not_lead_each_other_are_not_a_union():
    """`[I_XY]` and `[I_Y]`: device (x, y) holds block x*Y + y of I in one, y in the other; no
    local slice turns one into the other, so the operands meet by a collective."""
    r = shardc.compile(
        "mesh X=2, Y=2\ndim I=32, K=16\nA: f32[I_XY, K]\nB: f32[I_Y, K]\nC = A + B\n"
    )
    assert _collectives(r)


@st.composite
def _statement(draw):
    mesh = draw(meshes(max_devices=8))
    n = mesh.devices
    a = draw(layout_text(("I", "K"), mesh))
    other = draw(st.sampled_from([("b", ("K",)), ("B", ("I", "K"))]))
    b = draw(layout_text(other[1], mesh))
    req = draw(layout_text(("I", "K"), mesh))
    op = draw(st.sampled_from(["+", "-", "*"]))
    head = (
        f"{mesh.decl()}\ndim I={256 * n}, K={512 * n}\nhardware tpu-v5e\n"
        f"A: f32{a}\n{other[0]}: f32{b}\n"
    )
    return head, f"A {op} {other[0]}", req


@settings(max_examples=60, deadline=None)
@given(_statement())
def test_weighing_the_request_never_costs_more_than_resharding_the_result(case):
    """`C[req] = A + b` communicates no more than `T = A + b; C[req] = T` (the old plan: align
    ignoring the request, then move the result)."""
    head, expr, req = case
    direct = shardc.compile(f"{head}C{req} = {expr}\n")
    after = shardc.compile(f"{head}T = {expr}\nC{req} = T\n")
    assert direct.value("t_comms_s") <= after.value("t_comms_s") * (1 + 1e-9) + 1e-15
    assert direct.program.arrays[-1].layout == after.program.arrays[-1].layout
