"""The `fuse-elementwise` pass: ops grouped as XLA fuses them on each backend, and a group's
HBM bytes counted once (passes/fusion.py, docs/cost-model.md "Fusion")."""

from __future__ import annotations

import dataclasses

import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings

import shardc
from shardc.lang.source import Source
from shardc.passes.context import Context
from shardc.passes.derive_cost import derive_cost
from shardc.passes.fusion import fuse_elementwise
from shardc.passes.pipeline import PIPELINE, FuseElementwise, run_passes
from shardc.testing.strategies import programs

DIMS = "dim I=1024, J=2048, K=4096\n"


def _report(body: str, hw: str = "h200"):
    return shardc.compile(DIMS + body, hw=hw)


def _fused(r) -> dict[str, object]:
    """op name -> the op it fused into (None: alone or a root), and each root's fusion kind."""
    return {c.op: (c.fused_into, c.fusion) for c in r.ops}


def _bytes(r) -> float:
    return r.value(r.totals["hbm_bytes"])


def _unfused_bytes(body: str, hw: str = "h200") -> float:
    passes = tuple(
        FuseElementwise(enabled=False) if isinstance(p, FuseElementwise) else p for p in PIPELINE
    )
    ctx = Context(
        Source("<t>", DIMS + body),
        options=dataclasses.replace(Context(Source("", "")).options, hw=hw),
    )
    unit = run_passes(ctx, passes)
    assert unit.cost is not None and unit.fusion is None
    sizes = {sp.Symbol(n, positive=True, integer=True): v for n, v in unit.compiled.dims}
    return float(unit.cost.totals["hbm_bytes"].subs(sizes))


def test_the_pass_is_in_the_pipeline_before_the_costs() -> None:
    names = [p.name for p in PIPELINE]
    assert (
        names.index("insert-collectives")
        < names.index("fuse-elementwise")
        < names.index("derive-cost")
    )


def test_an_elementwise_chain_is_one_loop() -> None:
    body = "A: bf16[I, J]\nB: bf16[I, J]\nC = exp(silu(A) * B)\n"
    r = _report(body)
    kinds = _fused(r)
    root = [c for c in r.ops if c.op == "exp"][0].index
    assert kinds["silu"] == (root, "") and kinds["*"] == (root, "")
    assert kinds["exp"] == (None, "loop")
    # read A and B, write C: three arrays of I*J bf16 where the ops alone move seven
    assert _bytes(r) == 3 * 1024 * 2048 * 2
    assert _unfused_bytes(body) == 7 * 1024 * 2048 * 2


def test_silu_times_b_prices_three_passes_not_five() -> None:
    body = "A: bf16[I, J]\nB: bf16[I, J]\nC = silu(A) * B\n"
    assert _bytes(_report(body)) / (1024 * 2048 * 2) == 3
    assert _unfused_bytes(body) / (1024 * 2048 * 2) == 5


def test_a_reduction_fuses_its_producers_and_is_a_boundary_after() -> None:
    r = _report("A: bf16[I, J]\nS = Sum_{J}(exp(A))\nT = exp(S)\n")
    before, total, after = r.ops
    assert (before.op, total.op, after.op) == ("exp", "sum_J", "exp")
    assert before.fused_into == total.index and total.fusion == "input"
    # exp(S) reads the sum only, not what was summed: no diamond, its own kernel
    assert after.fused_into is None and after.fusion == ""


def test_softmax_is_one_kernel() -> None:
    r = _report("X: bf16[I, J]\nP = softmax_{J}(X)\n")
    roots = [c for c in r.ops if c.fused_into is None]
    assert len(roots) == 1 and roots[0].fusion == "input"
    assert _bytes(r) == 2 * 1024 * 2048 * 2  # read X, write P


def test_a_collective_is_a_boundary() -> None:
    r = shardc.compile(
        "mesh X=8\n" + DIMS + "A: bf16[I_X, J]\nE = exp(A)\nG[I, J] = E\nC = silu(G)\n", hw="h200"
    )
    ops = {c.op: c for c in r.ops}
    assert "AllGather" in ops
    assert ops["exp"].fused_into is None and ops["silu"].fused_into is None


@pytest.mark.parametrize(
    ("hw", "fn", "fused"),
    [
        ("h200", "relu", True),
        ("h200", "gelu", True),
        ("h200", "silu", False),
        ("h200", "exp", False),
        ("tpu-v5p", "silu", True),
        ("tpu-v5p", "exp", True),
    ],
)
def test_matmul_epilogue_per_backend(hw: str, fn: str, fused: bool) -> None:
    """GPU: cuBLASLt epilogues only (relu, gelu, a bias); TPU: any elementwise consumer."""
    r = _report(f"A: bf16[I, J]\nB: bf16[J, K]\nC = {fn}(A ·_J B)\n", hw)
    ops = {c.op: c for c in r.ops}
    assert (ops[fn].fused_into == ops["einsum"].index) is fused
    assert (ops["einsum"].fusion == "output") is fused


@pytest.mark.parametrize(("hw", "fused"), [("h200", True), ("tpu-v5p", True)])
def test_a_bias_and_an_activation_fuse_into_the_product(hw: str, fused: bool) -> None:
    r = _report(
        "A: bf16[I, J]\nB: bf16[J, K]\nbias: bf16[K]\nT = A ·_J B\nC = relu(T + bias)\n", hw
    )
    ops = {c.op: c for c in r.ops}
    mm = ops["einsum"].index
    assert ops["+"].fused_into == mm and ops["relu"].fused_into == mm


def test_a_gpu_product_takes_no_prologue_and_a_tpu_product_does() -> None:
    body = "A: bf16[I, J]\nB: bf16[J, K]\nC = exp(A) ·_J B\n"
    gpu = {c.op: c for c in _report(body, "h200").ops}
    tpu = {c.op: c for c in _report(body, "tpu-v5p").ops}
    assert gpu["exp"].fused_into is None
    assert tpu["exp"].fused_into == tpu["einsum"].index


def test_two_products_never_share_a_group() -> None:
    r = _report(
        "A: bf16[I, J]\nB: bf16[J, K]\nW: bf16[K, J]\nT = A ·_J B\nC = exp(T) ·_K W\n", "tpu-v5p"
    )
    roots = {c.fused_into for c in r.ops if c.fused_into is not None}
    for root in roots:
        members = [c for c in r.ops if c.fused_into == root or c.index == root]
        assert sum(c.kind == "einsum" for c in members) <= 1


def test_a_value_read_outside_the_group_is_written() -> None:
    """On a GPU silu(A) is read by a product (no prologue) and an add: fused into neither,
    written once. Read by two elementwise ops, all three are one loop writing both results."""
    r = _report(
        "A: bf16[I, J]\nB: bf16[I, J]\nW: bf16[J, K]\nS = silu(A)\nC = S ·_J W\nD = S + B\n"
    )
    silu = [c for c in r.ops if c.op == "silu"][0]
    assert silu.fused_into is None and silu.fusion == ""
    r = _report("A: bf16[I, J]\nB: bf16[I, J]\nS = silu(A)\nC = S * B\nD = S + B\n")
    assert [c.fused_into for c in r.ops] == [4, 4, None]
    assert _bytes(r) == 4 * 1024 * 2048 * 2  # read A, B; write C, D


def test_a_group_is_priced_once_at_its_root() -> None:
    """`fused_costs` over the ops' own costs: the root carries the group's bytes (read A and B,
    write C), the members none, and each op keeps its FLOPs."""
    from shardc.passes.fusion_cost import fused_costs

    ctx = Context(Source("<t>", DIMS + "A: bf16[I, J]\nB: bf16[I, J]\nC = exp(silu(A) * B)\n"))
    unit = run_passes(ctx)
    alone = derive_cost(unit.compiled, ctx)
    fusion = fuse_elementwise(unit.compiled, "gpu")
    fused = fused_costs(list(alone.ops), unit.compiled, fusion, alone.symbols, False)
    (group,) = fusion.groups
    sizes = {sp.Symbol(n, positive=True, integer=True): v for n, v in unit.compiled.dims}
    for before, after in zip(alone.ops, fused, strict=True):
        assert after.flops == before.flops
        if after.index == group.root:
            assert after.fusion == "loop" and after.fused_into is None
            assert after.hbm_bytes.subs(sizes) == 3 * 1024 * 2048 * 2
        else:
            assert after.fused_into == group.root and after.hbm_bytes == 0 and after.time == 0
    assert [c.hbm_bytes for c in fused] == [
        c.hbm_bytes for c in derive_cost(unit.compiled, ctx, fusion).ops
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_fusion_never_adds_bytes_or_changes_flops(prog) -> None:
    text, _ = prog
    unit = run_passes(Context(Source("<p>", text)))
    if unit.compiled is None or unit.cost is None:
        return
    ctx = Context(Source("<p>", text))
    sizes = {
        sp.Symbol(n, positive=True, integer=True): v
        for n, v in (*unit.compiled.dims, *unit.compiled.mesh)
        if v is not None
    }
    alone = derive_cost(unit.compiled, ctx)
    for backend in ("gpu", "tpu", "none"):
        fusion = fuse_elementwise(unit.compiled, backend)
        fused = derive_cost(unit.compiled, ctx, fusion)
        for key in ("flops", "flops_per_device"):
            assert sp.expand(fused.totals[key] - alone.totals[key]) == 0
        before = float(alone.totals["hbm_bytes"].subs(sizes))
        after = float(fused.totals["hbm_bytes"].subs(sizes))
        assert after <= before * (1 + 1e-12)
        for g in fusion.groups:
            assert sum(unit.compiled.ops[i].__class__.__name__ == "Einsum" for i in g.members) <= 1


def test_the_reports_say_what_fused_into_what() -> None:
    import json

    r = _report("A: bf16[I, J]\nB: bf16[I, J]\nC = silu(A) * B\n")
    ops = json.loads(r.to_json())["ops"]
    assert [(o["op"], o["fused_into"], o["fusion"], o["bound"]) for o in ops] == [
        ("silu", 3, None, "fused into #3"),
        ("*", None, "loop", "hbm"),
    ]
    assert "fused into #3" in r.to_text() and "fused into #3" in r.to_markdown()
