"""Moved to `shardc.lang.input_limits` (the limits on what shardc accepts; `shardc limits` is the
Epoch model, `shardc.tools.epoch`). This re-export stays until nothing imports the old path."""

from shardc.lang.input_limits import (
    MAX_AXES_PER_DIM,
    MAX_CONFIG_BYTES,
    MAX_MESH_AXES,
    MAX_NESTING,
    MAX_PLAN_CHIPS,
    MAX_REGIONS,
    MAX_SOURCE_BYTES,
    MAX_STATEMENTS,
    MAX_SWEEP_POINTS,
    REGIONS_SECONDS,
    SOLVE_SECONDS,
)

__all__ = [
    "MAX_AXES_PER_DIM",
    "MAX_CONFIG_BYTES",
    "MAX_MESH_AXES",
    "MAX_NESTING",
    "MAX_PLAN_CHIPS",
    "MAX_REGIONS",
    "MAX_SOURCE_BYTES",
    "MAX_STATEMENTS",
    "MAX_SWEEP_POINTS",
    "REGIONS_SECONDS",
    "SOLVE_SECONDS",
]
