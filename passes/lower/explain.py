"""The prose of the lowering: why each inserted collective is there (its case of the sharding
chapter), what a plan does in words, and what the chosen plan beat. Pure functions of plans and
layouts.
"""

from __future__ import annotations

from collections.abc import Callable

from shardc.lang.layout import Layout, format_axes
from shardc.passes.einsum_plan import EinsumPlan, Rank, classify_axis
from shardc.passes.ir import Value
from shardc.passes.reshard import Step


def describe_step(s: Step, array: str, mesh: tuple[str, ...]) -> str:
    """What one reshard step does to `array`, for the reason of the op it emits."""
    ax = format_axes(s.axes)
    match s.kind:
        case "AllGather":
            return f"AllGather_{ax} removes {ax} from {s.src.format(array, mesh)}"
        case "AllToAll":
            return f"AllToAll_{{{ax},{s.dim}}} moves {ax} to {s.dim}"
        case "AllReduce":
            return f"AllReduce_{ax} sums the partial sums over {ax}"
        case "CollectivePermute":
            return (
                f"CollectivePermute over {ax} sends each block to the device that owns "
                f"it in {s.dst.format(array, mesh)}"
            )
        case "ReduceScatter":
            return f"ReduceScatter_{{{ax},{s.dim}}} sums over {ax} and shards {s.dim}"
    return s.kind


def case_reason(
    lv: Value,
    rv: Value,
    contract: tuple[str, ...],
    side: str,
    target: str,
    mesh: tuple[str, ...],
    final: Layout | None = None,
) -> Callable[[Step], str]:
    """The reason of each step on `side` ("lhs", "rhs", "out") of a contraction: the case of
    the sharding chapter (`classify_axis`) its axes put the product in, one template per case.
    `final`: the result's layout after its last step (a step on the way there names it, not
    the layout it passes through)."""
    lhs, rhs = lv.layout, rv.layout

    def why(step: Step) -> str:
        # Axes sharing a template are named together.
        groups: dict[str, list[str]] = {}
        for a in step.axes:
            c = classify_axis(a, lhs, rhs, contract)
            dl, dr, k = c.lhs_dim, c.rhs_dim, c.contracted_dim
            if side == "out" and step.kind in ("AllReduce", "ReduceScatter") and k is not None:
                if c.kind == "same-contracted":
                    t = (
                        f"Case 3: both operands shard contracted {dl} over <AXES>, so the "
                        "local product holds partial sums {U_<AXES>}"
                    )
                else:
                    t = (
                        f"Case 2 (the sharding chapter's Question 4/9): {k} is sharded over "
                        "<AXES> in one operand; the other is sliced locally and the partial sums "
                        "reduced"
                    )
            elif side == "out":
                t = f"the result {(final or step.dst).format(target, mesh)} is requested"
            elif c.kind == "one-contracted":
                t = (
                    f"Case 2: contracted {k} is sharded over <AXES> in "
                    f"{lv.array if c.contracted_side == 'lhs' else rv.array} only"
                )
            elif c.kind in ("both-free", "both-contracted"):
                # Two different contracted dims are Case 2 twice (`case_label`); this reason
                # has always said Case 4, and the goldens pin it.
                t = (
                    f"Case 4: both operands shard a non-contracted dim over <AXES> "
                    f"({lv.array}.{dl}, {rv.array}.{dr})"
                )
            elif step.kind == "AllReduce":
                t = (
                    f"{lv.array if side == 'lhs' else rv.array} holds partial sums the "
                    "other operand cannot multiply"
                )
            elif c.kind in ("same-contracted", "same-free"):
                t = (
                    f"both operands shard {dl} over <AXES>; the cheapest strategy "
                    "gathers it (numbers decided)"
                )
            else:
                t = "the cheapest strategy places <AXES> elsewhere"
            groups.setdefault(t, []).append(a)
        return "; ".join(t.replace("<AXES>", format_axes(axes)) for t, axes in groups.items())

    return why


def step_text(s: Step, name: str) -> str:
    """`AllGather_X(A)`, `ReduceScatter_{X,J}(C)`, `slice A over X`."""
    ax = format_axes(s.axes)
    if s.kind == "slice":
        return f"slice {name} over {ax}"
    if s.dim is not None:
        return f"{s.kind}_{{{ax},{s.dim}}}({name})"
    return f"{s.kind}_{ax}({name})"


def describe_steps(
    lhs_steps: tuple[Step, ...],
    rhs_steps: tuple[Step, ...],
    out_steps: tuple[Step, ...],
    lhs: str,
    rhs: str,
    target: str,
) -> str:
    """Steps on each operand, the local einsum, then the result's steps, in words."""
    parts = []
    for steps, name in ((lhs_steps, lhs), (rhs_steps, rhs)):
        for s in steps:
            parts.append(step_text(s, name))
    parts.append("local einsum")
    for s in out_steps:
        parts.append(step_text(s, target))
    return ", ".join(parts)


def describe_plan(p: EinsumPlan, lhs: str, rhs: str, target: str) -> str:
    """A plan in words: its steps on each operand, the local einsum, then the result's steps."""
    return describe_steps(p.lhs_steps, p.rhs_steps, p.out_steps, lhs, rhs, target)


def beat_text(
    ranked: list[EinsumPlan],
    objective: Callable[[EinsumPlan], Rank],
    lhs: str,
    rhs: str,
    target: str,
) -> str:
    """`chosen over <runner-up> (N.Nx the cost)`, for the reasons of inserted collectives."""
    if len(ranked) < 2:
        return ""
    best = objective(ranked[0])[1]
    best_desc = describe_plan(ranked[0], lhs, rhs, target)
    for p in ranked[1:]:
        desc = describe_plan(p, lhs, rhs, target)
        if desc == best_desc:
            continue
        other = objective(p)[1]
        if best > 0 and other / best < 0.9995:
            # Picked for a region of sizes left symbolic (`passes.symbolic_plans`): it loses at the
            # typical sizes the objective ranks by, and wins where the region holds.
            return (
                f"chosen over {desc} for this region of the symbolic sizes (at typical "
                f"sizes that plan costs {other / best:.3g}x)"
            )
        if best > 0 and other / best < 1.0005:
            return f"tied with {desc} (the same cost; the book's rule or fewer FLOPs decided)"
        if best > 0:
            return f"chosen over {desc} ({other / best:.3g}x the cost)"
        return f"chosen over {desc} (which costs more)" if other > 0 else ""
    return ""


def whole_program_text(
    chosen: EinsumPlan,
    alone: EinsumPlan,
    objective: Callable[[EinsumPlan], Rank],
    lhs: str,
    rhs: str,
    target: str,
) -> str:
    """Why a product runs a plan that is not its own cheapest: the whole program's objective
    chose it (`passes.objective`)."""
    mine, theirs = objective(chosen)[1], objective(alone)[1]
    ratio = f" ({mine / theirs:.3g}x its cost)" if theirs > 0 else ""
    return (
        f"chosen for the whole program's objective (--objective) over "
        f"{describe_plan(alone, lhs, rhs, target)}, the cheapest for this product alone"
        f"{ratio}"
    )
