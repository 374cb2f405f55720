"""The step schedule (passes/schedule.py): collective matmuls, and the bounds every schedule
keeps (between perfect overlap and none; never slower than without collective matmuls)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings

import shardc
from shardc.passes.schedule import collective_matmuls, schedule
from shardc.testing.strategies import programs

MEGATRON = (
    "mesh Y=4\ndim B=64, D=64, F=64\nA: bf16[B, D_Y]\nW: bf16[D, F_Y]\n"
    "W2: bf16[F_Y, D]\nH[B, F_Y] = A[B, D] ·_D W\nO[B, D_Y] = H ·_F W2\n"
)
"""Megatron-LM's MLP with sequence parallelism: AllGather, two matmuls, ReduceScatter."""


def test_a_gather_and_a_reducescatter_overlap_their_matmuls_chunk_by_chunk():
    r = shardc.compile(MEGATRON)
    kinds = [getattr(op, "op", type(op).__name__) for op in r.program.ops]
    assert kinds == ["Input", "Input", "Input", "AllGather", "Einsum", "Einsum", "ReduceScatter"]
    feeds, drains = collective_matmuls(r.program, {"Y": 4})
    assert feeds == {4: {"A.1": (3, 4.0)}} and drains == {6: (5, 4.0)}
    durations = {3: 4.0, 4: 2.0, 5: 2.0, 6: 4.0}
    # One after the other: 4 + 2 + 2 + 4.
    assert schedule(r.program, durations) == pytest.approx(12.0)
    # The first matmul starts on the local block (t=0) and ends a quarter of itself after the
    # gather (4.5); the second runs 4.5-6.5; the ReduceScatter starts after its first quarter
    # (5.0) and ends a quarter of itself after it (6.5 + 1 = 7.5), but its 4.0 of transfer
    # ends at 9.0.
    assert schedule(r.program, durations, axis_sizes={"Y": 4}) == pytest.approx(9.0)
    # A group of one device moves nothing to overlap.
    assert collective_matmuls(r.program, {"Y": 1}) == ({}, {})


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(programs())
def test_collective_matmuls_keep_the_schedule_between_perfect_and_no_overlap(case):
    """For random training steps on a chip: max(T_math + T_hbm, T_comms) <= the schedule with
    collective matmuls <= the schedule without them <= T_math + T_hbm + T_comms. The schedule
    places ops in one fixed order, so letting a matmul start earlier never delays another op."""
    text, _ = case
    assume("backward" in text)
    r = shardc.compile(text.replace("\nbackward", "\nhardware tpu-v5e\nbackward"))
    durations = r.step_durations()
    assert durations is not None
    busy = r.busy_after()  # the collectives `--remat none` runs again keep the network busy
    overlapped = schedule(r.program, durations, axis_sizes=r.mesh_sizes(), busy_after=busy)
    serial = schedule(r.program, durations, busy_after=busy)
    lo, hi = r.value(r.totals["t_step_max_s"]), r.value(r.totals["t_step_sum_s"])
    assert lo * (1 - 1e-9) <= overlapped <= serial * (1 + 1e-12) <= hi * (1 + 1e-9)
    assert overlapped == pytest.approx(r.scheduled_step(), rel=1e-12)


FSDP_TRAIN = (
    "mesh X=8\ndim B=65536, D=4096, F=16384\nhardware h100\n"
    "In: bf16[B_X, D]\nparam W1: bf16[D_X, F]\nparam W2: bf16[F_X, D]\n"
    "H[B_X, F] = In ·_D W1\nOut[B_X, D] = H ·_F W2\nbackward\n"
)
"""Two FSDP layers on 8 H100: each weight gathered whole before its matmul."""


def test_a_gather_beyond_its_prefetch_buffer_waits_for_its_use():
    """Overlap that can fail: with no prefetch allowed a weight's gather starts only when the
    compute before it is done, so it is exposed whole; allowed its whole time ahead, the
    second gather hides behind the first matmul."""
    from shardc.passes.schedule import expected_schedule

    r = shardc.compile(FSDP_TRAIN)
    d = r.step_durations(expected=True)
    gathers = [c.index for c in r.ops if c.kind == "collective" and c.overlap == "prefetch"]
    assert len(gathers) == 4  # each weight gathered for the forward and the backward pass
    none = {i: 0.0 for i in gathers}
    whole = {i: d[i] for i in gathers}
    t_none, exp_none = expected_schedule(r.program, d, ahead=none, contention=0.0)
    t_whole, exp_whole = expected_schedule(r.program, d, ahead=whole, contention=0.0)
    assert exp_none[gathers[1]] == pytest.approx(d[gathers[1]])
    assert exp_whole[gathers[1]] < d[gathers[1]]
    assert t_none > t_whole
    # the first gather has nothing before it either way
    assert exp_none[gathers[0]] == pytest.approx(d[gathers[0]])
    assert exp_whole[gathers[0]] == pytest.approx(d[gathers[0]])


def test_the_prefetch_buffer_holds_five_times_ten_to_the_seven_elements():
    """DeepSpeed ZeRO-3's default prefetch bucket: a weight of 64 Mi bf16 elements may run
    5e7 / 2^26 of its gather ahead of its use; one of 4 Mi elements all of it."""
    from shardc.passes.schedule import PREFETCH_ELEMENTS

    r = shardc.compile(FSDP_TRAIN)
    d = r.step_durations(expected=True)
    ahead = r.prefetch_ahead(d)
    for c in r.ops:
        if c.index in ahead:
            share = min(1.0, PREFETCH_ELEMENTS * 2 / r.value(c.comm_bytes))
            assert ahead[c.index] == pytest.approx(d[c.index] * share)
            assert share < 1  # 4096 x 16384 elements, over the buffer
    small = shardc.compile(FSDP_TRAIN.replace("F=16384", "F=512"))
    ds = small.step_durations(expected=True)
    assert small.prefetch_ahead(ds) == {i: pytest.approx(ds[i]) for i in small.prefetch_ahead(ds)}


def test_compute_beside_a_collective_runs_slower_by_the_published_fraction():
    """The calibrated step adds CONTENTION (18.9%) of the communication compute hides; the
    roofline's schedule adds nothing."""
    from shardc.passes.schedule import CONTENTION, expected_schedule, exposed_parts, timeline

    r = shardc.compile(FSDP_TRAIN)
    d = r.step_durations(expected=True)
    ahead = r.prefetch_ahead(d)
    plain, parts = expected_schedule(r.program, d, ahead=ahead, contention=0.0)
    slowed, _ = expected_schedule(r.program, d, ahead=ahead)
    end, spans = timeline(r.program, d, weights=False, ahead=ahead)
    hidden = sum(b - a for a, b, k in spans.values() if k == "network") - sum(
        exposed_parts(spans).values()
    )
    assert plain == pytest.approx(end) and hidden > 0
    assert slowed == pytest.approx(plain + CONTENTION * hidden)
    assert r.scheduled_step(expected=True) == pytest.approx(slowed)
    assert r.exposed(expected=True) == pytest.approx(parts)


def test_the_calibrated_step_exposes_tensor_parallel_collectives():
    """No collective matmul on a GPU: Megatron-LM's AllGather and ReduceScatter run before and
    after their matmuls, exposed whole, where the roofline's schedule decomposes them."""
    r = shardc.compile(MEGATRON + "hardware h100\n")
    parts = r.exposed(expected=True)
    d = r.step_durations(expected=True)
    for c in r.ops:
        if c.kind == "collective":
            assert parts[c.index] == pytest.approx(d[c.index])
    assert r.scheduled_step(expected=True) == pytest.approx(sum(d.values()))


def test_a_reduction_of_summed_gradient_terms_drains_the_last_terms_matmul():
    """Two branches read the layer input: the backward pass adds their partial input-gradient
    terms and ReduceScatters the sum once; the roofline's schedule decomposes that
    ReduceScatter with the last term's matmul, as it would one matmul's."""
    text = (
        "mesh Y=4\ndim B=64, D=64, F=64\nIn: bf16[B, D_Y]\nparam W1: bf16[D, F_Y]\n"
        "param W2: bf16[D, F_Y]\nH1[B, F_Y] = In[B, D] ·_D W1\nH2[B, F_Y] = In[B, D] ·_D W2\n"
        "O[B, F_Y] = H1 * H2\nbackward\n"
    )
    r = shardc.compile(text)
    ops = r.program.ops
    (rs,) = [i for i, op in enumerate(ops) if getattr(op, "op", "") == "ReduceScatter"]
    terms = [
        i
        for i, op in enumerate(ops)
        if type(op).__name__ == "Einsum" and op.out.id.startswith("dIn_")
    ]
    _, drains = collective_matmuls(r.program, {"Y": 4})
    assert drains == {rs: (max(terms), 4.0)}


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(programs())
def test_the_calibrated_step_is_never_faster_than_the_roofline_schedule(case):
    """For random training steps on a calibrated GPU: each op's expected time is at least its
    roofline time, and the calibrated schedule only takes overlap away (no collective matmuls,
    a bounded prefetch) and adds the slowdown beside collectives, so its step is at least the
    roofline schedule's; each exposed part is within its collective's time."""
    text, _ = case
    assume("backward" in text)
    r = shardc.compile(text.replace("\nbackward", "\nhardware h100\nbackward"))
    roofline, calibrated = r.scheduled_step(), r.scheduled_step(expected=True)
    assert roofline is not None and calibrated is not None
    assert calibrated >= roofline * (1 - 1e-9)
    d = r.step_durations(expected=True)
    for i, part in (r.exposed(expected=True) or {}).items():
        assert -1e-15 <= part <= d[i] * (1 + 1e-9) + 1e-15
