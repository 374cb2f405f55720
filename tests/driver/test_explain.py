"""`compile(explain=False)` (what the planner asks for) leaves out the decision records and the
crossover sizes, and nothing else: every op, total and memory figure is the same number."""

from __future__ import annotations

import pytest

import shardc
from tests.paths import ROOT

PROGRAMS = ROOT / "programs"


@pytest.mark.parametrize("name", ["attention-gqa-train", "mlp-fsdp-tp-train", "q9-reducescatter"])
def test_a_compile_that_explains_nothing_has_the_same_numbers(name):
    path = PROGRAMS / f"{name}.shard"
    full = shardc.compile(path, hw="tpu-v5p")
    lean = shardc.compile(path, hw="tpu-v5p", explain=False)
    assert full.program.decisions and not lean.program.decisions
    assert any(c.crossover_bytes is not None for c in full.ops)
    assert all(c.crossover_bytes is None for c in lean.ops)
    assert [(c.op, c.axes, c.src, c.dst, c.reason) for c in lean.ops] == [
        (c.op, c.axes, c.src, c.dst, c.reason) for c in full.ops
    ]
    assert {k: lean.value(k) for k in lean.totals} == {k: full.value(k) for k in full.totals}
    assert lean.step_durations() == full.step_durations()
    if full.memory is not None:  # a program with a backward pass
        assert lean.value(lean.memory.total) == full.value(full.memory.total)
