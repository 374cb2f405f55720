"""What one collective does to a layout: the reshard `Step` record and `transfer`, the one home
of the sharding chapter's rules (AllGather removes a subscript, AllToAll moves one to another dim,
ReduceScatter turns partial sums into a sharding, AllReduce removes partial sums). The planners
(`passes.reshard`, `passes.reshard_search`) and the collectives a program writes use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shardc.lang.layout import DimSharding, Layout


@dataclass(frozen=True, slots=True)
class Step:
    """One collective or local slice: `kind` in AllGather/AllToAll/AllReduce/ReduceScatter/
    CollectivePermute/slice. A CollectivePermute's `axes` are every axis along which a block's
    owner can change: the axes of the dims whose sharding it changes, in either layout."""

    kind: str
    axes: tuple[str, ...]
    dim: str | None
    src: Layout
    dst: Layout


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a collective cannot act on a layout: the rule it breaks and the axes (and dim) at
    fault. "not-sharded": AllGather of an axis that shards no dim; "not-innermost": axes that
    are not the innermost run of `dim`; "no-partial-sums": a reduction over axes without
    partial sums; "wrong-source": AllToAll of an axis that shards no dim other than `dim`."""

    rule: Literal["not-sharded", "not-innermost", "no-partial-sums", "wrong-source"]
    axes: tuple[str, ...]
    dim: str | None = None


def transfer(
    layout: Layout, kind: str, axes: tuple[str, ...], dim: str | None = None
) -> Layout | Refusal:
    """What one collective does to a layout (the sharding chapter): the one home of these rules,
    used by the planner below and by the explicit collectives a program writes.

    >>> lay = Layout.of({"I": ("X", "Y"), "J": ()}, {"Z"})
    >>> transfer(lay, "AllGather", ("Y",)).format("A")
    'A[I_X, J]{U_Z}'
    >>> transfer(lay, "ReduceScatter", ("Z",), "J").format("A")
    'A[I_XY, J_Z]'
    >>> transfer(lay, "AllToAll", ("X",), "J")
    Refusal(rule='not-innermost', axes=('X',), dim='I')
    """
    match kind:
        case "AllGather":
            for x in axes:
                if layout.dim_of_axis(x) is None:
                    return Refusal("not-sharded", (x,))
            dims = []
            for d in layout.dims:
                gone = tuple(x for x in d.axes if x in axes)
                keep = d.axes[: len(d.axes) - len(gone)]
                if gone and d.axes[len(keep) :] != gone:
                    return Refusal("not-innermost", gone, d.dim)
                dims.append(DimSharding(d.dim, keep))
            return Layout(tuple(dims), layout.unreduced)
        case "AllReduce" | "ReduceScatter":
            missing = tuple(x for x in axes if x not in layout.unreduced)
            if missing:
                return Refusal("no-partial-sums", missing)
            if kind == "AllReduce":
                return layout.with_unreduced(layout.unreduced - set(axes))
            assert dim is not None
            return Layout(
                tuple(
                    DimSharding(d.dim, d.axes + axes if d.dim == dim else d.axes)
                    for d in layout.dims
                ),
                layout.unreduced - set(axes),
            )
        case "AllToAll":
            assert dim is not None
            cur = {d.dim: list(d.axes) for d in layout.dims}
            by_src: dict[str, list[str]] = {}
            for x in axes:
                src = layout.dim_of_axis(x)
                if src is None or src == dim:
                    return Refusal("wrong-source", (x,), dim)
                by_src.setdefault(src, []).append(x)
            for src, moved in by_src.items():
                # The moved axes must be the innermost run of their dim, in order.
                if cur[src][-len(moved) :] != moved:
                    return Refusal("not-innermost", tuple(moved), src)
                del cur[src][-len(moved) :]
                cur[dim].extend(moved)
            return Layout(
                tuple(DimSharding(d.dim, tuple(cur[d.dim])) for d in layout.dims), layout.unreduced
            )
    raise AssertionError(f"no layout rule for {kind}")
