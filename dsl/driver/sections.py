"""`sections(report)`: the report as a document (`shardc.driver.document`), built once, every
number evaluated; `--only` picks sections here, before any writer runs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from operator import attrgetter
from typing import TYPE_CHECKING

from shardc.driver.detail_sections import (
    MemoryDetail,
    Numbers,
    arrays,
    links,
    region_detail,
    step_detail,
)
from shardc.driver.document import (
    BLOCK_TOTALS,
    OP_FIELDS,
    REGION_TOTALS,
    SECTIONS,
    Block,
    Condition,
    DecisionRow,
    Header,
    Line,
    Op,
    Reason,
    Region,
    RegionsPast,
    Section,
    Total,
    Warning,
)
from shardc.driver.region_totals import collectives, condition_text, has_lines, shown_text
from shardc.driver.summary_section import summary
from shardc.passes.symbols import as_expr

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.passes.derive_cost import OpCost


def sections(r: Report, only: Collection[str] | None = None) -> list[Section]:
    """The report's sections in order; `only`: the header, the warnings and just these sections
    (names of `SECTIONS`, and of `detail_sections.DETAIL` for a writer that prints them).

    >>> import shardc
    >>> r = shardc.compile("mesh X=2\\ndim B=8, D=4, F=6\\nA: bf16[B, D_X]\\n"
    ...                    "W: bf16[D_X, F]\\nC[B, F] = A ·_D W\\n", hw="tpu-v5e")
    >>> [s.name for s in sections(r)]
    ['header', 'summary', 'topology', 'conditions', 'decisions', 'ops', 'why']
    >>> sections(r, only={"summary"})[1].rows[0]
    Total(label='T_math', value=1.949238578680203e-12, unit='s', formula=2*B*D*F/C, key='t_math_s')
    """
    r.evaluate()
    out = [Section("header", "", (header(r), Numbers(r.memo.values)))]
    for name, build in BUILDERS.items():
        if name in (SECTIONS if only is None else only):
            section = build(r)
            if section is not None:
                out.append(section)
    if r.warnings:  # after the body, before the regions
        at = len(out) - (out[-1].name == "regions")
        out.insert(at, Section("warnings", "", tuple(Warning(w) for w in r.warnings)))
    return out


def header(r: Report) -> Header:
    return Header(
        r.name,
        r.hardware_name,
        r.model,
        r.cost.matmul_precision,
        tuple(r.program.mesh),
        tuple(r.program.dims),
        tuple(sorted(r.bindings.items())),
        shown_text(r),
    )


def repeats(r: Report) -> Section | None:
    """Each `repeat` block: its figures for one iteration (a layer) and for all of them."""
    if not r.cost.blocks:
        return None
    return Section(
        "repeats",
        "repeat blocks",
        tuple(
            Block(
                b.line,
                b.text,
                r.value(b.count),
                tuple(
                    (
                        label,
                        unit,
                        r.value(b.per_iteration[key]),
                        r.value(b.total[key]),
                        b.per_iteration[key],
                    )
                    for label, key, unit in BLOCK_TOTALS
                ),
                b.count,
                tuple(b.per_iteration.items()),
                tuple(b.total.items()),
            )
            for b in r.cost.blocks
        ),
        "per iteration, all iterations; op times in the table are per run",
    )


def memory(r: Report) -> Section | None:
    """The training step's memory: parameters, gradients, optimizer state, activations."""
    m = r.memory
    if m is None:
        return None
    rows: list[object] = [
        Total(label, r.value(x), "B", x, key)
        for label, key, x in (
            ("parameters", "parameters", m.parameters),
            ("gradients", "gradients", m.gradients),
            ("optimizer state", "optimizer_state", m.optimizer),
            ("activations", "activations", m.activations),
            ("total", "total", m.total),
        )
    ]
    if m.saved:
        rows.append(Line(f"kept for backward: {', '.join(m.saved)}"))
    rows.append(
        Line(
            "(what the step holds at once; the summary's memory/device adds up every "
            "array the program names, live or not)"
        )
    )
    rows.append(MemoryDetail(tuple(m.saved), tuple(r.options.items())))
    flash = ", attention flash" if r.options.get("attention") == "flash" else ""
    return Section(
        "memory",
        "memory per device, training step",
        tuple(rows),
        f"optimizer {r.options.get('optimizer')}, remat {r.options.get('remat')}{flash}",
    )


def topology(r: Report) -> Section | None:
    from shardc.driver.topology_text import topology_lines

    rows = (*map(Line, topology_lines(r.program.topology)), *links(r))
    return Section("topology", "topology", rows) if rows else None


def conditions(r: Report) -> Section | None:
    if not r.conditions:
        return None
    return Section(
        "conditions",
        "conditions",
        tuple(
            Condition(
                c.name,
                c.text,
                c.relation,
                r.holds(c.relation),
                r.value(c.relation.lhs),
                r.value(c.relation.rhs),
            )
            for c in r.conditions
        ),
    )


def decisions(r: Report) -> Section | None:
    ds = r.decisions
    return Section("decisions", "decisions", tuple(map(DecisionRow, ds))) if ds else None


def ops(r: Report) -> Section:
    return Section("ops", "ops", tuple(op_row(r, c) for c in r.ops))


OP_FORMULAS = attrgetter(*(f for _, f in OP_FIELDS))  # an op's formulas, `OP_FIELDS` order


def op_row(r: Report, c: OpCost) -> Op:
    moved = c.comm_bytes if c.kind == "collective" else c.hbm_bytes
    has_crossover = c.crossover_bytes is not None
    return Op(
        c.index,
        c.line,
        c.count,
        c.kind,
        c.op,
        tuple(c.axes),
        c.src,
        c.dst,
        r.value(c.flops_per_device),
        moved,
        r.value(moved),
        c.time,
        r.value(c.time),
        c.t_expected,
        r.value(c.t_expected),
        r.op_bound(c),
        r.value(c.crossover_bytes) if has_crossover else None,
        has_crossover,
        c.reason,
        c.array,
        OP_FORMULAS(c),
        c.crossover_bytes,
        c.levels,
        c.overlap,
        c.fused_into,
        c.fusion,
        c.times,
    )


def why(r: Report) -> Section | None:
    reasons = [(c.index, c.reason) for c in r.ops if c.reason and c.kind == "collective"]
    if not reasons:
        return None
    first: dict[int, OpCost] = {}
    for c in r.ops:
        first.setdefault(c.index, c)
    return Section(
        "why",
        "why each collective",
        tuple(Reason(i, text, first[i].overlap) for i, text in reasons),
    )


def regions(r: Report) -> Section | None:
    """The totals in each region of the symbolic sizes, or a note that there are too many."""
    if not has_lines(r):
        return None
    found = r.regions()
    if found is None:
        shown = r.shown_region
        past = RegionsPast(shown.where, shown.past) if shown else RegionsPast(None)
        return Section("regions", "regions", (past,))
    if not found:
        return None
    from shardc.driver.boundaries import boundaries, condition

    rows: list[Region] = []
    for v in found:
        solved = tuple(boundaries(r, v))
        totals = tuple(
            Total(t.short or t.label, None, t.unit, as_expr(v.result.totals.get(t.key, 0)), t.key)
            for t in REGION_TOTALS
        )
        rows.append(
            Region(
                condition_text(v),
                v.share,
                collectives(v.result),
                totals,
                tuple(t for b in solved if (t := b.text()) is not None),
                str(condition(r, v)),
                solved,
                tuple(v.result.value(t.formula) for t in totals),
            )
        )
    if len(found) == 1:
        return Section(
            "regions",
            "totals",
            tuple(rows),
            "one plan wins at every size sampled, not the "
            "default plans above: a compile with the sizes bound runs this program",
        )
    return Section(
        "regions",
        "totals by region",
        tuple(rows),
        "the program a compile with the sizes bound runs there",
    )


BUILDERS: dict[str, Callable[[Report], Section | None]] = {
    "summary": summary,
    "step": step_detail,
    "arrays": arrays,
    "repeats": repeats,
    "memory": memory,
    "topology": topology,
    "conditions": conditions,
    "decisions": decisions,
    "ops": ops,
    "why": why,
    "region_detail": region_detail,
    "regions": regions,
}
"""Each section's builder, in the report's order (the keys of `SECTIONS`)."""

__all__ = ["BUILDERS", "header", "op_row", "sections"]
