"""A candidate's step summed (`shardc.tools.plan.accounting`): the model FLOPs MFU counts, ZeRO's
division of the optimizer state, and which role each collective plays in a layout."""

from __future__ import annotations

import pytest

import shardc
from shardc.tools.models.sharding import Axis, Layout
from shardc.tools.plan.accounting import (
    collective_role,
    context_collectives,
    expected_parts,
    model_flops,
    new_totals,
    zero_state,
)
from shardc.tools.plan.candidates import Options

TRAIN = (
    "mesh X=4\ndim B=64, D=32, F=48\nIn: bf16[B_X, D]\nparam W: bf16[D, F]\n"
    "H[B_X, F] = In ·_D W\nbackward\n"
)


def test_model_flops_count_every_einsum_once_over_the_mesh():
    """Forward Y = X W and the two products of its backward: 3 x 2BDF, whatever the sharding."""
    r = shardc.compile(TRAIN)
    assert model_flops(r) == 3 * 2 * 64 * 32 * 48
    replicated = shardc.compile(TRAIN.replace("B_X", "B"))
    assert model_flops(replicated) == model_flops(r)
    no_product = shardc.compile("dim B=8\nA: bf16[B]\nC = exp(A)\n")
    assert model_flops(no_product) == 0  # elementwise FLOPs are not model FLOPs


def test_running_totals_start_at_zero():
    acc = new_totals()
    assert all(v == 0.0 for v in acc.values() if isinstance(v, float))
    assert all(v == {} for v in acc.values() if isinstance(v, dict))


DP = Layout("dp", (Axis("X", 8, "data", "@ici(x)"),))
FSDP = Layout("fsdp", (Axis("X", 8, "data", "@ici(x)"),), fsdp=True)
DP_TP = Layout(
    "dp-tp",
    (Axis("X", 4, "data", "@ici(x)"), Axis("Y", 2, "tp", "@ici(y)"), Axis("P", 2, "pod", "@dcn")),
)


@pytest.mark.parametrize(
    ("zero", "optimizer", "gradients"), [(0, 80.0, 16.0), (1, 10.0, 16.0), (2, 10.0, 2.0)]
)
def test_zero_divides_the_state_over_the_data_replicas(zero, optimizer, gradients):
    memory = {"optimizer": 80.0, "gradients": 16.0, "parameters": 8.0}
    zero_state(memory, DP, Options(zero=zero))
    assert memory == {"optimizer": optimizer, "gradients": gradients, "parameters": 8.0}
    untouched = {"optimizer": 80.0, "gradients": 16.0}
    zero_state(untouched, FSDP, Options(zero=2))  # FSDP shards all three already
    assert untouched == {"optimizer": 80.0, "gradients": 16.0}


def test_the_role_of_a_collective():
    assert collective_role(("X",), DP) == "dp" and collective_role(("X",), FSDP) == "fsdp"
    assert collective_role(("Y",), DP_TP) == "tp"
    assert collective_role(("P",), DP_TP) == "dcn"
    assert collective_role(("X", "Y"), DP_TP) == "mixed"


CP_ATTENTION = (
    "mesh X=4\ndim B=2, T=4096, S=4096, D=1024, H=128\nhardware h100\n"
    "In: bf16[B, T_X, D]\nparam W_Q: bf16[D, H]\nparam W_K: bf16[D, H]\nparam W_V: bf16[D, H]\n"
    "Q[B, T_X, H] = In ·_D W_Q\nKc[B, S_X, H] = In[B, T->S_X, D] ·_D W_K\n"
    "Vc[B, S_X, H] = In[B, T->S_X, D] ·_D W_V\nSc[B, T_X, S] = Q ·_H Kc\n"
    "Pr = softmax_{S}(Sc)\nAtt[B, T_X, H] = Pr ·_S Vc\nbackward\n"
)
CP = Layout("dp", (Axis("X", 4, "seq"),))


def test_context_parallel_gathers_of_the_keys_and_values_are_exposed_whole():
    """The Llama 3 paper's context parallelism gathers K and V before the local queries'
    attention, the gather "exposed in the critical path" (section 3.3.2): in the calibrated
    step nothing computes beside those gathers or their gradients' ReduceScatters, where
    without the layout the gather of K hides behind V's projection and the backward's
    ReduceScatters behind the rest of the backward pass."""
    r = shardc.compile(CP_ATTENTION)
    blocking = context_collectives(r, CP)
    ops = r.program.ops
    assert sorted((ops[i].op, ops[i].src.array) for i in blocking) == [
        ("AllGather", "Kc"),
        ("AllGather", "Vc"),
        ("ReduceScatter", "dKc"),
        ("ReduceScatter", "dVc"),
    ]  # not the gradients' AllReduces, which overlap the backward pass
    d = r.step_durations(expected=True)
    free, hidden = expected_parts(r, 0.0)
    held, exposed = expected_parts(r, 0.0, layout=CP)
    assert all(exposed[i] == pytest.approx(d[i]) for i in blocking)
    assert sum(hidden[i] for i in blocking) < sum(d[i] for i in blocking)
    assert held > free
