"""The JSON form of a report (schema `shardc.report/1`): every formula as `expr`, `latex` and
`value`. The one renderer of that format; `Report.to_dict` / `to_json` call it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.driver import decisions
from shardc.driver.document import OP_FIELDS, TOTALS
from shardc.driver.formulas import latex, text
from shardc.driver.json_text import dumps, strict_dumps
from shardc.driver.region_totals import as_json, has_lines
from shardc.driver.summary_section import expected_note
from shardc.passes.symbols import as_expr

SCHEMA = "shardc.report/1"
JSON_TOTALS = tuple(
    t.key for group in ("count", "time", "memory") for t in TOTALS if t.group == group
)
"""`TOTALS` in the order of the JSON `totals` object: the counts, the times, then memory."""

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
    """The report as `shardc.report/1` (docs/language.md, section 12)."""
    r.evaluate()
    mesh = r.program.mesh_axes
    return {
        "schema": SCHEMA,
        "program": r.name,
        "hardware": r.hardware_name,
        "model": r.model,
        "matmul_precision": r.cost.matmul_precision,
        "mesh": {n: (s if s is not None else n) for n, s in r.program.mesh},
        "dims": {n: (s if s is not None else n) for n, s in r.program.dims},
        "bindings": dict(sorted(r.bindings.items())),
        "arrays": [
            {
                "name": a.name,
                "dtype": a.dtype,
                "layout": a.layout,
                "bytes_per_device": r.q(a.bytes_per_device),
                "bytes_total": r.q(a.bytes_total),
                "instances": r.q(a.count),
            }
            for a in r.cost.arrays
        ],
        "ops": [
            {
                "id": c.index,
                "line": c.line,
                "kind": c.kind,
                "op": c.op,
                "axes": list(c.axes),
                "array": c.array,
                "from": c.src,
                "to": c.dst,
                "reason": c.reason,
                **{k: r.q(getattr(c, f)) for k, f in OP_FIELDS},
                "regime": r.op_bound(c) if c.kind == "collective" else None,
                "crossover_bytes": (
                    r.q(c.crossover_bytes) if c.crossover_bytes is not None else None
                ),
                "levels": {lv: r.q(x) for lv, x in c.levels},
                "bound": r.op_bound(c) if c.kind != "collective" else None,
                "critical_path": (not c.overlap) if c.kind == "collective" else None,
                "overlap": c.overlap or None,
                "fused_into": c.fused_into,
                "fusion": c.fusion or None,
                "runs": r.q(c.count),
                "repeat_lines": list(c.times),
            }
            for c in r.ops
        ],
        "repeats": [
            {
                "line": b.line,
                "count": b.text,
                "runs": r.q(b.count),
                "per_iteration": {k: r.q(v) for k, v in b.per_iteration.items()},
                "total": {k: r.q(v) for k, v in b.total.items()},
            }
            for b in r.cost.blocks
        ],
        "totals": {
            **{k: r.q(r.totals[k]) for k in JSON_TOTALS},
            "t_step_s": {
                "max": r.q(r.totals["t_step_max_s"]),
                "sum": r.q(r.totals["t_step_sum_s"]),
                "scheduled": {
                    "expr": "list schedule of the op graph",
                    "latex": "",
                    "value": r.scheduled_step(),
                },
                "expected": {
                    "expr": "list schedule of each op's expected time",
                    "latex": "",
                    "value": r.scheduled_step(expected=True),
                },
            },
            "utilization": r.utilization(),
            "utilization_expected": _with_exposed(r),
            "calibration": expected_note(r),
            "t_comms_by_level_s": {
                k[len("t_comms_") : -2]: r.q(v)
                for k, v in r.totals.items()
                if k.startswith("t_comms_") and k != "t_comms_s"
            },
            "recompute": (
                {
                    "t_recompute_s": r.q(r.totals["t_recompute_s"]),
                    "flops_per_device": r.q(r.totals["recompute_flops_per_device"]),
                }
                if "t_recompute_s" in r.totals
                else None
            ),
            "bound": r.bound(),
        },
        "topology": topology_dict(r),
        "memory": None
        if r.memory is None
        else {
            "parameters": r.q(r.memory.parameters),
            "gradients": r.q(r.memory.gradients),
            # `optimizer` is the option's name (the options below); its bytes are
            # `optimizer_state` (the quantity was shadowed by the name until shardc 0.1.0)
            "optimizer_state": r.q(r.memory.optimizer),
            "activations": r.q(r.memory.activations),
            "total": r.q(r.memory.total),
            "saved_activations": list(r.memory.saved),
            **r.options,
        },
        "conditions": [
            {
                "name": c.name,
                "text": f"{c.text}: {c.relation}",
                "expr": text(c.relation),
                "latex": latex(c.relation),
                "holds": r.holds(c.relation),
            }
            for c in r.conditions
        ],
        "decisions": [decisions.as_dict(d) for d in r.decisions],
        "warnings": list(r.warnings),
        "_mesh_order": list(mesh),
    }


def report_json(r: Report, indent: int | None = 2) -> str:
    """The report as `shardc.report/1` JSON text, with its regions."""
    d = report_dict(r)
    d.pop("_mesh_order")
    if has_lines(r):
        d.update(as_json(r))
    if indent == 2:
        return dumps(d)  # the same text as json.dumps(d, indent=2), faster
    return strict_dumps(d, indent=indent)


def _with_exposed(r: Report) -> dict[str, Any] | None:
    """MFU and HFU of the expected schedule, with each collective's exposed part there (the
    seconds no compute hides, by op index) when the chip is calibrated."""
    util = r.utilization(expected=True)
    if util is None or not r.calibrated:
        return util
    parts = r.exposed(expected=True) or {}
    return {**util, "exposed_s": [{"index": i, "exposed_s": v} for i, v in sorted(parts.items())]}


def topology_dict(r: Report) -> list[dict[str, Any]]:
    topo = r.program.topology
    if topo is None:
        return []
    out = []
    for link in topo.links:
        entry: dict[str, Any] = {"axis": link.axis, "level": link.level}
        if link.level == "ici":
            entry["physical"] = [
                {
                    "name": p,
                    "length": topo.phys(p).length,
                    "wrap": topo.phys(p).wrap,
                    "why": topo.phys(p).why,
                }
                for p in link.physical
            ]
            if link.stride != 1:
                entry["stride"] = link.stride
        if link.inner is not None:
            entry["nvlink_part"] = link.inner
        out.append(entry)
    return out
