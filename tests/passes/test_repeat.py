"""`repeat L { ... }`: a block run L times (layers). Its costs scale by L, params declared inside
are per iteration, and the report gives per-iteration and total figures."""

from __future__ import annotations

import json
import re

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import shardc
from shardc.passes.symbols import size_symbol
from shardc.testing.strategies import programs
from tests.paths import ROOT
from tests.tools.test_simulator_properties import assert_simulates

TRAIN = ["mlp-dp-train", "mlp-fsdp-train", "mlp-tp-train", "mlp-fsdp-tp-train"]
SCALED = (
    "flops",
    "flops_per_device",
    "hbm_bytes",
    "comm_bytes",
    "t_math_s",
    "t_hbm_s",
    "t_comms_s",
    "t_compute_s",
    "t_step_sum_s",
)


def wrapped(text: str, count: str) -> str:
    """`text` with everything from the first declaration to `backward` (or the end) inside
    `repeat count { }`."""
    lines = text.splitlines()
    first = next(
        i
        for i, line in enumerate(lines)
        if line.strip() and not re.match(r"\s*(#|mesh\b|dim\b|hardware\b)", line)
    )
    end = next((i for i, line in enumerate(lines) if line.strip() == "backward"), len(lines))
    return (
        "\n".join([*lines[:first], f"repeat {count} {{", *lines[first:end], "}", *lines[end:]])
        + "\n"
    )


def test_parse_counts_and_nesting():
    src = (
        "mesh X=2\ndim B=4, D=2, L=3, M, P\nA: bf16[B_X, D]\n"
        "repeat L {\n  C = A\n  repeat 2 * (M + P - 1) { E = C }\n}\n"
        "repeat (L) * L - (M - P) { G = A }\n"
    )
    p = shardc.parse(src)
    times = {s.target: [c.text for c in s.times] for s in p.statements if hasattr(s, "target")}
    assert times == {"C": ["L"], "E": ["L", "2 * (M + P - 1)"], "G": ["L * L - (M - P)"]}
    assert [c.text for c in p.repeats] == ["L", "2 * (M + P - 1)", "L * L - (M - P)"]
    assert p.repeats[1].evaluate({"M": 4, "P": 3}) == 12
    assert p.repeats[2].evaluate({"L": 3, "M": 1, "P": 5}) == 13


@pytest.mark.parametrize("name", TRAIN)
def test_symbolic_repeat_scales_every_total(name):
    """Wrapping a whole training step in `repeat L` multiplies every total by L exactly."""
    text = (ROOT / "programs" / f"{name}.shard").read_text()
    text = re.sub(r"^dim (.*)$", r"dim \1, L", text, count=1, flags=re.M)
    one = shardc.compile(text, model="book")
    many = shardc.compile(wrapped(text, "L"), model="book")
    L = size_symbol("L")
    for key in SCALED:
        assert sp.simplify(many.totals[key] - L * one.totals[key]) == 0, key
    assert sp.simplify(many.memory.total - L * one.memory.total) == 0
    assert [c.count for c in many.ops] == [L] * len(many.ops)


@settings(max_examples=25, deadline=None)
@given(programs(), st.integers(1, 5))
def test_repeat_multiplies_costs_and_keeps_values(case, k):
    """For random programs: `repeat k` gives k times every total, per-iteration block figures
    equal the unrepeated totals, and the mesh simulator still matches numpy."""
    text, sizes = case
    one = shardc.compile(text, hw="tpu-v5e", set=sizes)
    many = shardc.compile(wrapped(text, str(k)), hw="tpu-v5e", set=sizes)
    for key in ("flops", "comm_bytes", "t_math_s", "t_comms_s", "memory_per_device_bytes"):
        a, b = one.value(one.totals[key]), many.value(many.totals[key])
        assert b == pytest.approx(k * a, rel=1e-9, abs=1e-30), key
    if many.cost.blocks:
        block = many.cost.blocks[0]
        for key in ("flops", "t_comms_s"):
            assert many.value(block.per_iteration[key]) == pytest.approx(
                one.value(one.totals[key]), rel=1e-9, abs=1e-30
            )
    assert_simulates(wrapped(text, str(k)), sizes, seed=k)


def test_params_inside_are_per_layer_and_the_report_shows_blocks():
    src = """mesh X=4
dim B=64, D=16, F=32, L=6
repeat L {
  In: bf16[B_X, D]
  param W_in: bf16[D_X, F]
  param W_out: bf16[F, D_X]
  Tmp = In ·_D W_in
  Out[B_X, D] = gelu(Tmp) ·_F W_out
}
backward
"""
    r = shardc.compile(src, hw="tpu-v5p", optimizer="adam")
    assert r.value(r.memory.parameters) == 6 * 2 * (16 * 32 / 4) * 2
    # each layer keeps its own input and hidden activations
    assert r.value(r.memory.activations) == 6 * (64 * 16 / 4 * 2 + 2 * 64 * 32 / 4 * 2)
    d = json.loads(r.to_json())
    (block,) = d["repeats"]
    assert block["count"] == "L" and block["runs"]["value"] == 6
    for key, q in block["per_iteration"].items():
        assert block["total"][key]["value"] == pytest.approx(6 * q["value"]), key
    assert {op["runs"]["value"] for op in d["ops"]} == {6}
    text = r.to_text()
    assert "repeat blocks" in text and "line 3: repeat L   (6 times)" in text
    assert "runs" in text.split("\nops\n")[1].splitlines()[0]
    assert "`repeat L`" in r.to_markdown()


def test_backward_of_a_block_runs_per_layer_and_shared_weights_accumulate():
    """A weight declared outside the block but used inside (tied across layers) gets one
    contribution per layer; each is an einsum run L times."""
    src = """mesh X=2
dim B=8, D=4, E=6, L=3
In: bf16[B_X, D]
param W: bf16[D, E]
repeat L {
  H[B_X, E] = In ·_D W
}
backward
"""
    r = shardc.compile(src, hw="tpu-v5e")
    L = size_symbol("L")
    assert all(c.count == L for c in r.ops if c.kind in ("einsum", "collective"))
    # forward H, backward dIn and dW: three 2*B*D*E matmuls, each run L times
    assert r.value(r.totals["flops"]) == 3 * 3 * 2 * 8 * 4 * 6
    assert any(c.op == "AllReduce" and c.array.startswith("dW") for c in r.ops)


def test_remat_charges_recomputed_forward_ops():
    path = ROOT / "programs" / "mlp-fsdp-train.shard"
    none = shardc.compile(path, model="book", remat="none")
    block = shardc.compile(path, model="book", remat="block")
    matmuls = shardc.compile(path, model="book", remat="matmuls")
    B, D, F, X = (size_symbol(n) for n in "BDFX")
    C = sp.Symbol("C", positive=True)
    assert sp.simplify(none.totals["t_math_s"] - 12 * B * D * F / (C * X)) == 0
    # --remat block reruns the forward matmul whose output the backward pass reads (Tmp); Out
    # itself is never read, so 14 rather than the book's rounded 16 (8ND rather than 6ND)
    assert sp.simplify(block.totals["t_math_s"] - 14 * B * D * F / (C * X)) == 0
    assert "t_recompute_s" in block.totals and "t_recompute_s" not in none.totals
    # --remat matmuls keeps matmul results: only gelu runs again (no matmul FLOPs)
    assert sp.simplify(matmuls.totals["t_math_s"] - none.totals["t_math_s"]) == 0
    assert matmuls.value(matmuls.totals["t_recompute_s"]) > 0
    assert block.scheduled_step() > none.scheduled_step()


def test_repeat_program_in_programs_compiles_with_every_format():
    path = ROOT / "programs" / "mlp-fsdp-tp-layers-train.shard"
    r = shardc.compile(path)
    for text in (r.to_text(), r.to_markdown(), r.to_latex(), r.to_json()):
        assert text
    assert r.value(r.cost.blocks[0].count) == 80
