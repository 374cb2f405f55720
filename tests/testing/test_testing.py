"""shardc.testing's public API as a user meets it: the strategies keep their bounds and draw
programs the compiler accepts, the checkers pass on right programs and fail with readable
messages, and a user's own folder runs under plain pytest."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shardc
import shardc.testing as testing
from shardc.testing import (
    KINDS,
    check_at_points,
    check_no_cheaper_plan,
    check_simulates,
    layouts,
    meshes,
    programs,
)
from shardc.tools.simulate import SimulationError

SLOW = settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=25)


def test_the_public_names():
    assert set(testing.__all__) >= {
        "meshes",
        "layouts",
        "programs",
        "check_simulates",
        "check_at_points",
        "check_no_cheaper_plan",
    }
    with pytest.raises(AttributeError):
        testing.nothing  # noqa: B018


@SLOW
@given(st.data())
def test_meshes_and_layouts_keep_their_bounds(data):
    mesh = data.draw(meshes(max_devices=6, max_axes=2))
    assert mesh.devices <= 6 and 1 <= len(mesh.names) <= 2
    text = data.draw(layouts(("I", "J", "K"), mesh))
    used = [a for a in "XYZ" if a in text]
    assert len(used) == len(set(used)) and set(used) <= set(mesh.names)


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_compiles_and_simulates(kind):
    @SLOW
    @given(programs(kinds=[kind], max_devices=8, max_statements=3, max_size=32, hardware="tpu-v5e"))
    def run(text):
        r = shardc.compile(text)
        assert r.value("t_lower_s") is not None  # the hardware line is there
        check_simulates(r)

    run()


@SLOW
@given(programs(max_statements=4, symbolic=True, max_axes=2))
def test_symbolic_programs_simulate_at_small_sizes(text):
    check_simulates(shardc.compile(text))


@SLOW
@given(programs(kinds=["contraction", "reshard", "reduction"], max_statements=5))
def test_statement_bound(text):
    statements = [line for line in text.splitlines() if " = " in line]
    assert 1 <= len(statements) <= 5


def test_bad_arguments_say_what_is_allowed():
    with pytest.raises(ValueError, match="choose from contraction"):
        programs(kinds=["matmul"])
    with pytest.raises(ValueError, match="max_axes"):
        meshes(max_axes=4)


def test_check_simulates_names_the_op_and_the_error(monkeypatch):
    r = shardc.compile("mesh X=2\ndim I=4, J=4, K=4\nA: f32[I, J_X]\nB: f32[J_X, K]\nC = A ·_J B\n")
    value = r.program.ops[-1].out.id

    def wrong(*args, **kwargs):
        raise SimulationError(
            f"value '{value}' C[I, K] on device (X=1) differs from the "
            "unsharded result at I[0:4] K[0:4] (max error 3.0)"
        )

    monkeypatch.setattr("shardc.testing.checks.check", wrong)
    with pytest.raises(AssertionError) as failed:
        check_simulates(r)
    message = str(failed.value)
    assert (
        "<string>: the simulated devices disagree with the unsharded program at X=2, I=4, "
        "J=4, K=4: op " in message
    )
    assert "(line 5)" in message and "max error 3.0" in message


def test_check_simulates_catches_a_wrong_collective():
    """The compiler's AllReduce replaced by an AllGather (which cannot sum partial sums): the
    message names the op the simulator stopped at and why."""
    import dataclasses

    from shardc.passes.ir import Collective

    r = shardc.compile(
        "mesh X=2\ndim I=4, J=4, K=4\nA: f32[I, J_X]\nB: f32[J_X, K]\nC[I, K] = A ·_J B\n"
    )
    ops = list(r.program.ops)
    i = next(k for k, o in enumerate(ops) if isinstance(o, Collective))
    ops[i] = dataclasses.replace(ops[i], op="AllGather")
    wrong = dataclasses.replace(
        r, cost=dataclasses.replace(r.cost, program=dataclasses.replace(r.program, ops=tuple(ops)))
    )
    with pytest.raises(AssertionError) as failed:
        check_simulates(wrong)
    assert (
        "AllGather_X C[I, K]{U_X} -> C[I, K] (value 'C'): AllGather moves data but cannot "
        "sum partials" in str(failed.value)
    )


def test_check_simulates_refuses_what_numpy_cannot_hold():
    r = shardc.compile("mesh X=2\ndim I=4Mi, J=4Mi\nA: f32[I_X, J]\n")
    with pytest.raises(ValueError, match="pass smaller sizes"):
        check_simulates(r, sizes={"I": 2**22, "J": 2**22})
    check_simulates(r)  # the report's own sizes are too large: small ones are run instead


AT = "mesh X=4\ndim B, D\nhardware tpu-v5e\nA: bf16[B_X, D]\nW: bf16[D_X, B]\nC = A ·_D W\n"


def test_check_at_points_passes_where_the_formulas_are_the_compile(tmp_path: Path):
    r = shardc.compile(AT)
    points = [{"B": 64, "D": 8}, {"B": 2**20, "D": 4096}, {"B": 4096, "D": 2**16}]
    check_at_points(r, points, source=AT)
    check_at_points(r, points)  # against report.at
    path = tmp_path / "at.shard"
    path.write_text(AT, encoding="utf-8")
    check_at_points(shardc.compile(path), points)  # the file is read again


def test_check_at_points_fails_with_both_values():
    r = shardc.compile(AT)
    other = AT.replace("hardware tpu-v5e", "hardware tpu-v5p")
    with pytest.raises(AssertionError, match=r"at B=64, D=8, t_\w+ of the symbolic report is "):
        check_at_points(r, [{"B": 64, "D": 8}], source=other, hw=None)


MATMUL = (
    "mesh X=2, Y=2\ndim I=256, J=256, K=256\nhardware tpu-v5e\nIn: bf16[I_X, J_Y]\n"
    "W: bf16[J, K_X]\nOut[I, K_Y] = In ·_J W\n"
)


def test_check_no_cheaper_plan_on_a_users_statement():
    check_no_cheaper_plan(shardc.compile(MATMUL), source=MATMUL, max_hands=25)


def test_check_no_cheaper_plan_shows_the_hand_program(monkeypatch):
    from shardc.testing.checks import Cheaper

    monkeypatch.setattr(
        "shardc.testing.checks.cheaper_plans",
        lambda *args: [Cheaper(6, "mesh X=2\nC = A ·_J B\n", 1e-6, 2e-6)],
    )
    with pytest.raises(AssertionError) as failed:
        check_no_cheaper_plan(shardc.compile(MATMUL), source=MATMUL, max_hands=3)
    assert str(failed.value) == (
        "<string>:6: a hand-written plan costs 1e-06 s, the "
        "compiler's 2e-06 s (2x):\nmesh X=2\nC = A ·_J B\n"
    )


def test_check_no_cheaper_plan_needs_the_text_and_a_statement():
    with pytest.raises(ValueError, match="needs the program's text"):
        check_no_cheaper_plan(shardc.compile(MATMUL))
    text = MATMUL.replace("dim I=256", "dim I")
    with pytest.raises(ValueError, match="I has no value"):
        check_no_cheaper_plan(shardc.compile(text), source=text)


# ---- the "done when": a user's folder under plain pytest -----------------------------
USER_TEST = """
from hypothesis import given, settings

import shardc
from shardc.testing import check_simulates, programs


@settings(max_examples=15, deadline=None)
@given(programs(max_statements=2, max_devices=8))
def test_my_programs_compute_what_they_say(text):
    check_simulates(shardc.compile(text))
"""
QUIET = """# data parallel: nothing moves
mesh X=8
dim B, D, F
A: bf16[B_X, D]
W: bf16[D, F]
Y = A ·_D W
# expect: comm_bytes == 0
"""
GATHERS = """# the weights are sharded: they are gathered
mesh X=8
dim B, D, F
A: bf16[B_X, D]
W: bf16[D_X, F]
Y[B_X, F] = A ·_D W
# expect: comm_bytes == 0
"""


def test_a_users_folder_under_plain_pytest(tmp_path: Path):
    (tmp_path / "test_props.py").write_text(textwrap.dedent(USER_TEST), encoding="utf-8")
    (tmp_path / "quiet.shard").write_text(QUIET, encoding="utf-8")
    (tmp_path / "gathers.shard").write_text(GATHERS, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = proc.stdout
    assert proc.returncode == 1, out[-4000:] + proc.stderr[-2000:]
    assert "1 failed, 2 passed" in out, out[-4000:]
    assert "FAILED gathers.shard::line 7: comm_bytes == 0" in out
    assert "gathers.shard:7: expectation failed: comm_bytes == 0" in out
    # the counterexample and both sides' values
    assert "  at B=8, D=8, F=1 (a counterexample Hypothesis found and shrank)" in out, out
    assert "comm_bytes = " in out and "0 = 0" in out
