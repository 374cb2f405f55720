"""The report in a notebook: a short `repr`, an HTML view (`_repr_html_`: the summary with its
formulas in LaTeX, the training memory, and the ops in a collapsible table), the decisions as
a table, and pandas DataFrames of the ops and arrays (`ops_frame`, `arrays_frame`; pandas is
optional). The HTML view itself is `shardc.driver.render.html`, a writer over the document model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.driver import decisions as words
from shardc.driver.escape import html_text
from shardc.driver.render.html import math_html, table_html
from shardc.lang.units import fmt_value

if TYPE_CHECKING:
    from shardc.driver.decisions import Decisions
    from shardc.driver.report import Report
    from shardc.passes.ir import Alternative, Decision


def short_repr(r: Report) -> str:
    """One line: the program, chip, step time and bound (`repr(report)`)."""
    step = r.value(r.totals["t_lower_s"])
    return (f"<shardc.Report {r.name!r}: chip {r.hardware_name or 'none'}, model {r.model}, "
            f"{len(r.ops)} ops, T_lower {fmt_value(step, 's')}, bound {r.bound() or '?'}>")


def decisions_html(ds: Decisions) -> str:
    """The decisions as a table: each contraction's case, the plan chosen and the runner-up,
    each with what ranked it and its communication time as a formula, and when the runner-up
    would win (or by how much it lost)."""
    e = html_text
    if not ds:
        return ("<div class='shardc-decisions'><b>decisions</b>: none (each contraction had "
                "one plan, or one that moves no data)</div>")
    rows = []
    for d, case in zip(ds, ds.cases, strict=True):
        chosen, others = d.alternatives[0], d.alternatives[1:]
        ru = _plan_cell(d, others[0]) if others else "none: no other plan"
        if len(others) > 1:
            ru += (f"<details><summary>{len(others) - 1} more</summary>"
                   + "<br>".join(_plan_cell(d, a) for a in others[1:]) + "</details>")
        rows.append((str(d.line), f"<code>{e(words.statement(d))}</code>", e(case),
                     e(words.decided_by(d)), _plan_cell(d, chosen), ru,
                     _wins_cell(d, others[0]) if others else ""))
    head = ("line", "statement", "case", "decided by", "chosen plan", "runner-up",
            "runner-up wins when")
    return ("<div class='shardc-decisions'><b>decisions</b>: the plan each contraction got, "
            "and what it beat<br>\n" + table_html(head, rows) + "</div>")


def _plan_cell(d: Decision, a: Alternative) -> str:
    """A plan's steps, what ranked it, and its communication time as a formula."""
    return (f"{html_text(words.plan_text(d, a))}<br>[{html_text(words.ranking_note(d, a))}]"
            f"<br>comms {math_html(a.cost)}")


def _wins_cell(d: Decision, a: Alternative) -> str:
    """The relation over the sizes under which `a` would win, in LaTeX; in words where there is
    none (`never`, `always`), or the cost ratio where the numbers decided."""
    if d.numeric:
        best = d.alternatives[0].value
        return (f"never at these sizes: {a.value / best:.3g}&times; the chosen plan's cost"
                if best else "never at these sizes")
    when = words.condition(d, a)
    if a.wins is None or when in ("always", "never") or when.startswith("never:"):
        return html_text(when)
    return math_html(a.wins)


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:
        raise ImportError("ops_frame() and arrays_frame() need pandas "
                          "(pip install pandas)") from exc
    return pandas


def ops_frame(r: Report) -> Any:
    """One row per op: index, line, kind, op, axes, from, to, FLOPs/device, bytes, time (s),
    bound; numbers where the report has them."""
    pd = _pandas()
    rows = []
    for c in r.ops:
        moved = c.comm_bytes if c.kind == "collective" else c.hbm_bytes
        rows.append({"index": c.index, "line": c.line, "kind": c.kind, "op": c.op,
                     "axes": ",".join(c.axes), "from": c.src, "to": c.dst,
                     "flops_per_device": r.value(c.flops_per_device),
                     "bytes": r.value(moved), "time_s": r.value(c.time),
                     "bound": r.op_bound(c)})
    return pd.DataFrame(rows).set_index("index")


def arrays_frame(r: Report) -> Any:
    """One row per array: name, dtype, layout, bytes per device and in total, instances."""
    pd = _pandas()
    return pd.DataFrame([{"name": a.name, "dtype": a.dtype, "layout": a.layout,
                          "bytes_per_device": r.value(a.bytes_per_device),
                          "bytes_total": r.value(a.bytes_total),
                          "instances": r.value(getattr(a, "count", 1))}
                         for a in r.cost.arrays]).set_index("name")


def render_html(r: Report) -> str:
    """The HTML view (`_repr_html_`): summary, memory, and the ops, collapsible."""
    from shardc.driver.render import write

    return write(r, "html")


__all__ = ["arrays_frame", "decisions_html", "math_html", "ops_frame", "render_html",
           "short_repr", "table_html"]
