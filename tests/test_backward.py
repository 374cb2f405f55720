"""The derived backward pass: the book's collectives per strategy, gradients right (numpy and
finite differences), and sharded gradients equal the unsharded ones on the mesh simulator."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import shardc
from shardc.driver.api import run_pipeline
from shardc.lang.source import Source
from shardc.tools.simulate import check, random_inputs, reference

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ["mlp-dp-train", "mlp-fsdp-train", "mlp-tp-train", "mlp-fsdp-tp-train"]


def collectives(name: str) -> list[tuple[str, str, str]]:
    r = shardc.compile(ROOT / "programs" / f"{name}.shard")
    return [(c.op, "".join(c.axes), c.array) for c in r.ops if c.kind == "collective"]


def test_data_parallel_allreduces_the_weight_gradients():
    """000 part 4: "two AllReduces per layer", nothing else."""
    assert collectives("mlp-dp-train") == [("AllReduce", "X", "dW_in"),
                                           ("AllReduce", "X", "dW_out")]


def test_fsdp_gathers_weights_and_reduce_scatters_gradients():
    """000 part 4 FSDP: weights AllGathered before use (again in the backward pass),
    gradients ReduceScattered."""
    got = collectives("mlp-fsdp-train")
    assert [c for c in got if c[0] == "ReduceScatter"] == [("ReduceScatter", "X", "dW_in"),
                                                           ("ReduceScatter", "X", "dW_out")]
    # forward: W_in, W_out; backward: W_out for dTmp, W_in for dIn (000 part 4's FSDP).
    assert [c[2] for c in got if c[0] == "AllGather"] == ["W_in", "W_out", "W_out", "W_in"]


def test_tensor_parallel_activation_pairs():
    """000 part 4 TP: an AllGather / ReduceScatter pair of activations in the forward pass and
    of their gradients in the backward pass, no weight-gradient communication."""
    assert collectives("mlp-tp-train") == [("AllGather", "Y", "In"),
                                           ("ReduceScatter", "Y", "Out"),
                                           ("AllGather", "Y", "dOut"),
                                           ("ReduceScatter", "Y", "dIn")]


@pytest.mark.parametrize("name", ["mlp-dp-train", "mlp-fsdp-train"])
def test_backward_condition_is_the_books_on_full_rings(name):
    """000 part 4: DP and FSDP stay compute-bound while B/X > C/W_ici (book model, rings)."""
    text = (ROOT / "programs" / f"{name}.shard").read_text().replace("mesh X=16",
                                                                    "mesh X=16 wrap")
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
    text = ("mesh X=2\ndim B=4, D=4, F=6\nIn: f32[B, D]\nparam W_in: f32[D, F_X]\n"
            "param W_out: f32[F_X, D]\nTmp = In ·_D W_in\nOut[B, D] = gelu(Tmp) ·_F W_out\n"
            "backward\n")
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
    bad = ("mesh X=2\ndim B=4, D=4, E=2\nparam W: f32[D, E]\nIn: f32[B, D]\nOut = In ·_D W\n"
           "backward\n")
    r = run_pipeline(Source("t", bad))
    assert [d.code for d in r.diagnostics.items] == ["K012"]
    twice = bad.replace("Out = ", "Out[B, E] = ") + "backward\n"
    assert [d.code for d in run_pipeline(Source("t", twice)).diagnostics.items] == ["K010"]


def test_collectives_off_the_critical_path():
    """Weight gathers are prefetchable, gradient reductions asynchronous (000 part 4)."""
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
    """000 part 4: bf16 weights + fp32 Adam moments = 10 bytes per parameter (gradients
    beside); rematerializing the block keeps only its input."""
    r = shardc.compile(ROOT / "programs" / "mlp-fsdp-train.shard")
    m = r.memory
    params = 2 * 8192 * 32768 * 2 / 16  # W_in and W_out, bf16, sharded 16 ways
    assert r.value(m.parameters) == params
    assert r.value(m.parameters + m.optimizer) == params * 10 / 2
    assert set(m.saved) == {"In", "Tmp", "gelu_Tmp"}
    block = shardc.compile(ROOT / "programs" / "mlp-fsdp-train.shard", remat="block").memory
    assert block.saved == ("In",)
    assert r.value(block.activations) < r.value(m.activations)
