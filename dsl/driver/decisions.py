"""The decision records (`passes.ir.Decision`) in words: the statement, what decided it, each
plan's steps and cost, and the condition under which an alternative would win. Every output
format prints decisions through these functions (where each plan wins over the sizes:
`shardc.driver.decision_regions`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sympy as sp

from shardc.driver.decision_regions import candidate_text, region_text, regions
from shardc.driver.formulas import text
from shardc.lang.layout import format_axes
from shardc.lang.units import fmt_value
from shardc.passes.einsum_plan import PLAN_SEARCH_LIMIT
from shardc.passes.ir import Alternative, Decision
from shardc.passes.lower.chain import chain_note
from shardc.passes.lower.explain import describe_steps
from shardc.passes.lower.state import TYPICAL_AXIS, TYPICAL_DIM


class Decisions(tuple[Decision, ...]):
    """`Report.decisions`: the decision records in program order, a tuple of
    `passes.ir.Decision`, with `cases` (parallel to it) naming the case of the sharding chapter
    each contraction's operands fall in (`Case 3`; empty where no einsum matches). A notebook
    shows it as a table (`shardc.driver.notebook.decisions_html`)."""

    cases: tuple[str, ...]

    def __new__(cls, items: Iterable[Decision] = (), cases: Iterable[str] = ()) -> Decisions:
        self = super().__new__(cls, items)
        self.cases = tuple(cases) or ("",) * len(self)
        return self

    @classmethod
    def of(cls, items: Iterable[Decision], ops: Iterable[Any]) -> Decisions:
        """The decisions with their cases, read off the report's einsum ops (`OpCost.reason`
        of an einsum is its case): the k-th decision on a line and target gets the k-th einsum
        there."""
        items = tuple(items)
        einsums: dict[tuple[int, str], list[str]] = {}
        for c in ops:
            if c.kind == "einsum":
                einsums.setdefault((c.line, c.array), []).append(c.reason)
        cases = []
        for d in items:
            hits = (
                einsums.get((d.line, d.target)) or einsums.get((d.line, f"{d.lhs}·{d.rhs}")) or []
            )
            cases.append(hits.pop(0) if hits else "")
        return cls(items, cases)

    def __repr__(self) -> str:
        lines = ", ".join(str(d.line) for d in self[:8]) + (", ..." if len(self) > 8 else "")
        return (
            f"<shardc.Decisions: {len(self)} contractions decided (lines {lines})>"
            if self
            else "<shardc.Decisions: none>"
        )

    def _repr_html_(self) -> str:
        return decisions_html(self)


def statement(d: Decision) -> str:
    """`C = A ·_J B`."""
    return f"{d.target} = {d.lhs} ·_{format_axes(d.contract)} {d.rhs}"


def decided_by(d: Decision) -> str:
    """`numbers` (every size known) or `default` (the book's rule), and whether the plan search
    was capped."""
    # With sizes left symbolic, a report's plans are those of one region of the sizes
    # (`shardc.driver.region_totals.settle`): a choice with candidates is the region's.
    text = "numbers" if d.numeric else "region of the sizes" if d.candidates else "default"
    if d.search is not None:
        tried, space = d.search
        text += (
            f"; search capped: {tried:,} of {space:,} role assignments tried "
            f"(local search from the current layouts and from gathering everything; "
            f"exhaustive up to {PLAN_SEARCH_LIMIT:,})"
        )
    if d.chain is not None:
        text += "; " + chain_note(*d.chain, d.has_chip)
    return text


def plan_text(d: Decision, a: Alternative) -> str:
    """The plan's steps in words."""
    return describe_steps(a.lhs_steps, a.rhs_steps, a.out_steps, d.lhs, d.rhs, d.target)


def ranking_note(d: Decision, a: Alternative) -> str:
    """What ranked the plan: its cost at the numbers, or at typical sizes."""
    if not d.numeric:
        unit = "s" if d.has_chip else "B"
        return (
            f"{fmt_value(a.value, unit)}{'' if d.has_chip else ' / W_ici'} comms at "
            f"typical sizes (dims {TYPICAL_DIM}, axes {TYPICAL_AXIS})"
        )
    if d.has_chip:
        return f"{fmt_value(a.value, 's')} comms + compute"
    return f"{fmt_value(a.value, 'B')} / W_ici"


def description(d: Decision, a: Alternative) -> str:
    """`AllGather_X(A), local einsum [1.2 ms comms + compute]`."""
    return f"{plan_text(d, a)} [{ranking_note(d, a)}]"


def condition(d: Decision, a: Alternative) -> str:
    """When an alternative would beat the chosen plan: a relation over the sizes, `always`,
    `never`; empty for the chosen plan and where the numbers decided."""
    if a.chosen or d.numeric:
        return ""
    if d.chosen_moves_no_data:
        return "never: the chosen plan moves no data"
    if a.wins is None:
        return ""
    if a.wins == sp.true:
        return "always"
    if a.wins == sp.false:
        return "never"
    return text(a.wins)


def as_dict(d: Decision) -> dict[str, Any]:
    """The JSON form (`shardc.report/1`'s `decisions[]`)."""
    out: dict[str, Any] = {
        "line": d.line,
        "statement": statement(d),
        "decided_by": decided_by(d),
        "alternatives": [
            {
                "description": description(d, a),
                "cost": text(a.cost),
                "chosen": a.chosen,
                "condition": condition(d, a),
            }
            for a in d.alternatives
        ],
    }
    regs = regions(d)
    if regs:
        by = {c.order: c for c in d.candidates}
        out["regions"] = [
            {
                "condition": region_text(r),
                "relation": text(r.condition),
                "plan": candidate_text(d, r.order),
                "cost": text(by[r.order].time),
                "share_of_sample": round(r.share, 4),
            }
            for r in regs
        ]
    return out


def decisions_html(ds: Decisions) -> str:
    """The decisions as a table: each contraction's case, the plan chosen and the runner-up,
    each with what ranked it and its communication time as a formula, and when the runner-up
    would win (or by how much it lost). (The HTML writer's helpers are imported here: a
    text report has no use for them.)"""
    from shardc.driver.escape import html_text as e
    from shardc.driver.render.html import table_html

    if not ds:
        return (
            "<div class='shardc-decisions'><b>decisions</b>: none (each contraction had "
            "one plan, or one that moves no data)</div>"
        )
    rows = []
    for d, case in zip(ds, ds.cases, strict=True):
        chosen, others = d.alternatives[0], d.alternatives[1:]
        ru = _plan_cell(d, others[0]) if others else "none: no other plan"
        if len(others) > 1:
            ru += (
                f"<details><summary>{len(others) - 1} more</summary>"
                + "<br>".join(_plan_cell(d, a) for a in others[1:])
                + "</details>"
            )
        rows.append(
            (
                str(d.line),
                f"<code>{e(statement(d))}</code>",
                e(case),
                e(decided_by(d)),
                _plan_cell(d, chosen),
                ru,
                _wins_cell(d, others[0]) if others else "",
            )
        )
    head = (
        "line",
        "statement",
        "case",
        "decided by",
        "chosen plan",
        "runner-up",
        "runner-up wins when",
    )
    return (
        "<div class='shardc-decisions'><b>decisions</b>: the plan each contraction got, "
        "and what it beat<br>\n" + table_html(head, rows) + "</div>"
    )


def _plan_cell(d: Decision, a: Alternative) -> str:
    """A plan's steps, what ranked it, and its communication time as a formula."""
    from shardc.driver.escape import html_text
    from shardc.driver.render.html import math_html

    return (
        f"{html_text(plan_text(d, a))}<br>[{html_text(ranking_note(d, a))}]"
        f"<br>comms {math_html(a.cost)}"
    )


def _wins_cell(d: Decision, a: Alternative) -> str:
    """The relation over the sizes under which `a` would win, in LaTeX; in words where there is
    none (`never`, `always`), or the cost ratio where the numbers decided."""
    from shardc.driver.escape import html_text
    from shardc.driver.render.html import math_html

    if d.numeric:
        best = d.alternatives[0].value
        return (
            f"never at these sizes: {a.value / best:.3g}&times; the chosen plan's cost"
            if best
            else "never at these sizes"
        )
    when = condition(d, a)
    if a.wins is None or when in ("always", "never") or when.startswith("never:"):
        return html_text(when)
    return math_html(a.wins)


__all__ = [
    "Decisions",
    "as_dict",
    "condition",
    "decided_by",
    "decisions_html",
    "description",
    "plan_text",
    "ranking_note",
    "statement",
]
