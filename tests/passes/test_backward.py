"""The derived backward pass: the book's collectives per strategy, gradients right (numpy and
finite differences), and sharded gradients equal the unsharded ones on the mesh simulator."""

from __future__ import annotations

import math

import numpy as np
import pytest

import shardc
from shardc.driver.api import run_pipeline
from shardc.lang.source import Source
from shardc.tools.simulate import check, random_inputs, reference
from tests.paths import ROOT

TRAIN = ["mlp-dp-train", "mlp-fsdp-train", "mlp-tp-train", "mlp-fsdp-tp-train"]


def collectives(name: str) -> list[tuple[str, str, str]]:
    r = shardc.compile(ROOT / "programs" / f"{name}.shard")
    return [(c.op, "".join(c.axes), c.array) for c in r.ops if c.kind == "collective"]


def test_data_parallel_allreduces_the_weight_gradients():
    """The training chapter: "two AllReduces per layer", nothing else."""
    assert collectives("mlp-dp-train") == [
        ("AllReduce", "X", "dW_in"),
        ("AllReduce", "X", "dW_out"),
    ]


def test_fsdp_gathers_weights_and_reduce_scatters_gradients():
    """The training chapter FSDP: weights AllGathered before use (again in the backward pass),
    gradients ReduceScattered."""
    got = collectives("mlp-fsdp-train")
    assert [c for c in got if c[0] == "ReduceScatter"] == [
        ("ReduceScatter", "X", "dW_in"),
        ("ReduceScatter", "X", "dW_out"),
    ]
    # forward: W_in, W_out; backward: W_out for dTmp, W_in for dIn (the training chapter's FSDP).
    assert [c[2] for c in got if c[0] == "AllGather"] == ["W_in", "W_out", "W_out", "W_in"]


def test_tensor_parallel_activation_pairs():
    """The training chapter TP: an AllGather / ReduceScatter pair of activations in the forward pass
    and of their gradients in the backward pass, no weight-gradient communication."""
    assert collectives("mlp-tp-train") == [
        ("AllGather", "Y", "In"),
        ("ReduceScatter", "Y", "Out"),
        ("AllGather", "Y", "dOut"),
        ("ReduceScatter", "Y", "dIn"),
    ]


@pytest.mark.parametrize("name", ["mlp-dp-train", "mlp-fsdp-train"])
def test_backward_condition_is_the_books_on_full_rings(name):
    """The training chapter: DP and FSDP stay compute-bound while B/X > C/W_ici (book model,
    rings)."""
    text = (ROOT / "programs" / f"{name}.shard").read_text().replace("mesh X=16", "mesh X=16 wrap")
    r = shardc.compile(text, model="book")
    cond = next(c for c in r.conditions if c.name == "backward-compute-vs-comms")
    assert str(cond.relation) == "B/X > C/W_ici"


@pytest.mark.parametrize("name", TRAIN)
def test_sharded_gradients_equal_unsharded(name):
    text = (ROOT / "programs" / f"{name}.shard").read_text()
    result = run_pipeline(Source(name, text))
    assert not result.diagnostics.has_errors, result.rendered()
    prog = result.compiled
    mesh = dict(prog.mesh)
    n = math.prod(mesh.values())
    sizes = {**mesh, "B": 2 * n, "D": n, "F": n}
    rng = np.random.default_rng(7)
    check(prog, random_inputs(prog, sizes, rng), sizes)


def test_gradients_are_the_derivatives():
    """dW_out = gelu(Tmp)^T dOut, dTmp = (dOut W_out^T) gelu'(Tmp), dW_in = In^T dTmp, and a
    finite difference of the loss sum(Out * dOut) agrees."""
    text = (
        "mesh X=2\ndim B=4, D=4, F=6\nIn: f32[B, D]\nparam W_in: f32[D, F_X]\n"
        "param W_out: f32[F_X, D]\nTmp = In ·_D W_in\nOut[B, D] = gelu(Tmp) ·_F W_out\n"
        "backward\n"
    )
    prog = run_pipeline(Source("t", text)).compiled
    sizes = {"X": 2, "B": 4, "D": 4, "F": 6}
    rng = np.random.default_rng(3)
    inputs = {k: v / 3 for k, v in random_inputs(prog, sizes, rng).items()}
    ref = reference(prog, inputs, sizes)
    by_array = {op.out.array: ref[op.out.id] for op in prog.ops}
    x, w1, w2, d_out = inputs["In"], inputs["W_in"], inputs["W_out"], inputs["dOut"]
    from shardc.tools.simulate import UNARY_FUNCTIONS as F

    tmp = x @ w1
    d_tmp = (d_out @ w2.T) * F["gelu_grad"](tmp)
    np.testing.assert_allclose(by_array["dW_out"], F["gelu"](tmp).T @ d_out, rtol=1e-10)
    np.testing.assert_allclose(by_array["dW_in"], x.T @ d_tmp, rtol=1e-10)

    def loss(w1_):
        return float(np.sum((F["gelu"](x @ w1_) @ w2) * d_out))

    eps = 1e-6
    e = np.zeros_like(w1)
    e[1, 2] = eps
    fd = (loss(w1 + e) - loss(w1 - e)) / (2 * eps)
    assert by_array["dW_in"][1, 2] == pytest.approx(fd, rel=1e-6)


def test_backward_errors_are_diagnostics():
    bad = (
        "mesh X=2\ndim B=4, D=4, E=2\nparam W: f32[D, E]\nIn: f32[B, D]\nOut = In ·_D W\nbackward\n"
    )
    r = run_pipeline(Source("t", bad))
    assert [d.code for d in r.diagnostics.items] == ["K012"]
    twice = bad.replace("Out = ", "Out[B, E] = ") + "backward\n"
    assert [d.code for d in run_pipeline(Source("t", twice)).diagnostics.items] == ["K010"]


def test_collectives_off_the_critical_path():
    """Weight gathers are prefetchable, gradient reductions asynchronous (the training chapter)."""
    r = shardc.compile(ROOT / "programs" / "mlp-fsdp-train.shard")
    tags = {(c.op, c.array): c.overlap for c in r.ops if c.kind == "collective"}
    assert tags[("AllGather", "W_in")] == "prefetch"
    assert tags[("ReduceScatter", "dW_in")] == "async"
    tp = shardc.compile(ROOT / "programs" / "mlp-tp-train.shard")
    assert all(c.overlap == "" for c in tp.ops if c.kind == "collective")


def test_scheduled_step_lies_between_perfect_and_no_overlap():
    for name in TRAIN:
        r = shardc.compile(ROOT / "programs" / f"{name}.shard")
        lo, hi = r.value(r.totals["t_step_max_s"]), r.value(r.totals["t_step_sum_s"])
        s = r.scheduled_step()
        assert lo * (1 - 1e-9) <= s <= hi * (1 + 1e-9), name


def test_memory_of_a_training_step():
    """Mixed-precision Adam: bf16 weights and gradients, an fp32 master copy and two fp32
    moments, 16 bytes per parameter (the ZeRO paper's 16 psi); rematerializing the block keeps
    only its input."""
    r = shardc.compile(ROOT / "programs" / "mlp-fsdp-train.shard")
    m = r.memory
    params = 2 * 8192 * 32768 * 2 / 16  # W_in and W_out, bf16, sharded 16 ways
    assert r.value(m.parameters) == params
    assert r.value(m.parameters + m.gradients + m.optimizer) == params * 16 / 2
    assert set(m.saved) == {"In", "Tmp", "gelu_Tmp"}
    block = shardc.compile(ROOT / "programs" / "mlp-fsdp-train.shard", remat="block").memory
    assert block.saved == ("In",)
    assert r.value(block.activations) < r.value(m.activations)


TP_LAYER = """mesh X=8, Y=8
dim B=8, T=4096, S=4096, D=5120, F=13824, K=40, H=128
hardware h100
param W_Q: bf16[D_X, K_Y, H]
param W_K: bf16[D_X, K_Y, H]
param W_O: bf16[K_Y, H, D_X]
param W_in: bf16[D_X, F_Y]
param W_out: bf16[F_Y, D_X]
In: bf16[B_X, T, D_Y]
Kin: bf16[B_X, S, D_Y]
Q[B_X, T, K_Y, H] = In[B_X, T, D] ·_D W_Q
Kc[B_X, S, K_Y, H] = Kin[B_X, S, D] ·_D W_K
Sc[B_X, T, S, K_Y] = Q ·_H Kc
Pr = exp(Sc)
Att[B_X, T, K_Y, H] = Pr ·_S Kc
A[B_X, T, D_Y] = Att ·_{K,H} W_O
Tmp = A[B_X, T, D] ·_D W_in
Out[B_X, T, D_Y] = gelu(Tmp) ·_F W_out
backward
"""


def _kept(remat: str) -> tuple[dict[str, float], float]:
    from shardc.passes.layout_cost import local_bytes
    from shardc.passes.memory import kept_activations
    from shardc.passes.symbols import size_symbol

    r = shardc.compile(TP_LAYER, remat=remat)
    saved, _ = kept_activations(r.program, remat)
    sizes = {v.array: r.value(local_bytes(v.layout, v.dtype, size_symbol)) for v in saved.values()}
    assert len(sizes) == len(saved), "each array kept once"
    return sizes, r.value(r.memory.activations)


def test_exp_backward_reads_its_result_not_its_input():
    """d exp(x) = exp(x) dx: the backward pass multiplies by the kept probabilities instead of
    keeping the scores as well and computing exp again (as autograd frameworks save exp's
    result)."""
    r = shardc.compile(TP_LAYER)
    assert "Pr" in r.memory.saved and "Sc" not in r.memory.saved
    assert not any(op.out.array.startswith("exp_") for op in r.program.ops)


def test_block_remat_keeps_the_layer_input_once_as_it_arrives():
    """Under tensor parallelism the layer input (and `Kin`, the keys' copy of it: the language
    cannot yet rename T to S) reaches the matmuls through an AllGather; block
    remat keeps it once, sharded as it arrives (it used to keep nothing: 0 B), and the backward
    pass gathers it again. In bytes: B/X * T * D/Y * 2."""
    sizes, total = _kept("block")
    assert sizes == {"In": 1 * 4096 * 5120 / 8 * 2, "Kin": 1 * 4096 * 5120 / 8 * 2}
    assert total == sum(sizes.values())


def test_matmul_remat_keeps_matmul_results_at_their_reduced_layout():
    """`matmuls` keeps each matmul's result where it is smallest among the copies the program
    makes of it (A after its ReduceScatter, not the gathered copy the MLP reads), the scores
    instead of the probabilities (exp runs again), and the layer input as it arrives."""
    sizes, _ = _kept("matmuls")
    assert set(sizes) == {"In", "Kin", "Q", "Kc", "Sc", "Att", "A", "Tmp"}
    assert sizes["A"] == sizes["In"] == 1 * 4096 * 5120 / 8 * 2


def test_gathered_keeps_what_the_backward_pass_reads_as_it_reads_it():
    """`--remat gathered`: nothing runs again; the backward pass reads the gathered layer input
    and the gathered A (Korthikanti et al. 2022, Table 2's "tensor parallel" baseline keeps
    the replicated inputs of the column-parallel matmuls), the probabilities, and gelu's input
    and output."""
    from shardc.passes.memory import kept_activations

    sizes, total = _kept("gathered")
    assert set(sizes) == {"In", "Kin", "Q", "Kc", "Pr", "Att", "A", "Tmp", "gelu_Tmp"}
    assert sizes["In"] == sizes["A"] == 1 * 4096 * 5120 * 2
    assert sizes["Pr"] == 4096 * 4096 * 40 / 8 * 2
    assert kept_activations(shardc.compile(TP_LAYER).program, "gathered")[1] == ()
    assert _kept("matmuls")[1] < total and _kept("block")[1] < _kept("matmuls")[1]


def test_no_remat_keeps_sequence_parallel_inputs_sharded_and_gathers_them_again():
    """The default (`none`) keeps the same values, but the layer input and A as they arrive,
    sharded over Y, and gathers them again in the backward pass (Megatron-LM's storage,
    Korthikanti et al. 2022, section 4.2.2): (t - 1) / t of each gathered copy saved, for one
    more AllGather each, charged; no compute op runs again."""
    from shardc.passes.ir import Collective
    from shardc.passes.memory import kept_activations

    sizes, total = _kept("none")
    wide, wide_total = _kept("gathered")
    assert set(sizes) == set(wide)
    assert sizes["In"] == sizes["A"] == sizes["Kin"] == 1 * 4096 * 5120 / 8 * 2
    assert {k: v for k, v in sizes.items() if k not in ("In", "A", "Kin")} == {
        k: v for k, v in wide.items() if k not in ("In", "A", "Kin")
    }
    assert wide_total - total == 3 * 4096 * 5120 * 2 * 7 / 8
    r = shardc.compile(TP_LAYER)
    again = [r.program.ops[i] for i in kept_activations(r.program, "none")[1]]
    assert again and all(
        isinstance(op, Collective) and op.op == "AllGather" and op.axes == ("Y",) for op in again
    )
    assert {op.out.array for op in again} == {"In", "A", "Kin"}
    gathered = shardc.compile(TP_LAYER, remat="gathered")
    assert r.value("t_comms_s") > gathered.value("t_comms_s")


@pytest.mark.parametrize(
    ("optimizer", "per_bf16", "per_f32"),
    [
        ("adam", 16, 16),
        ("adam-8bit", 10, 10),
        ("adam-no-master", 12, 16),
        ("sgd", 8, 8),
        ("none", 4, 8),
    ],
)
def test_state_bytes_per_parameter(optimizer, per_bf16, per_f32):
    """Weights + gradient + state per parameter: the master copy only where the weights are
    narrower than fp32 (an f32 model updates its weights in place)."""
    for dtype, want in (("bf16", per_bf16), ("f32", per_f32)):
        text = (
            f"mesh X=4\ndim B=64, D=256, F=512\nIn: {dtype}[B_X, D]\n"
            f"param W: {dtype}[D_X, F]\nOut[B_X, F] = In ·_D W\nbackward\n"
        )
        r = shardc.compile(text, optimizer=optimizer)
        m = r.memory
        elements = 256 * 512 / 4
        assert r.value(m.parameters + m.gradients + m.optimizer) == want * elements, dtype


GATED_TP = """mesh X=2, Y=4
dim B, D, F
In: f32[B_X, D_Y]
param W_1: f32[D_X, F_Y]
param W_2: f32[D_X, F_Y]
param W_out: f32[F_Y, D_X]
Tmp1 = In[B_X, D] ·_D W_1
Tmp2 = In[B_X, D] ·_D W_2
Out[B_X, D_Y] = (silu(Tmp1) * Tmp2) ·_F W_out
backward
"""


def test_a_gradient_with_several_terms_is_reduced_once():
    """dIn = dTmp1 W_1^T + dTmp2 W_2^T: each product is a partial sum over Y; they are added
    while unreduced and reduced once into dIn's layout (one ReduceScatter where there were two
    AllReduces), and the mesh simulator agrees with the unsharded gradients."""
    result = run_pipeline(Source("gated", GATED_TP))
    assert not result.diagnostics.has_errors, result.rendered()
    prog = result.compiled
    line = prog.backward_line
    reductions = [
        op
        for op in prog.ops
        if op.span.line == line
        and hasattr(op, "axes")
        and op.op in ("AllReduce", "ReduceScatter")
        and op.axes == ("Y",)
        and op.out.array.startswith("dIn")
    ]
    assert [op.op for op in reductions] == ["ReduceScatter"]
    sizes = {"X": 2, "Y": 4, "B": 16, "D": 8, "F": 8}
    check(prog, random_inputs(prog, sizes, np.random.default_rng(3)), sizes)


def test_block_remat_runs_the_activation_collectives_again():
    """Under tensor parallelism the recomputed forward pass needs the layer input gathered again
    (and A reduce-scattered and gathered): those collectives are charged a second time, as
    Megatron-LM's full recomputation repeats them; FSDP's weight gathers are not (the backward
    pass gathers the weights anyway)."""
    from shardc.passes.memory import kept_activations

    r = shardc.compile(TP_LAYER, remat="block")
    _, redo = kept_activations(r.program, "block")
    again = [r.program.ops[i] for i in redo]
    gathers = sorted(op.out.array for op in again if getattr(op, "op", "") == "AllGather")
    assert gathers == ["A", "In", "Kin"]
    none = shardc.compile(TP_LAYER)
    assert r.value("t_comms_s") > none.value("t_comms_s")
    assert r.value("t_recompute_s") > 0


def test_selective_remat_and_flash_attention_drop_the_attention_core():
    """`selective` recomputes the scores and probabilities and keeps the gathered inputs
    sharded, gathering them again (Korthikanti et al. 2022: sequence parallelism with selective
    recomputation); flash attention keeps the core on chip and one fp32 row statistic per
    query and head instead (Dao et al. 2022), and moves less through HBM."""
    from shardc.passes.memory import kept_activations

    none = shardc.compile(TP_LAYER)
    sel = shardc.compile(TP_LAYER, remat="selective")
    flash = shardc.compile(TP_LAYER, attention="flash")
    assert "Pr" in none.memory.saved and "Pr" not in sel.memory.saved
    assert set(none.memory.saved) - set(flash.memory.saved) == {"Pr"}
    sizes, _ = _kept("selective")
    assert sizes["In"] == sizes["A"] == 1 * 4096 * 5120 / 8 * 2  # as they arrive
    again = [sel.program.ops[i] for i in kept_activations(sel.program, "selective")[1]]
    assert {op.out.array for op in again} >= {"In", "A", "Sc", "Pr"}
    rows = 1 * 4096 * 40 / 8 * 4  # B/X x T x K/Y, fp32
    pr = 4096 * 4096 * 40 / 8 * 2
    assert flash.value(flash.memory.activations) == none.value(none.memory.activations) - pr + rows
    assert flash.value("t_hbm_s") < none.value("t_hbm_s")
    assert sel.value("t_recompute_s") > 0 and flash.value("t_recompute_s") > 0
    with pytest.raises(ValueError):
        shardc.compile(TP_LAYER, attention="paged")


def test_cli_keeps_the_gathered_copies_on_request(capsys):
    """`--remat gathered` is the CLI's name for the other storage: the same values kept, the
    layer input gathered (2BD rather than 2BD/Y), and no collective run again."""
    from shardc.cli.app import main

    program = str(ROOT / "programs" / "mlp-tp-train.shard")
    out = {}
    for remat in ("none", "gathered"):
        assert main(["compile", program, "--only", "memory,summary", "--remat", remat]) == 0
        out[remat] = capsys.readouterr().out
    assert "activations            302 MB   = 2*B*D/Y + 4*B*F/Y" in out["none"]
    assert "activations            537 MB   = 2*B*D + 4*B*F/Y" in out["gathered"]
    assert "T_recompute" in out["none"] and "T_recompute" not in out["gathered"]
