"""Explicit collectives a program writes (`AllGather_X(A)`, `Send_{X: +1}(B)`): check each
against the layout rules of `passes.reshard.transfer` and emit it, or say which rule it breaks.
"""

from __future__ import annotations

from shardc.lang.layout import Layout, format_axes
from shardc.lang.send import format_send
from shardc.lang.syntax import CollectiveCall
from shardc.passes.ir import Collective, Value
from shardc.passes.lower.state import LoweringState
from shardc.passes.reshard import Refusal, transfer


def explicit_collective(st: LoweringState, e: CollectiveCall, a: Value) -> Value | None:
    """`e` applied to its lowered argument `a` (`walk.collective` lowers it: a contraction's
    partial sums kept where `e` reduces them)."""
    if e.kind == "Send":
        return send(st, e, a)
    lay = a.layout
    axes = e.axes
    ax = format_axes(axes)
    sig = f"{e.kind}_{ax if e.dim is None else '{' + ax + ',' + e.dim + '}'}"
    new = transfer(lay, e.kind, axes, e.dim)
    if isinstance(new, Refusal):
        refuse(st, e, sig, lay, a.array, new)
        return None
    for d in new.dims:
        if d.axes and not st.divisible(d.dim, d.axes):
            st.error(
                "S004",
                f"{sig} would shard {d.dim} over {format_axes(d.axes)}, which does not divide it",
                e.sub_span,
            )
            return None
    out = Value(st.fresh(a.array), a.array, a.dtype, new)
    return st.emit(
        Collective(
            e.kind, out, a, axes, e.dim, e.span, f"explicit {sig} in the program", explicit=True
        )
    )


def refuse(
    st: LoweringState, e: CollectiveCall, sig: str, lay: Layout, array: str, r: Refusal
) -> None:
    """Report the layout rule an explicit collective breaks, in the terms of its kind."""
    cur = st.fmt(lay, array)
    bad = format_axes(r.axes)
    match e.kind, r.rule:
        case "AllGather", "not-sharded":
            st.error(
                "C005",
                f"{sig}: {bad} shards no dim of {cur}",
                e.sub_span,
                ("AllGather_X removes X from the dim it shards",),
            )
        case "AllGather", "not-innermost":
            assert r.dim is not None
            held = lay.axes_of(r.dim)
            st.error(
                "C006",
                f"{sig}: {bad} is not the innermost axis of {r.dim} in {cur}",
                e.sub_span,
                (
                    f"{r.dim}_{format_axes(held)} splits {r.dim} into "
                    f"{format_axes(held[:1])}-blocks first; gathering an outer "
                    "axis alone does not give contiguous blocks: gather the inner "
                    f"axes too (AllGather_{format_axes(held[held.index(r.axes[0]) :])})",
                ),
            )
        case "AllReduce", "no-partial-sums":
            st.error(
                "C007",
                f"{sig}: {cur} holds no partial sums over {bad}",
                e.sub_span,
                (
                    "AllReduce_X removes {U_X}; only a contraction over a dim "
                    "sharded by X leaves partial sums",
                ),
            )
        case "ReduceScatter", "no-partial-sums":
            st.error(
                "C007",
                f"{sig}: {cur} holds no partial sums over {bad}",
                e.sub_span,
                ("ReduceScatter_{X,K} turns {U_X} into a sharding of K",),
            )
        case "AllToAll", "wrong-source":
            st.error(
                "C008",
                f"{sig}: {bad} must shard a dim of {cur} other than {e.dim}",
                e.sub_span,
                ("AllToAll_{X,J} moves the subscript X from its dim to J",),
            )
        case "AllToAll", "not-innermost":
            assert r.dim is not None
            st.error(
                "C006",
                f"{sig}: {bad} is not the innermost run of axes of {r.dim} in {cur}",
                e.sub_span,
                (
                    f"{r.dim}_{format_axes(lay.axes_of(r.dim))} is split major "
                    "first; only its innermost axes move without a reshuffle",
                ),
            )
        case _:
            raise AssertionError(f"{e.kind} refused by rule {r.rule}")


def send(st: LoweringState, e: CollectiveCall, a: Value) -> Value | None:
    """A point-to-point Send: the value keeps its layout (a shift rolls the blocks along
    the axes it moves; a point form copies a block every device already has the like of)."""
    sig = format_send(e.send)
    moved = [m for m in e.send if not m.is_shift and m.axis in a.layout.used_axes]
    if moved:
        m = moved[0]
        held = (
            "holds partial sums over"
            if m.axis in a.layout.unreduced
            else f"shards {a.layout.dim_of_axis(m.axis)} over"
        )
        st.error(
            "C016",
            f"{sig}: {st.fmt(a.layout, a.array)} {held} {m.axis}, so the "
            "devices along it hold different blocks",
            m.span,
            (
                f"the point form copies one device's block; to move every block along "
                f"{m.axis} write a shift such as Send_{{{m.axis}: +1}}, or gather first "
                f"(AllGather_{m.axis})",
            ),
        )
        return None
    out = Value(st.fresh(a.array), a.array, a.dtype, a.layout)
    return st.emit(
        Collective(
            "Send",
            out,
            a,
            e.axes,
            None,
            e.span,
            f"explicit {sig} in the program",
            explicit=True,
            send=e.send,
        )
    )
