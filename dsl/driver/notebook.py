"""The report in a notebook: a short `repr`, an HTML view (`_repr_html_`: the summary with its
formulas in LaTeX, the training memory, the ops (axes, bytes, why) and each array's blocks on
the mesh in collapsible tables), the decisions as a table, and pandas DataFrames of the ops and
arrays (`ops_frame`, `arrays_frame`; pandas is optional). The report's HTML is
`shardc.driver.render.html`, a writer over the document model; the pictures are
`shardc.driver.show`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.driver.decisions import decisions_html
from shardc.driver.render.html import math_html, table_html
from shardc.lang.units import fmt_value

if TYPE_CHECKING:
    from shardc.driver.report import Report


def short_repr(r: Report) -> str:
    """One line: the program, chip, step time and bound (`repr(report)`)."""
    step = r.value(r.totals["t_lower_s"])
    return (
        f"<shardc.Report {r.name!r}: chip {r.hardware_name or 'none'}, model {r.model}, "
        f"{len(r.ops)} ops, T_lower {fmt_value(step, 's')}, bound {r.bound() or '?'}>"
    )


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(
            "ops_frame() and arrays_frame() need pandas (pip install pandas)"
        ) from exc
    return pandas


def ops_frame(r: Report) -> Any:
    """One row per op: index, line, kind, op, axes, from, to, FLOPs/device, bytes, time (s),
    bound; numbers where the report has them."""
    pd = _pandas()
    rows = []
    for c in r.ops:
        moved = c.comm_bytes if c.kind == "collective" else c.hbm_bytes
        rows.append(
            {
                "index": c.index,
                "line": c.line,
                "kind": c.kind,
                "op": c.op,
                "axes": ",".join(c.axes),
                "from": c.src,
                "to": c.dst,
                "flops_per_device": r.value(c.flops_per_device),
                "bytes": r.value(moved),
                "time_s": r.value(c.time),
                "bound": r.op_bound(c),
            }
        )
    return pd.DataFrame(rows).set_index("index")


def arrays_frame(r: Report) -> Any:
    """One row per array: name, dtype, layout, bytes per device and in total, instances."""
    pd = _pandas()
    return pd.DataFrame(
        [
            {
                "name": a.name,
                "dtype": a.dtype,
                "layout": a.layout,
                "bytes_per_device": r.value(a.bytes_per_device),
                "bytes_total": r.value(a.bytes_total),
                "instances": r.value(getattr(a, "count", 1)),
            }
            for a in r.cost.arrays
        ]
    ).set_index("name")


def render_html(r: Report) -> str:
    """The HTML view (`_repr_html_`): summary, memory, and the ops, collapsible; then each
    array's blocks on the mesh (`shardc.driver.show`), collapsible."""
    from shardc.driver.render import write
    from shardc.driver.show import array_pictures
    from shardc.driver.show_writers import to_html

    pictures = array_pictures(r)
    return (
        write(r, "html") + f"\n<details><summary>sharding: {len(pictures)} array"
        f"{'s' if len(pictures) != 1 else ''}</summary>"
        + "\n".join(to_html(p) for p in pictures)
        + "</details>"
    )


__all__ = [
    "arrays_frame",
    "decisions_html",
    "math_html",
    "ops_frame",
    "render_html",
    "short_repr",
    "table_html",
]
