"""The JSON writer (schema `shardc.report/1`, docs/language.md section 12): the same document as
every other format (`shardc.driver.sections.sections`), its sections as members of one object
instead of lines, every formula as `expr`, `latex` and `value`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from shardc.driver import decisions
from shardc.driver.detail_sections import (
    DETAIL,
    Array,
    Link,
    MemoryDetail,
    Numbers,
    StepDetail,
)
from shardc.driver.document import (
    OP_FIELDS,
    SECTIONS,
    TOTALS,
    Block,
    Bound,
    Calibration,
    Condition,
    DecisionRow,
    Header,
    Op,
    Section,
    Total,
    Warning,
)
from shardc.driver.formulas import latex, text
from shardc.driver.json_text import dumps, strict_dumps
from shardc.driver.render.json_regions import regions
from shardc.driver.render.writer import Writer
from shardc.passes.symbols import as_expr

SCHEMA = "shardc.report/1"
JSON_TOTALS = tuple(
    t.key for group in ("count", "time", "memory") for t in TOTALS if t.group == group
)
"""`TOTALS` in the order of the JSON `totals` object: the counts, the times, then memory."""

KEYS = (
    *("schema", "program", "hardware", "model", "matmul_precision", "mesh", "dims", "bindings"),
    *("arrays", "ops", "repeats", "totals", "topology", "memory", "conditions", "decisions"),
    "warnings",
)
"""The members of the report object, in order (the regions' members follow them)."""

UNSET: Any = object()


class JsonWriter(Writer):
    """`write(doc)` is the JSON text; `document(doc)` the object. A section goes to
    `_section_<name>`, which returns the members it sets; rows it does not read are skipped."""

    format = "json"
    sections: ClassVar[frozenset[str] | None] = frozenset(SECTIONS) - {"why"}
    """Every section but `why`: each op's reason is a member of the op."""
    detail: ClassVar[tuple[str, ...]] = DETAIL

    def __init__(self, indent: int | None = 2) -> None:
        self.indent = indent
        self.values: Any = {}
        self.by_id: dict[int, tuple[Any, dict[str, Any]]] = {}
        self.by_expr: dict[Any, dict[str, Any]] = {}

    def write(self, doc: list[Section]) -> str:
        d = self.document(doc)
        if self.indent == 2:
            return dumps(d)  # the same text as json.dumps(d, indent=2), faster
        return strict_dumps(d, indent=self.indent)

    def document(self, doc: list[Section]) -> dict[str, Any]:
        """The report object: each section's members, in `KEYS` order, then the regions'."""
        members: dict[str, Any] = {
            "repeats": [],
            "memory": None,
            "topology": [],
            "conditions": [],
            "decisions": [],
            "warnings": [],
        }
        for s in doc:
            members.update(getattr(self, f"_section_{s.name}", self._nothing)(s))
        members["totals"] = self.totals(members)
        out = {k: members[k] for k in KEYS}
        if "region_detail" in members:
            out.update(regions(members["region_detail"], members.get("regions", ())))
        return out

    def _nothing(self, s: Section) -> dict[str, Any]:
        return {}

    def q(self, expr: Any, value: Any = UNSET) -> dict[str, Any]:
        """A formula as `{"expr", "latex", "value"}`, its value the row's (`value`) or the
        document's (`Numbers`): one shared dict per distinct formula, so the encoder writes
        each once (`json_text.dumps`)."""
        seen = self.by_id.get(id(expr))
        if seen is not None and seen[0] is expr:
            return seen[1]
        hit = self.by_expr.get(expr)
        if hit is None:
            e = as_expr(expr)
            if value is UNSET:
                value = self.values[e]
            hit = self.by_expr[expr] = {"expr": text(e), "latex": latex(e), "value": value}
        self.by_id[id(expr)] = (expr, hit)
        return hit

    # ---- sections ------------------------------------------------------------------------------
    def _section_header(self, s: Section) -> dict[str, Any]:
        h: Header = s.rows[0]
        self.values = next(row.values for row in s.rows if type(row) is Numbers)
        return {
            "schema": SCHEMA,
            "program": h.program,
            "hardware": h.chip,
            "model": h.model,
            "matmul_precision": h.precision,
            "mesh": {n: (v if v is not None else n) for n, v in h.mesh},
            "dims": {n: (v if v is not None else n) for n, v in h.dims},
            "bindings": dict(h.bindings),
        }

    def _section_arrays(self, s: Section) -> dict[str, Any]:
        rows: tuple[Array, ...] = s.rows
        return {
            "arrays": [
                {
                    "name": a.name,
                    "dtype": a.dtype,
                    "layout": a.layout,
                    "bytes_per_device": self.q(a.bytes_per_device),
                    "bytes_total": self.q(a.bytes_total),
                    "instances": self.q(a.count),
                }
                for a in rows
            ]
        }

    def _section_ops(self, s: Section) -> dict[str, Any]:
        return {"ops": [self.op(c) for c in s.rows if type(c) is Op]}

    def op(self, c: Op) -> dict[str, Any]:
        q, collective = self.q, c.kind == "collective"
        return {
            "id": c.index,
            "line": c.line,
            "kind": c.kind,
            "op": c.op,
            "axes": list(c.axes),
            "array": c.array,
            "from": c.src,
            "to": c.dst,
            "reason": c.reason,
            **{k: q(f) for (k, _), f in zip(OP_FIELDS, c.formulas, strict=True)},
            "regime": c.bound if collective else None,
            "crossover_bytes": q(c.crossover_formula) if c.has_crossover else None,
            "levels": {lv: q(x) for lv, x in c.levels},
            "bound": c.bound if not collective else None,
            "critical_path": (not c.overlap) if collective else None,
            "overlap": c.overlap or None,
            "fused_into": c.fused_into,
            "fusion": c.fusion or None,
            "runs": q(c.count),
            "repeat_lines": list(c.times),
        }

    def _section_repeats(self, s: Section) -> dict[str, Any]:
        blocks: tuple[Block, ...] = s.rows
        return {
            "repeats": [
                {
                    "line": b.line,
                    "count": b.text,
                    "runs": self.q(b.count),
                    "per_iteration": {k: self.q(v) for k, v in b.per_iteration},
                    "total": {k: self.q(v) for k, v in b.total},
                }
                for b in blocks
            ]
        }

    def _section_summary(self, s: Section) -> dict[str, Any]:
        order = {k: i for i, k in enumerate(JSON_TOTALS)}
        totals = sorted((t for t in s.rows if type(t) is Total), key=lambda t: order.get(t.key, 99))
        return {
            "_totals": {t.key: self.q(t.formula, t.value) for t in totals},
            "_calibration": next(c.text for c in s.rows if type(c) is Calibration),
            "_bound": next(b.value for b in s.rows if type(b) is Bound),
        }

    def _section_step(self, s: Section) -> dict[str, Any]:
        d: StepDetail = s.rows[0]
        return {"_step": d}

    def totals(self, members: dict[str, Any]) -> dict[str, Any]:
        d: StepDetail = members["_step"]
        q = self.q
        return {
            **members["_totals"],
            "t_step_s": {
                "max": q(d.step_max),
                "sum": q(d.step_sum),
                "scheduled": {
                    "expr": "list schedule of the op graph",
                    "latex": "",
                    "value": d.scheduled,
                },
                "expected": {
                    "expr": "list schedule of each op's expected time",
                    "latex": "",
                    "value": d.scheduled_expected,
                },
            },
            "utilization": d.utilization,
            "utilization_expected": d.utilization_expected,
            "calibration": members["_calibration"],
            "t_comms_by_level_s": {k: q(v) for k, v in d.comms_by_level},
            "recompute": (
                {"t_recompute_s": q(d.recompute[0]), "flops_per_device": q(d.recompute[1])}
                if d.recompute is not None
                else None
            ),
            "bound": members["_bound"],
        }

    def _section_topology(self, s: Section) -> dict[str, Any]:
        return {"topology": self.links(tuple(x for x in s.rows if type(x) is Link))}

    def links(self, links: tuple[Link, ...]) -> list[dict[str, Any]]:
        """The `topology` member: one object per mesh axis (`Report.topology_dict`)."""
        out = []
        for link in links:
            entry: dict[str, Any] = {"axis": link.axis, "level": link.level}
            if link.physical is not None:
                entry["physical"] = [
                    {"name": p, "length": n, "wrap": w, "why": why}
                    for p, n, w, why in link.physical
                ]
                if link.stride != 1:
                    entry["stride"] = link.stride
            if link.inner is not None:
                entry["nvlink_part"] = link.inner
            out.append(entry)
        return out

    def _section_memory(self, s: Section) -> dict[str, Any]:
        out: dict[str, Any] = {
            t.key: self.q(t.formula, t.value) for t in s.rows if type(t) is Total
        }
        for d in s.rows:
            if type(d) is MemoryDetail:
                out["saved_activations"] = list(d.saved)
                out.update(d.options)
        return {"memory": out}

    def _section_conditions(self, s: Section) -> dict[str, Any]:
        rows: tuple[Condition, ...] = s.rows
        return {
            "conditions": [
                {
                    "name": c.name,
                    "text": f"{c.text}: {c.relation}",
                    "expr": text(c.relation),
                    "latex": latex(c.relation),
                    "holds": c.holds,
                }
                for c in rows
            ]
        }

    def _section_decisions(self, s: Section) -> dict[str, Any]:
        rows: tuple[DecisionRow, ...] = s.rows
        return {"decisions": [decisions.as_dict(d.decision) for d in rows]}

    def _section_warnings(self, s: Section) -> dict[str, Any]:
        rows: tuple[Warning, ...] = s.rows
        return {"warnings": [w.text for w in rows]}

    def _section_regions(self, s: Section) -> dict[str, Any]:
        return {"regions": s.rows}

    def _section_region_detail(self, s: Section) -> dict[str, Any]:
        return {"region_detail": s.rows[0]}


__all__ = ["JSON_TOTALS", "KEYS", "SCHEMA", "JsonWriter"]
