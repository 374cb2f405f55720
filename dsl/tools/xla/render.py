"""Print `xla-check` results: a text table per statement, or JSON (`shardc.xla-check/2`)."""

from __future__ import annotations

from typing import Any

from shardc.driver.escape import md_code, md_text
from shardc.driver.json_text import strict_dumps
from shardc.lang.units import fmt_sig, fmt_value
from shardc.tools.xla.check import CheckResult
from shardc.tools.xla.compare import SKIPPED, UNMAPPED, Comm, Row

SCHEMA = "shardc.xla-check/2"
COST_NOTE = (
    "costs: each side's collectives under shardc's model, over the devices each uses "
    "(the sharding chapter's V, in the program's dtype), plus matmul FLOPs / C"
)


def _time(v: float | None, unit: str) -> str:
    if v is None:
        return f"no cost ({UNMAPPED})"
    return fmt_value(v, "s") if unit == "s" else f"{fmt_value(v, 'B')} / W_ici"


def _comm_line(side: str, c: Comm, unit: str) -> str:
    raw = ""
    if c.xla_bytes is not None and abs(c.xla_bytes - c.bytes) > 1e-9 * max(c.bytes, 1):
        raw = f" ({fmt_value(c.xla_bytes, 'B')} as XLA:CPU moves it)"
    shape = f"  {c.shape}" if c.shape else ""
    groups = f"  groups {c.groups}" if c.groups else ""
    moved = f"{c.label()}({c.array})" if c.array else c.label()
    return (
        f"    {side:<5} {moved:<26} {c.dtype} V {fmt_value(c.bytes, 'B')}{raw}  "
        f"{_time(c.time, unit)}{shape}{groups}"
    )


def row_text(r: Row, unit: str) -> list[str]:
    lines = [f"  line {r.line}: {r.statement}", f"    verdict: {r.verdict}"]
    if r.verdict == SKIPPED:
        lines.append(f"    not checked: {r.reason}")
        return lines
    for c in r.ours:
        lines.append(_comm_line("ours", c, unit))
    if not r.ours:
        lines.append("    ours  no collective")
    for c in r.xla:
        lines.append(_comm_line("xla", c, unit))
    if not r.xla:
        lines.append("    xla   no collective")
    lines.append(
        f"    total ours {_time(r.ours_cost, unit)}, XLA {_time(r.xla_cost, unit)};  "
        f"result ours {r.ours_out}, XLA {r.xla_out}"
    )
    lines.append(
        f"    FLOPs/device ours {r.ours_flops:.3g} (matmul), XLA dots "
        f"{r.xla_dot_flops:.3g}, XLA cost analysis {fmt_sig(r.xla_flops)} (all ops); "
        f"XLA bytes accessed {fmt_value(r.xla_bytes_accessed, 'B')}"
    )
    lines.extend(f"    note: {e}" for e in r.explanations)
    return lines


def text(result: CheckResult) -> str:
    p = result.prepared
    mesh = " ".join(f"{a}={n}" for a, n in p.mesh.items()) or "(none)"
    lines = [
        f"xla-check: {result.program}",
        f"  mesh {mesh} on {_devices(p.mesh)} fake CPU devices   chip {p.chip or '-'}   "
        f"model {p.model}   jax {result.jax_version}",
        f"  {COST_NOTE}",
    ]
    lines.extend(f"  note: {n}" for n in p.notes)
    lines.append("")
    for r in result.rows:
        lines.extend(row_text(r, p.hardware.unit))
        lines.append("")
    s = result.summary()
    lines.append(
        f"summary: {s['statements']} statements: {s['agree']} agree, "
        f"{s['same cost, different choice']} same cost, {s['ours cheaper']} ours "
        f"cheaper, {s['XLA cheaper']} XLA cheaper, {s[UNMAPPED]} {UNMAPPED}, "
        f"{s['skipped']} skipped: " + ("ok" if s["ok"] else f"FAILED at lines {s['failed_lines']}")
    )
    return "\n".join(lines) + "\n"


def _devices(mesh: dict[str, int]) -> int:
    n = 1
    for v in mesh.values():
        n *= v
    return n


def _comm_dict(c: Comm) -> dict[str, Any]:
    d: dict[str, Any] = {
        "op": c.op,
        "axes": list(c.axes),
        "dim": c.dim,
        "bytes": c.bytes,
        "time": c.time,
        "array": c.array,
        "dtype": c.dtype,
        "elements_per_device": list(c.blocks),
    }
    if c.shape:
        d.update(
            {
                "shape": c.shape,
                "replica_groups": c.groups,
                "xla_bytes": c.xla_bytes,
                "unmapped": c.unmapped or None,
            }
        )
    return d


def to_dict(result: CheckResult) -> dict[str, Any]:
    p = result.prepared
    return {
        "schema": SCHEMA,
        "program": result.program,
        "mesh": p.mesh,
        "devices": _devices(p.mesh),
        "hardware": p.chip,
        "model": p.model,
        "jax": result.jax_version,
        "unit": p.hardware.unit,
        "notes": p.notes,
        "statements": [
            {
                "line": r.line,
                "statement": r.statement,
                "verdict": r.verdict,
                "ours": [_comm_dict(c) for c in r.ours],
                "xla": [_comm_dict(c) for c in r.xla],
                "ours_cost": r.ours_cost,
                "xla_cost": r.xla_cost,
                "ours_result": r.ours_out,
                "xla_result": r.xla_out,
                "flops_per_device": {
                    "ours_matmul": r.ours_flops,
                    "xla_dots": r.xla_dot_flops,
                    "xla_cost_analysis": r.xla_flops,
                },
                "xla_bytes_accessed": r.xla_bytes_accessed,
                "explanations": list(r.explanations),
                "named_explanation": r.known,
                "reason": r.reason or None,
            }
            for r in result.rows
        ],
        "summary": result.summary(),
    }


def to_json(results: list[CheckResult]) -> str:
    if len(results) == 1:
        return strict_dumps(to_dict(results[0]), indent=2) + "\n"
    return (
        strict_dumps(
            {
                "schema": SCHEMA,
                "programs": [to_dict(r) for r in results],
                "ok": all(r.ok for r in results),
            },
            indent=2,
        )
        + "\n"
    )


def _md_comms(cs: tuple[Comm, ...], xla: bool) -> str:
    if not cs:
        return "none"
    return "<br>".join(
        md_text(f"{c.label()}({c.array}) {fmt_value(c.bytes, 'B')}")
        + (f" {md_code(str(c.shape), table=True)}" if xla else "")
        for c in cs
    )


def markdown(results: list[CheckResult]) -> str:
    """One table row per statement of every program (the table in docs/xla-check.md)."""
    lines = [
        "| program | line | statement | shardc | XLA | verdict | explanation |",
        "|---|---|---|---|---|---|---|",
    ]
    for res in results:
        name = md_text(res.program.replace("\\", "/").rsplit("/", 1)[-1])
        if not res.rows:
            lines.append(f"| {name} | - | (declarations only) | - | - | - | - |")
        for r in res.rows:
            notes = [e for e in r.explanations if not e.startswith("XLA:CPU computes")]
            if len(notes) < len(r.explanations):
                notes.insert(0, "f32 on CPU, costed at the program's dtype")
            why = r.reason or "; ".join(notes)
            lines.append(
                f"| {name} | {r.line} | {md_code(r.statement, table=True)} | "
                f"{_md_comms(r.ours, False)} | {_md_comms(r.xla, True)} | {r.verdict} | "
                f"{md_text(why)} |"
            )
    return "\n".join(lines) + "\n"
