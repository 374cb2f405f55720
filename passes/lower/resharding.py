"""The resharding every part of the lowering uses: a value is brought to a layout by reshard's
plan, each step emitted with its reason, and a layout an earlier step made is reused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shardc.lang.layout import Layout, format_axes
from shardc.lang.source import Span
from shardc.passes.ir import Collective, LocalSlice, Value
from shardc.passes.layout_cost import Pricing
from shardc.passes.lower.explain import describe_step
from shardc.passes.lower.state import LoweringState
from shardc.passes.reshard import Step, plan_reshard


def reshard(
    st: LoweringState, v: Value, want: Layout, span: Span, why: str, name: str | None = None
) -> Value | None:
    """`v` brought to `want` by reshard's plan; None (with C004) where no plan makes it."""
    if v.layout == want:
        return v
    sizes, pricing = st.known_sizes(), st.pricing(v.dtype, v.dims)
    v = cached_source(st, v, want, sizes, pricing)
    if v.layout == want:
        return v
    steps = plan_reshard(v.layout, want, sizes, pricing)
    if steps is None:
        extra = want.unreduced - v.layout.unreduced
        shown = name or v.array
        st.error(
            "C004",
            f"cannot make {st.fmt(want, shown)} from "
            f"{st.fmt(v.layout, v.array)}: "
            f"no collective creates partial sums over {format_axes(st.ordered(extra))}",
            span,
            ("partial sums {U_X} come from contracting a dim sharded over X",),
        )
        return None
    return apply_steps(st, v, steps, span, lambda s: why)


def cached_source(
    st: LoweringState, v: Value, want: Layout, sizes: dict[str, float], pricing: Pricing
) -> Value:
    """The copy of `v` to reshard from: `v`, or a layout of it an earlier reshard made
    (`resharded`), where every mesh axis's size is known, under the exact model, and
    resharding that copy costs strictly less (`R0[I, K_Y] = E; R1[I, K_X] = E` slices
    R1 from the whole E that R0's reshard gathered, rather than gather E again).
    Parameters are gathered again where needed (`apply_steps`)."""
    if (
        st.ctx.model != "exact"
        or v.array in st.params
        or v.id not in st.copies
        or any(a not in sizes for a in st.mesh)
    ):
        return v
    copies: list[Value] = []
    frontier = [v.id]
    seen = {v.id}
    while frontier and len(copies) < 16:
        for u in st.copies.get(frontier.pop(), ()):
            if u.id not in seen:
                seen.add(u.id)
                copies.append(u)
                frontier.append(u.id)

    def cost(u: Value) -> float | None:
        steps = plan_reshard(u.layout, want, sizes, pricing)
        return None if steps is None else pricing.time(steps, sizes)

    best, best_cost = v, cost(v)
    for u in copies:
        c = cost(u)
        if c is not None and (best_cost is None or c < best_cost * (1 - 1e-9)):
            best, best_cost = u, c
    return best


def apply_steps(
    st: LoweringState,
    v: Value,
    steps: Sequence[Step],
    span: Span,
    why: Callable[[Step], str],
    beat: str = "",
) -> Value:
    """Emit `steps` on `v`, each op with its reason (`why`, then what the plan beat)."""
    for s in steps:
        # An activation already brought to this layout is reused (the backward pass reads
        # the forward's gathered input, as the book's algorithms do); parameters are
        # gathered again where needed, so FSDP keeps only its shard between uses.
        key = (v.id, s.dst)
        if key in st.resharded and v.array not in st.params:
            v = st.resharded[key]
            continue
        out = Value(st.fresh(v.array), v.array, v.dtype, s.dst)
        if s.kind == "slice":
            v = st.emit(
                LocalSlice(out, v, span, f"{why(s)}: free local slice over {format_axes(s.axes)}")
            )
        else:
            reason = f"{why(s)}: {describe_step(s, v.array, tuple(st.mesh))}"
            if beat:
                reason += f"; {beat}"
            v = st.emit(
                Collective(
                    s.kind,  # type: ignore[arg-type]
                    out,
                    v,
                    s.axes,
                    s.dim,
                    span,
                    reason,
                )
            )
        st.resharded[key] = v
        st.copies.setdefault(key[0], []).append(v)
    return v
