"""The plans a sweep's grid reaches (`shardc.tools.sweep_plans`): which grid axes may change a
plan, the grid's points, the variants found over them, each point classified to one, and how a
change of plan is written."""

from __future__ import annotations

import numpy as np
import pytest

import shardc
from shardc.tools.sweep_grid import Grid
from shardc.tools.sweep_plans import Piecewise, PlanChange, find, grid_points, plans, swept_free
from tests.driver.test_regions import FSDP

GRIDS = [Grid("B", 1024, 65536, 7, "log"), Grid("X", 4, 64, 5, "log"), Grid("D", 1, 2, 2, "lin")]


@pytest.fixture(scope="module")
def report():
    return shardc.compile(FSDP)  # B and X free; D bound


def test_only_free_sizes_can_change_a_plan(report):
    assert swept_free(report, GRIDS) == ["B", "X"]
    assert find(report, GRIDS[2:]) == ()  # D is bound: the report's own plans hold


def test_grid_points_in_c_order():
    points = grid_points(GRIDS[:2], ["B", "X"])
    assert set(points) == {"B", "X"} and len(points["B"]) == 7 * 5
    assert np.allclose(points["B"][:5], 1024) and np.allclose(points["X"][:5], GRIDS[1].values)
    assert grid_points(GRIDS[:2], ["X"]).keys() == {"X"}


def test_the_variants_share_the_grid_as_its_points_are_classified(report):
    # over B and X: the weights gathered, the activations moved, and (from the planner's wider
    # roles for symbolic sizes) the F-sharded plans of the whole-program objective
    found = find(report, GRIDS)
    assert found is not None and len(found) == 3
    found_plans = plans(found)
    assert [p.letter for p in found_plans] == ["A", "B", "C"]
    assert len({p.collectives for p in found_plans}) == 3
    assert sum(p.share for p in found_plans) == pytest.approx(1.0)
    grids = GRIDS[:2]
    coords = np.meshgrid(*(g.values for g in grids), indexing="ij")
    which = Piecewise(found, [], grids, ["B", "X"]).plan(coords)
    for k, p in enumerate(found_plans):
        assert np.mean(which == k) == pytest.approx(p.share)


def test_a_change_of_plan_in_words():
    assert PlanChange("B", 7680.0, {}, "A", "B").describe() == "plan A -> B at B = 7,680"
    assert PlanChange("B", 7680.0, {"X": 16.0}, "B", "A").describe() == (
        "plan B -> A at B = 7,680, X = 16"
    )
