"""The pipeline as data: pass names, stopping points, what the passes return, and the program
graph (networkx) the scheduler and activation liveness are computed on."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from typing import get_args

import pytest

import shardc
from shardc.driver.api import run_pipeline
from shardc.lang.source import Source
from shardc.passes.context import Context, Options
from shardc.passes.graph import build_graph, distinct_inputs, op_inputs, ops_in_order, producers
from shardc.passes.ir import gradient_name
from shardc.passes.pipeline import (
    PIPELINE,
    DeriveCost,
    InsertCollectives,
    PassName,
    Unit,
    configure,
    run_passes,
)
from shardc.passes.schedule import critical_path, schedule
from tests.paths import ROOT

TRAIN = (
    "mesh X=2\ndim B=8, D=4, F=6\nIn: bf16[B_X, D]\nparam W: bf16[D, F]\n"
    "Out[B_X, F] = In ·_D W\nbackward\n"
)


def test_pass_names_are_the_pipeline_in_order():
    assert get_args(PassName) == tuple(p.name for p in PIPELINE)
    for p in PIPELINE:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", p.name), p.name
        assert dataclasses.is_dataclass(p) and type(p).__dataclass_params__.frozen


def test_planner_switches_are_fields_of_their_passes():
    """`explain` and `idle_axes` are parameters of the passes that use them (as an xDSL pass
    carries its options): `configure` sets them from the user's `Options`; the context has no
    such switch for a pass to read."""
    for p in PIPELINE:
        assert set(p.options) <= {f.name for f in dataclasses.fields(p)}
        assert set(p.options) <= {f.name for f in dataclasses.fields(Options)}
    assert {p.name: p.options for p in PIPELINE if p.options} == {
        "insert-collectives": ("explain", "idle_axes"),
        "derive-cost": ("explain",),
    }
    assert not hasattr(Context(Source("t", TRAIN)), "explain")
    lean = configure(PIPELINE, Options(explain=False, idle_axes=False))
    (lower,) = [p for p in lean if isinstance(p, InsertCollectives)]
    (cost,) = [p for p in lean if isinstance(p, DeriveCost)]
    assert (lower.explain, lower.idle_axes, cost.explain) == (False, False, False)
    assert configure(PIPELINE, Options()) == PIPELINE  # the defaults are the passes' own


def test_a_pass_runs_by_its_own_parameters_not_the_options():
    """The same context, two pipelines: the passes' fields decide, the options are not read."""
    ctx = Options(hw="tpu-v5e")  # explain=True in the options
    full = run_passes(Context(Source("t", TRAIN), options=ctx))
    lean_passes = tuple(
        dataclasses.replace(p, explain=False) if "explain" in p.options else p for p in PIPELINE
    )
    lean = run_passes(Context(Source("t", TRAIN), options=ctx), lean_passes)
    assert full.compiled is not None and lean.compiled is not None
    assert full.compiled.decisions and not lean.compiled.decisions
    assert full.cost is not None and lean.cost is not None
    assert any(c.crossover_bytes is not None for c in full.cost.ops)
    assert all(c.crossover_bytes is None for c in lean.cost.ops)
    # compile's keyword reaches the same field
    assert not shardc.compile(TRAIN, hw="tpu-v5e", explain=False).program.decisions


@pytest.mark.parametrize("stop", get_args(PassName))
def test_stop_after_each_pass(stop):
    unit = run_passes(Context(Source("t", TRAIN), options=Options(hw="tpu-v5e")), stop_after=stop)
    made = {f.name for f in dataclasses.fields(Unit) if getattr(unit, f.name) is not None}
    names = get_args(PassName)
    ran = set(names[: names.index(stop) + 1])
    assert ("compiled" in made) == ("insert-collectives" in ran)
    assert ("cost" in made) == ("derive-cost" in ran)
    assert ("chip" in made) == ("resolve-hardware" in ran)
    assert ("backward_line" in made) == ("derive-backward" in ran)


def test_unknown_stop_after_is_refused():
    with pytest.raises(ValueError, match="no pass named 'check'"):
        run_passes(Context(Source("t", TRAIN)), stop_after="check")  # type: ignore[arg-type]


def test_api_stopping_points_keep_working():
    r = run_pipeline(Source("t", TRAIN), stop_after="validate")
    assert r.program is not None and r.compiled is None and r.report is None
    r = run_pipeline(Source("t", TRAIN), stop_after="insert-collectives")
    assert r.compiled is not None and r.report is None
    assert run_pipeline(Source("t", TRAIN)).report is not None


def test_options_and_context_are_frozen():
    opts = Options(bindings={"B": 8})
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.model = "book"  # type: ignore[misc]
    with pytest.raises(TypeError):
        opts.bindings["B"] = 16  # type: ignore[index]
    ctx = Context(Source("t", ""), options=opts)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.options = opts  # type: ignore[misc]


def test_validate_returns_the_bindings_it_passed():
    """The later passes read `Unit.bindings`, what `validate` returned: the good bindings as
    numbers, the bad one (N016) dropped; the options keep what the caller gave."""
    from decimal import Decimal

    opts = Options(bindings={"B": Decimal(8), "D": Decimal("0.5"), "C": Decimal("2e14")})
    ctx = Context(Source("t", "mesh X=2\ndim B, D=4\nA: bf16[B_X, D]\n"), options=opts)
    unit = run_passes(ctx, stop_after="validate")
    assert [d.code for d in ctx.diagnostics.items] == ["N016"]
    assert dict(unit.bindings) == {"B": 8, "C": 2e14}
    assert type(unit.bindings["B"]) is int and opts.bindings["B"] == Decimal(8)
    with pytest.raises(TypeError):
        unit.bindings["B"] = 16  # type: ignore[index]


def test_the_chip_lives_in_the_unit_only():
    """One home for the chip and topology: the unit the passes hand on, not the context."""
    unit = run_passes(Context(Source("t", TRAIN), options=Options(hw="tpu-v5e")))
    assert unit.chip is not None and unit.chip.name == "tpu-v5e" and unit.topology is not None
    assert not hasattr(Context(Source("t", "")), "chip")


def test_the_compiled_program_carries_the_backward_line_and_params():
    compiled = run_pipeline(Source("t", TRAIN)).compiled
    assert compiled.backward_line == 6 and compiled.params == ("W",)
    assert gradient_name("W") in {v.array for v in compiled.arrays}
    assert run_pipeline(Source("t", TRAIN.replace("backward\n", ""))).compiled.backward_line is None


def test_schedule_is_never_shorter_than_the_critical_path():
    r = shardc.compile(
        ROOT / "programs" / "mlp-fsdp-train.shard",
        hw="tpu-v5e",
        set={"B": 1024, "D": 4096, "F": 16384},
    )
    durations = {c.index: r.value(c.time) for c in r.ops}
    total = sum(durations.values())
    path = critical_path(r.program, durations)
    assert 0 < path <= schedule(r.program, durations) <= total + 1e-12


@pytest.mark.parametrize("path", sorted((ROOT / "programs").glob("*.shard")), ids=lambda p: p.stem)
def test_the_edge_walk_is_the_program_graph(path):
    """The schedule and the memory walk read an op's inputs and a value's producer from
    `distinct_inputs` and `producers` instead of building the graph: the same predecessors,
    in the same order, as networkx's."""
    compiled = shardc.compile(path).program
    g = build_graph(compiled)
    made_by = producers(compiled)
    for i, op in enumerate(compiled.ops):
        assert [("value", v) for v in distinct_inputs(op)] == list(g.predecessors(("op", i)))
        assert ("op", made_by[op.out.id]) == next(iter(g.predecessors(("value", op.out.id))))
    for node in g.nodes:
        if node[0] == "value" and node[1] not in made_by:
            assert not list(g.predecessors(node))


def test_ops_in_order_sorts_a_program_out_of_order():
    compiled = run_pipeline(Source("t", TRAIN)).compiled
    assert [i for i, _ in ops_in_order(compiled)] == list(range(len(compiled.ops)))
    shuffled = dataclasses.replace(compiled, ops=compiled.ops[::-1])
    seen: set[str] = set()
    for _, op in ops_in_order(shuffled):
        assert set(op_inputs(op)) <= seen
        seen.add(op.out.id)


@pytest.mark.parametrize(
    "program, then",
    [
        (
            "mesh X=2\\ndim B, D, F\\nA: bf16[B_X, D]\\nW: bf16[D, F]\\nC[B_X, F] = A ·_D W\\n",
            "pass",
        ),
        # the memory walk (remat) and the schedule
        (
            TRAIN.replace("\n", "\\n") + "hardware tpu-v5e\\n",
            "schedule(r.program, r.step_durations())",
        ),
    ],
    ids=["forward", "training step on a chip"],
)
def test_a_compile_does_not_import_networkx(program, then):
    code = (
        "import sys, shardc; from shardc.passes.schedule import schedule; "
        f"r = shardc.compile('{program}', remat='block'); {then}; "
        "print('networkx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
