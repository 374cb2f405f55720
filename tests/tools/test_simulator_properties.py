"""Hypothesis: every compiled program, executed block by block on simulated devices, computes
exactly what the unsharded program computes. This is what proves the inserted collectives."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardc.driver.api import Compilation, run_pipeline
from shardc.lang.source import Source
from shardc.testing.strategies import programs
from shardc.tools.simulate import check, random_inputs


def compile_program(text: str, bindings: dict[str, int]) -> Compilation:
    return run_pipeline(Source("<prop>", text), set=bindings)


def assert_simulates(text: str, sizes: dict[str, int], seed: int) -> None:
    result = compile_program(text, sizes)
    assert not result.diagnostics.has_errors, result.rendered() + "\n" + text
    prog = result.compiled
    all_sizes = {n: s for n, s in (*prog.dims, *prog.mesh) if s is not None} | sizes
    rng = np.random.default_rng(seed)
    check(prog, random_inputs(prog, all_sizes, rng), all_sizes, seed=seed)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**16))
def test_compiled_programs_equal_unsharded(prog, seed):
    text, sizes = prog
    assert_simulates(text, sizes, seed)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(symbolic=True), st.integers(0, 2**16))
def test_symbolic_programs_equal_unsharded(prog, seed):
    text, sizes = prog
    assert_simulates(text, sizes, seed)
