"""The old name of `shardc.tools.derive_by_region` (`derive --solve-for` region by region),
kept so that imports of it go on working."""

from shardc.tools.derive_by_region import (  # noqa: F401
    SCAN,
    TOP,
    interval_text,
    intervals,
    solve_by_region,
    union,
)
