"""The step schedule (passes/schedule.py): collective matmuls, and the bounds every schedule
keeps (between perfect overlap and none; never slower than without collective matmuls)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings

import shardc
from shardc.passes.schedule import collective_matmuls, schedule
from shardc.testing.strategies import programs

MEGATRON = ("mesh Y=4\ndim B=64, D=64, F=64\nA: bf16[B, D_Y]\nW: bf16[D, F_Y]\n"
            "W2: bf16[F_Y, D]\nH[B, F_Y] = A[B, D] ·_D W\nO[B, D_Y] = H ·_F W2\n")
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


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
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
