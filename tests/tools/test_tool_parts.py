"""The tools' smaller parts, each from its own module: a sweep's grid and its bisection
(`shardc.tools.sweep_grid`), plot labels (`.sweep_plot`), split names (`.derive_splits`), the
simulated machine's block helpers (`.simulate_machine`), the calibration's cases
(`.calibrate.bench`), the language server's compile worker (`.lsp.worker`, `.lsp.compiler`) and
the old `shardc.tools.epoch.report` path."""

from __future__ import annotations

import asyncio
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from shardc.tools.calibrate.bench import plan
from shardc.tools.derive_splits import letter
from shardc.tools.epoch import report as old_epoch_report
from shardc.tools.epoch import results
from shardc.tools.lsp.compiler import Compiler
from shardc.tools.lsp.worker import compile_document
from shardc.tools.simulate_machine import index, inside, region_text, restrict
from shardc.tools.sweep_grid import Grid, refine
from shardc.tools.sweep_plot import short_labels


def test_a_grid_and_its_description():
    lin, log = Grid("B", 1, 9, 5, "lin"), Grid("B", 1, 1e4, 5, "log")
    assert lin.values.tolist() == [1, 3, 5, 7, 9]
    assert np.allclose(log.values, [1, 10, 100, 1000, 1e4])
    assert log.describe() == "B = 1 .. 10,000 (log, 5 points)"


@given(st.floats(min_value=1.5, max_value=9_999.0), st.sampled_from(["lin", "log"]))
def test_refine_brackets_the_change_between_two_points(threshold, scale):
    g = Grid("B", 1, 1e4, 9, scale)
    x = g.values
    i = int(np.searchsorted(x, threshold)) - 1  # x[i] < threshold <= x[i + 1]
    lo, hi, others = refine([g], np.array(i), [], lambda c: c[0] < threshold)
    assert others == [] and lo <= threshold <= hi
    assert math.isclose(lo, threshold, rel_tol=1e-9) and math.isclose(hi, threshold, rel_tol=1e-9)


def test_labels_names_and_regions():
    assert short_labels(["programs/mlp-dp-train.shard", "programs/mlp-fsdp-tp-train.shard"]) == [
        "dp",
        "fsdp-tp",
    ]
    assert short_labels(["one.shard"]) == ["one"]
    assert [letter(k) for k in (0, 25, 26)] == ["A", "Z", "P26"]
    assert region_text({"I": (0, 4), "J": (2, 6)}) == "I[0:4], J[2:6]"


def test_a_block_restricted_to_a_region_and_transposed():
    block = np.arange(4 * 6).reshape(4, 6)  # dims (I, J), covering I[4:8], J[0:6]
    have = {"I": (4, 8), "J": (0, 6)}
    want = {"I": (5, 7), "J": (2, 5)}
    assert inside(want, have) and not inside(have, want)
    assert index(want, have, ("I", "J")) == (slice(1, 3), slice(2, 5))
    piece = restrict(block, ("I", "J"), have, want, ("J", "I"))
    assert piece.tolist() == block[1:3, 2:5].T.tolist()


def test_the_calibrations_cases():
    quick, full = plan(quick=True, cpu=True), plan(quick=False, cpu=False)
    for p in (quick, full):
        names = [c.name for c in p.cases]
        assert names[0] == "dispatch" and len(set(names)) == len(names)
    assert len(full.cases) > len(quick.cases)


def test_the_old_epoch_report_path_names_the_same_things():
    for name in old_epoch_report.__all__:
        assert getattr(old_epoch_report, name) is getattr(results, name), name


def test_the_worker_compiles_a_document_to_plain_data():
    bad = compile_document("file:///t.shard", "mesh X=2\ndim I=8\nA: f32[I_X]\nB = gelo(A)\n")
    assert [(d["code"], d["span"]) for d in bad["diagnostics"]] == [("N012", [4, 5, 4, 9])]
    good = compile_document("file:///t.shard", "mesh X=2\ndim I=8\nA: f32[I_X]\nB = gelu(A)\n")
    assert good["diagnostics"] == [] and good["hover"]


def test_the_compiler_runs_the_worker_in_a_child_process():
    async def both():
        c = Compiler(budget=30.0)
        try:
            first = await c.compile("file:///a.shard", "dim I=8\nA: f32[I]\nB = gelo(A)\n")
            second = await c.compile("file:///b.shard", "dim I=8\nA: f32[I]\nB = gelu(A)\n")
        finally:
            c.stop()  # kills the worker; the wait for it is a task of this loop
            pending = asyncio.all_tasks() - {asyncio.current_task()}
            if pending:
                await asyncio.wait(pending, timeout=60)
        return first, second

    first, second = asyncio.run(both())
    assert [d["code"] for d in first["diagnostics"]] == ["N012"]
    assert second["diagnostics"] == []


def test_the_hover_names_the_limit_the_regions_went_past(monkeypatch):
    """Past the regions' cap each hover says which limit was hit, in the report's words
    (`render.writer.past_text`); below it (several regions, the largest shown), none."""
    import dataclasses

    import shardc
    from shardc.driver import region_totals
    from shardc.tools.lsp.worker import _hovers
    from tests.driver.test_regions import FSDP

    monkeypatch.setattr(region_totals, "REGIONS_STATEMENTS", 0)
    r = shardc.compile(FSDP, set={"X": 16}, objective="statement")
    assert r.shown_region is not None and r.shown_region.past == "statements"
    where = r.shown_region.where
    for past, words in (
        ("statements", "(more than 160 statements to lower to find the regions: the plan where "),
        ("seconds", "(more than 20 s of CPU time to find the regions: the plan where "),
        ("regions", "(more than 16 regions: the plan where "),
        (None, "\n(the plan where "),
    ):
        shown = dataclasses.replace(r, shown_region=r.shown_region._replace(past=past))
        hovers = _hovers(shown)
        assert hovers and all(f"{words}{where}: " in h for h in hovers.values())
