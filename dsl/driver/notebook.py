"""The report in a notebook: a short `repr`, an HTML view (`_repr_html_`: the summary with its
formulas in LaTeX, the training memory, and the ops in a collapsible table) and pandas
DataFrames of the ops and arrays (`ops_frame`, `arrays_frame`; pandas is optional).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from shardc.driver.formulas import latex
from shardc.lang.units import fmt_value

if TYPE_CHECKING:
    from shardc.driver.report import Report


def short_repr(r: Report) -> str:
    """One line: the program, chip, step time and bound (`repr(report)`)."""
    step = r.value(r.totals["t_lower_s"])
    return (f"<shardc.Report {r.name!r}: chip {r.hardware_name or 'none'}, model {r.model}, "
            f"{len(r.ops)} ops, T_lower {fmt_value(step, 's')}, bound {r.bound() or '?'}>")


def _math(expr: Any) -> str:
    return "\\(" + html.escape(latex(expr)) + "\\)"


def render_html(r: Report) -> str:
    """The HTML view: summary (value and formula), memory, and the ops, collapsible."""
    from shardc.driver.printers import SUMMARY

    r.evaluate()
    e = html.escape
    out = [f"<div class='shardc-report'><b>shardc report</b> <code>{e(r.name)}</code> &mdash; "
           f"chip <b>{e(r.hardware_name or 'none')}</b>, model <b>{e(r.model)}</b>, mesh "
           + ", ".join(f"<code>{e(n)}={e(str(s if s is not None else n))}</code>"
                       for n, s in r.program.mesh)]
    out.append("<table><tr><th>quantity</th><th>value</th><th>formula</th></tr>")
    for label, key, unit in SUMMARY:
        x = r.totals[key]
        out.append(f"<tr><td>{e(label)}</td><td>{e(fmt_value(r.value(x), unit))}</td>"
                   f"<td>{_math(x)}</td></tr>")
    util = r.utilization()
    if util is not None:
        out.append(f"<tr><td>MFU / HFU</td><td>{util['mfu']:.0%} / {util['hfu']:.0%}</td>"
                   "<td>model FLOPs / (devices &times; peak &times; T_step)</td></tr>")
    out.append(f"<tr><td>bound</td><td>{e(r.bound() or 'undecided')}</td><td></td></tr>")
    out.append("</table>")
    if r.memory is not None:
        m = r.memory
        out.append("<p><b>memory per device, training step</b> (optimizer "
                   f"{e(str(r.options.get('optimizer')))}, remat {e(str(r.options.get('remat')))})"
                   "</p><table>")
        for label, x in (("parameters", m.parameters), ("gradients", m.gradients),
                         ("optimizer state", m.optimizer), ("activations", m.activations),
                         ("total", m.total)):
            out.append(f"<tr><td>{label}</td><td>{e(fmt_value(r.value(x), 'B'))}</td>"
                       f"<td>{_math(x)}</td></tr>")
        out.append("</table>")
    out.append(f"<details><summary>{len(r.ops)} ops</summary><table><tr><th>#</th>"
               "<th>line</th><th>op</th><th>from &rarr; to</th><th>time</th></tr>")
    for c in r.ops:
        out.append(f"<tr><td>{c.index}</td><td>{c.line}</td><td>{e(c.op)}</td>"
                   f"<td><code>{e(c.src)}</code> &rarr; <code>{e(c.dst)}</code></td>"
                   f"<td>{e(fmt_value(r.value(c.time), 's'))}</td></tr>")
    out.append("</table></details></div>")
    return "\n".join(out)


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


__all__ = ["arrays_frame", "ops_frame", "render_html", "short_repr"]
