"""A consistent IR: after `insert-collectives` every value an op reads is made by an earlier op
(`passes.verify.verify_ir`), including an array the lowering brought to a layout once and
reads again there (the reshard cache), and a broken program is a compiler bug, not a diagnostic.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shardc
from shardc.driver.api import run_pipeline
from shardc.lang.source import Source
from shardc.passes.context import Context
from shardc.passes.ir import Elementwise, Input, LocalSlice, Value, operands
from shardc.passes.lower.state import LoweringState
from shardc.passes.pipeline import PIPELINE, InsertCollectives, run_passes
from shardc.passes.verify import IRError, verify_ir
from shardc.testing.strategies import programs
from tests.tools.test_simulate import prog, val
from tests.tools.test_simulator_properties import assert_simulates, compile_program

REUSE = "mesh X=2\ndim I=8, J=8\nA: f32[I_X, J]\nB[I, J_X] = A\nC = B + A\n"
"""B's statement brings A to [I, J_X]; C's reads A there again, from B's AllToAll."""


def _old_name_last(self: LoweringState, named: Value) -> None:
    """The lowering before the fix: the last op is renamed, the reshard cache is not."""
    self.ops[-1] = dataclasses.replace(self.ops[-1], out=named)


# ---- the reproducer ------------------------------------------------------------------------------


def test_a_reused_reshard_is_read_from_the_op_that_made_it():
    compiled = compile_program(REUSE, {}).compiled
    verify_ir(compiled)
    _, alltoall, add = compiled.ops
    assert alltoall.out.id == "B"
    assert isinstance(add, Elementwise)
    b, a = add.args
    assert (b.id, a.id) == ("B", "B")  # both read B's blocks,
    assert (b.array, a.array) == ("B", "A")  # the second still shown as A
    assert a.layout == alltoall.out.layout
    assert "B[I, J_X] + A[I, J_X] -> C[I, J_X]" in shardc.compile(REUSE).to_text()
    assert_simulates(REUSE, {}, seed=0)


@pytest.mark.parametrize("use", ["C = B + A[I_Y, J_X]", "C = exp(A[I_Y, J_X]) * B", "C = B - A"])
def test_a_reshard_of_several_steps_reused(use):
    # A[I_X, J] -> A[I, J_X] -> B[I_Y, J_X], an AllToAll then a slice: line 5 reads B's value.
    text = f"mesh X=2, Y=2\ndim I=8, J=8\nA: f32[I_X, J]\nB[I_Y, J_X] = A\n{use}\n"
    compiled = compile_program(text, {}).compiled
    verify_ir(compiled)
    reads = [v for op in compiled.ops if op.span.line == 5 for v in operands(op) if v.array == "A"]
    assert [(v.id, v.format()) for v in reads] == [("B", "A[I_Y, J_X]")]
    assert_simulates(text, {}, seed=1)


def test_the_bug_it_fixes_is_an_internal_error(monkeypatch):
    """The lowering as it was names a value no op makes: the pass raises, it reports nothing."""
    monkeypatch.setattr(LoweringState, "name_last", _old_name_last)
    ctx = Context(Source("reuse.shard", REUSE))
    with pytest.raises(
        IRError,
        match=r"op 2 \(line 5, .*reads A\[I, J_X\] as value 'A\.1', "
        "which no earlier op makes",
    ):
        run_passes(ctx)
    assert not ctx.diagnostics.has_errors
    # With the check off, the pass hands on the inconsistent program.
    unchecked = tuple(
        InsertCollectives(verify=False) if isinstance(p, InsertCollectives) else p for p in PIPELINE
    )
    unit = run_passes(
        Context(Source("reuse.shard", REUSE)), unchecked, stop_after="insert-collectives"
    )
    assert unit.compiled is not None
    with pytest.raises(IRError):
        verify_ir(unit.compiled)


def test_the_pipeline_verifies_what_insert_collectives_makes():
    (lowering,) = [p for p in PIPELINE if isinstance(p, InsertCollectives)]
    assert lowering.verify


# ---- the checks, on programs built by hand -------------------------------------------------------


XY = {"X": 2, "Y": 2}


def test_a_value_no_op_makes():
    a, b = val("A", "I_X J"), val("B", "I_X J")
    with pytest.raises(
        IRError,
        match=r"op 1 \(line 0, Elementwise -> B\[I_X, J\]\): reads "
        r"A\[I_X, J\] as value 'A1'",
    ):
        verify_ir(prog(XY, {}, Input(a), Elementwise("exp", b, (val("A1", "I_X J"),))))


def test_a_value_read_before_it_is_made():
    a, a1, b = val("A", "I_X J"), val("A1", "I J"), val("B", "I J")
    with pytest.raises(IRError, match="op 1 .* 'A1', which no earlier op makes"):
        verify_ir(prog(XY, {}, Input(a), Elementwise("exp", b, (a1,)), LocalSlice(a1, a)))


def test_a_value_made_twice():
    a, b = val("A", "I J"), val("B", "I_X J")
    with pytest.raises(IRError, match="op 2 .* makes value 'B' again"):
        verify_ir(prog(XY, {}, Input(a), LocalSlice(b, a), LocalSlice(b, a)))


def test_a_value_read_in_another_layout():
    a, b = val("A", "I_X J"), val("B", "I J")
    with pytest.raises(
        IRError,
        match=r"reads value 'A' as A\[I, J_X\], but it was made as "
        r"A\[I_X, J\]",
    ):
        verify_ir(prog(XY, {}, Input(a), Elementwise("exp", b, (val("A", "I J_X"),))))


def test_a_value_read_with_dims_renamed_is_consistent():
    # `In[T->S, D]`: the same blocks, dim T called S.
    a, b = val("A", "T_X D"), val("B", "S_X D")
    program = prog(XY, {}, Input(a), Elementwise("exp", b, (val("A", "S_X D"),)))
    assert verify_ir(program) is program


# ---- every random program ------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans().flatmap(lambda symbolic: programs(symbolic=symbolic)))
def test_every_compiled_program_is_consistent(prog_):
    text, sizes = prog_
    result = run_pipeline(Source("<prop>", text), bindings=sizes, stop_after="insert-collectives")
    assert result.compiled is not None, result.rendered() + "\n" + text
    verify_ir(result.compiled)
