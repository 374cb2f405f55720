"""The old name of `shardc.passes.symbolic_plans` (plan choices over symbolic sizes), kept so
that imports of it go on working."""

from shardc.passes.symbolic_plans import (  # noqa: F401
    SAMPLES,
    AtPoint,
    Branch,
    Candidate,
    Chooser,
    Majority,
    OnSample,
    Recipe,
    Region,
    RegionFinder,
    Variant,
    cheaper,
    classify,
    evaluate,
    exact,
    plan_key,
    sample_points,
    symbolic_time,
    variants,
    winners,
)
