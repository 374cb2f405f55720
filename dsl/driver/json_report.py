"""The JSON form of a report (schema `shardc.report/1`): the JSON writer
(`shardc.driver.render.json.JsonWriter`) over the report's document, as a dict or text, and
`Report.q`, one formula as `expr`, `latex` and `value`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.driver.formulas import latex, text
from shardc.driver.render.json import JSON_TOTALS, SCHEMA, JsonWriter
from shardc.passes.symbols import as_expr

if TYPE_CHECKING:
    from shardc.driver.report import Report


def formula_json(r: Report, expr: Any) -> dict[str, Any]:
    """`Report.q`: a formula as JSON, `{"expr", "latex", "value"}`; one (shared) dict per
    distinct formula of the report."""
    seen = r.memo.q_by_id.get(id(expr))
    if seen is not None and seen[0] is expr:
        return seen[1]
    hit = r.memo.q.get(expr)
    if hit is None:
        e = as_expr(expr)
        hit = r.memo.q[expr] = {"expr": text(e), "latex": latex(e), "value": r.value(e)}
    r.memo.q_by_id[id(expr)] = (expr, hit)
    return hit


def report_dict(r: Report) -> dict[str, Any]:
    """The report as `shardc.report/1` (docs/language.md, section 12) without the regions'
    members, with `_mesh_order`."""
    from shardc.driver.sections import sections

    w = JsonWriter()
    assert w.sections is not None
    d = w.document(sections(r, {*w.sections, *w.detail} - {"region_detail"}))
    return {**d, "_mesh_order": list(r.program.mesh_axes)}


def report_json(r: Report, indent: int | None = 2) -> str:
    """The report as `shardc.report/1` JSON text, with its regions."""
    from shardc.driver.render import write

    return write(r, "json", indent=indent)


def topology_dict(r: Report) -> list[dict[str, Any]]:
    """`Report.topology_dict`: the JSON `topology` member."""
    from shardc.driver.detail_sections import links

    return JsonWriter().links(links(r))


__all__ = ["JSON_TOTALS", "SCHEMA", "formula_json", "report_dict", "report_json", "topology_dict"]
