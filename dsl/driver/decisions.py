"""The decision records (`passes.ir.Decision`) in words: the statement, what decided it, each
plan's steps and cost, and the condition under which an alternative would win. Every output
format prints decisions through these functions.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from shardc.lang.layout import format_axes
from shardc.lang.units import fmt_value
from shardc.passes.einsum_plan import PLAN_SEARCH_LIMIT
from shardc.passes.ir import Alternative, Decision
from shardc.passes.lower.explain import describe_steps
from shardc.passes.lower.state import TYPICAL_AXIS, TYPICAL_DIM


def statement(d: Decision) -> str:
    """`C = A ·_J B`."""
    return f"{d.target} = {d.lhs} ·_{format_axes(d.contract)} {d.rhs}"


def decided_by(d: Decision) -> str:
    """`numbers` (every size known) or `default` (the book's rule), and whether the plan search
    was capped."""
    text = "numbers" if d.numeric else "default"
    if d.search is not None:
        tried, space = d.search
        text += (f"; search capped: {tried:,} of {space:,} role assignments tried "
                 f"(local search from the current layouts and from gathering everything; "
                 f"exhaustive up to {PLAN_SEARCH_LIMIT:,})")
    return text


def plan_text(d: Decision, a: Alternative) -> str:
    """The plan's steps in words."""
    return describe_steps(a.lhs_steps, a.rhs_steps, a.out_steps, d.lhs, d.rhs, d.target)


def ranking_note(d: Decision, a: Alternative) -> str:
    """What ranked the plan: its cost at the numbers, or at typical sizes."""
    if not d.numeric:
        unit = "s" if d.has_chip else "B"
        return (f"{fmt_value(a.value, unit)}{'' if d.has_chip else ' / W_ici'} comms at "
                f"typical sizes (dims {TYPICAL_DIM}, axes {TYPICAL_AXIS})")
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
    return str(a.wins)


def as_dict(d: Decision) -> dict[str, Any]:
    """The JSON form (`shardc.report/1`'s `decisions[]`)."""
    return {"line": d.line, "statement": statement(d), "decided_by": decided_by(d),
            "alternatives": [{"description": description(d, a), "cost": str(a.cost),
                              "chosen": a.chosen, "condition": condition(d, a)}
                             for a in d.alternatives]}


__all__ = ["as_dict", "condition", "decided_by", "description", "plan_text", "ranking_note",
           "statement"]
