"""The driver's functions over a compiled report, each from its own module: names and values
(`shardc.driver.values`), points (`.points`: `value` and `at` with more sizes bound), the step
(`.step`, `.overlap`), the mesh limit on bound sizes (`.mesh_limits`), what a report was
compiled from (`.recipe`), its caches (`.caches`), the JSON form (`.json_report`), the old
writer names (`.printers`) and the notebook views (`.notebook`)."""

from __future__ import annotations

import json
import math

import pytest
import sympy as sp

import shardc
from shardc.driver import (
    caches,
    json_report,
    mesh_limits,
    notebook,
    overlap,
    points,
    printers,
    recipe,
    step,
    values,
)
from shardc.driver.render import write

SOURCE = "mesh X=16\ndim B, D=16, F=6\nA: bf16[B, D_X]\nW: bf16[D_X, F]\nC[B, F] = A ·_D W\n"
"""B left free; on h100 the 16 devices span two NVLink domains, and the chip is calibrated."""


@pytest.fixture(scope="module")
def free():
    return shardc.compile(SOURCE, hw="h100")


@pytest.fixture(scope="module")
def bound():
    return shardc.compile(SOURCE.replace("dim B,", "dim B=1024,"), hw="h100")


def test_names_formulas_and_values(free):
    names = values.names(free)
    assert {"B", "D", "F", "X", "C"} <= set(names)
    assert values.symbol(free, "B") is names["B"] and names["B"].is_positive
    b, d, f, c, x = (names[n] for n in "BDFCX")
    assert sp.simplify(values.formula(free, "t_math_s") - 2 * b * d * f / (c * x)) == 0
    assert values.value(free, "2*B", B=3) == 6.0
    assert values.value(free, "t_math_s") is None  # B is free: no number
    assert values.finite(float("nan")) is None and values.finite(float("inf")) is None
    assert values.finite(2) == 2.0
    assert values.binding("B", "4k") == 4000.0  # a size as the command line reads it


def test_a_point_is_the_compile_with_the_size_bound(free, bound):
    at = points.at(free, B=1024)
    assert at.bindings["B"] == 1024 and "B" not in free.bindings
    for total in ("t_math_s", "t_hbm_s", "t_comms_s", "t_lower_s"):
        want = bound.value(total)
        assert math.isclose(points.value(free, total, B=1024), want, rel_tol=1e-12)
        assert math.isclose(at.value(total), want, rel_tol=1e-12)


def test_the_step(bound):
    assert step.bound(bound) == "comms" and step.mesh_sizes(bound) == {"X": 16.0}
    assert step.calibrated(bound)
    assert not step.calibrated(shardc.compile(SOURCE, hw="tpu-v5e"))
    durations = step.step_durations(bound, expected=True)
    assert durations is not None and set(durations) == {op.index for op in bound.ops}
    t_step, prefetch = overlap.expected_schedule(bound)
    assert t_step >= max(durations.values()) and t_step <= sum(durations.values()) + 1e-3
    assert set(prefetch) <= set(durations)
    used = step.utilization(bound)
    assert used is not None and 0 < used["mfu"] <= used["hfu"] <= 1
    assert used["model_flops"] == 2 * 1024 * 16 * 6 / 16 * 16  # 2BDF over the whole mesh
    assert step.scheduled_step(bound) >= bound.value("t_lower_s") * (1 - 1e-12)
    assert step.conditions(bound) == bound.conditions == bound.cost.conditions
    expected = shardc.compile(SOURCE.replace("dim B,", "dim B=1024,"), hw="h100", on="expected")
    assert [c.text for c in step.conditions(expected)] == [
        f"{c.text}, on T_expected's rates" for c in bound.cost.conditions
    ]


def test_a_mesh_no_machine_holds_is_refused_by_name(free):
    mesh_limits.check_mesh_bindings(free, {"X": 64})
    with pytest.raises(ValueError, match=r"^X=1099511627776: error\[S015\]"):
        mesh_limits.check_mesh_bindings(free, {"X": 2**40})


def test_the_recipe_compiles_again_with_more_sizes(free):
    r = free.recipe
    assert isinstance(r, recipe.Recipe) and r.source.text == SOURCE
    again = recipe.rerun(r, {"B": 64})
    assert isinstance(again, recipe.Recipe) and again.source == r.source and again != r


def test_fresh_caches_keep_only_what_numbers_do_not_change():
    m = caches.Memo(names={"B": sp.Symbol("B")}, regions=("found",))
    m.values[sp.Symbol("B")] = 3.0
    m.env = {}
    fresh = m.fresh()
    assert fresh.names is m.names and fresh.functions is m.functions
    assert fresh.regions == ("found",) and fresh.values == {} and fresh.env is None


def test_the_json_form(bound):
    d = json_report.report_dict(bound)
    assert d["schema"] == "shardc.report/1" and d["hardware"] == "h100"
    public = {k: v for k, v in d.items() if not k.startswith("_")}  # `_mesh_order`: for writers
    assert json.loads(json_report.report_json(bound)) == json.loads(json.dumps(public))
    assert json_report.topology_dict(bound) == [{"axis": "X", "level": "nvlink", "nvlink_part": 8}]
    formula = bound.totals["t_comms_s"]
    q = json_report.formula_json(bound, formula)
    assert q is bound.q(formula) and q["value"] == bound.value(formula)


def test_the_old_writer_names_write_what_the_writers_write(bound):
    assert printers.render_text(bound) == write(bound, "text")
    assert printers.render_markdown(bound) == write(bound, "md")
    assert printers.render_latex(bound) == write(bound, "latex")


def test_the_notebook_views(bound):
    assert notebook.short_repr(bound) == (
        "<shardc.Report '<string>': chip h100, model exact, 2 ops, T_lower 16.1 us, bound comms>"
    )
    frame = notebook.ops_frame(bound)
    assert len(frame) == len(bound.ops)
    assert len(notebook.arrays_frame(bound)) == 3
    assert notebook.render_html(bound).count("<table>") >= 2
