"""The mesh limits (S015, H020: `shardc.passes.topology.mesh_limit`) for sizes bound after a
compile, by `Report.value(..., X=...)` and `Report.at(X=...)`: a mesh no machine holds is a
ValueError naming the binding, as a compile with it bound would be an error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from shardc.passes.topology import mesh_limit

if TYPE_CHECKING:
    from shardc.driver.report import Report


def check_mesh_bindings(report: Report, overrides: Mapping[str, float]) -> None:
    """Raise ValueError when `overrides` make the report's mesh larger than a machine holds."""
    axes = report.program.mesh_axes
    if not set(overrides) & set(axes):
        return
    merged = {**report.bindings, **overrides}
    declared = dict(report.program.mesh)
    sizes: dict[str, int] = {}
    for name in axes:
        v = merged.get(name, declared.get(name))
        if v is not None and float(v).is_integer():
            sizes[name] = int(v)
    topo = report.program.topology
    levels = {link.axis: link.level for link in topo.links} if topo is not None else {}
    problem = mesh_limit(sizes, levels, report.chip)
    if problem is not None:
        code, message, note, name = problem
        raise ValueError(f"{name}={sizes[name]}: error[{code}]: {message} ({note})")
