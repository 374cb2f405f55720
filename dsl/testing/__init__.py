"""Testing your own sharding rules (docs/testing.md).

- Hypothesis strategies: `meshes()`, `layouts(dims, mesh)` and `programs(...)`, which draws
  whole programs that `shardc.compile` accepts;
- checkers raising AssertionError with a readable message: `check_simulates(report)`,
  `check_at_points(report, points)`, `check_no_cheaper_plan(report)`;
- `# expect:` lines in .shard files, checked over the whole domain of sizes by `shardc test`
  and by the pytest plugin (`shardc.testing.pytest_plugin`, installed with the package);
- `Problem`, `cheaper_hand`: the optimality oracle itself (`shardc.testing.oracle`).

Names are imported on first use, so that loading the pytest plugin costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shardc.testing.checks import check_at_points, check_no_cheaper_plan, check_simulates
    from shardc.testing.expect import check_source
    from shardc.testing.generate import KINDS, programs
    from shardc.testing.oracle import Problem, cheaper_hand
    from shardc.testing.strategies import Mesh, layouts, meshes

__all__ = [
    "KINDS",
    "Mesh",
    "Problem",
    "cheaper_hand",
    "check_at_points",
    "check_no_cheaper_plan",
    "check_simulates",
    "check_source",
    "layouts",
    "meshes",
    "programs",
]


def __getattr__(name: str) -> Any:
    if name in ("check_at_points", "check_no_cheaper_plan", "check_simulates"):
        from shardc.testing import checks

        return getattr(checks, name)
    if name == "check_source":
        from shardc.testing import expect

        return expect.check_source
    if name in ("KINDS", "programs"):
        from shardc.testing import generate

        return getattr(generate, name)
    if name in ("Problem", "cheaper_hand"):
        from shardc.testing import oracle

        return getattr(oracle, name)
    if name in ("Mesh", "layouts", "meshes"):
        from shardc.testing import strategies

        return getattr(strategies, name)
    raise AttributeError(f"module 'shardc.testing' has no attribute {name!r}")
