"""Validating layouts: each subscript names declared mesh axes (S001-S003, S012), an axis shards
one dim at most, and a sharded dim divides by its shards (S004)."""

from __future__ import annotations

from shardc.lang.layout import DimSharding, Layout, format_axes
from shardc.lang.source import Span
from shardc.passes.context import Context
from shardc.passes.validate_env import Env, did_you_mean

_ONE_AXIS_ONCE = "a mesh axis may shard at most one dimension of an array"


def through_layout(anchor: Span, ctx: Context) -> Span:
    """From `anchor` (a name) through the `]` closing the layout that follows it."""
    text = ctx.source.line_text(anchor.line)
    close = text.find("]", anchor.col - 1)
    if anchor.line <= 0 or close < 0:
        return anchor
    return Span(anchor.line, anchor.col, anchor.line, close + 2)


def unreduced_span(anchor: Span, ctx: Context) -> Span:
    """The `U_X` of the `{U_X}` after the layout that follows `anchor`; `anchor` if not found."""
    text = ctx.source.line_text(anchor.line)
    depth = 0
    for i in range(max(anchor.col - 1, 0), len(text)):
        ch = text[i]
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "{" and depth == 0:
            close = text.find("}", i)
            end = close + 1 if close >= 0 else len(text) + 1
            return Span(anchor.line, i + 2, anchor.line, max(end, i + 3))
        elif ch in "=#" and depth == 0:
            break
    return anchor


def resolve_axes(parts: tuple[str, ...], env: Env) -> tuple[str, ...] | str:
    """Resolve subscript parts to mesh axes, or return the offending part."""
    out: list[str] = []
    for p in parts:
        if p in env.mesh:
            out.append(p)
        elif len(p) > 1 and all(c in env.mesh for c in p):
            out.extend(p)
        else:
            return p
    return tuple(out)


def _comma_note(part: str) -> tuple[str, ...]:
    if len(part.split()) > 1:
        return ("separate mesh axes in a subscript with commas: I_{X,Y}",)
    return ()


def mesh_axes_note(env: Env) -> str:
    return "mesh axes: " + ", ".join(env.mesh) if env.mesh else "the mesh declares no axes"


def check_layout(layout: Layout, array: str, anchor: Span, env: Env, ctx: Context) -> Layout | None:
    d = ctx.diagnostics
    ok = True
    seen_axes: dict[str, str] = {}
    seen_dims: set[str] = set()
    dims: list[DimSharding] = []
    for ds in layout.dims:
        if ds.dim not in env.dims:
            d.error(
                "N009",
                f"undeclared dimension {ds.dim!r} in {array!r}",
                ds.span,
                did_you_mean(ds.dim, env.dims),
                notes=(f"declare it with `dim {ds.dim}` (symbolic) or `dim {ds.dim}=1024`",),
            )
            ok = False
            continue
        if ds.dim in seen_dims:
            d.error(
                "S006",
                f"dimension {ds.dim!r} appears twice in {array!r}",
                ds.span,
                f"second {ds.dim!r}",
                ("an array names each of its dimensions once",),
            )
            ok = False
            continue
        seen_dims.add(ds.dim)
        axes: tuple[str, ...] = ()
        if ds.axes:
            if not env.mesh_declared:
                later = env.later_mesh_line
                d.error(
                    "S007",
                    f"{array!r} is sharded but no mesh is declared",
                    ds.span,
                    notes=(
                        f"the mesh is declared on line {later}, after this statement; "
                        "declare it first"
                        if later
                        else "declare the mesh first, e.g. `mesh X=8, Y=4`",
                    ),
                )
                ok = False
                continue
            res = resolve_axes(ds.axes, env)
            if isinstance(res, str):
                d.error(
                    "S001",
                    f"unknown mesh axis {res!r} in {array!r}",
                    ds.span,
                    notes=(mesh_axes_note(env), *_comma_note(res)),
                )
                ok = False
                continue
            axes = res
            for k, ax in enumerate(axes):
                if ax in axes[:k]:
                    d.error(
                        "S002",
                        f"mesh axis {ax!r} appears twice in the sharding of "
                        f"{ds.dim!r} in {array!r}",
                        ds.span,
                        f"second use of {ax!r}",
                        (_ONE_AXIS_ONCE,),
                    )
                    ok = False
                elif ax in seen_axes:
                    d.error(
                        "S002",
                        f"mesh axis {ax!r} shards two dimensions of {array!r}",
                        ds.span,
                        f"second use of {ax!r}",
                        (_ONE_AXIS_ONCE,),
                    )
                    ok = False
                seen_axes.setdefault(ax, ds.dim)
            if ok:
                _check_divisible(ds.dim, axes, array, ds.span, env, ctx)
        dims.append(DimSharding(ds.dim, axes, ds.span))
    unreduced: set[str] = set()
    for part in sorted(layout.unreduced):
        res = resolve_axes((part,), env)
        if isinstance(res, str):
            d.error(
                "S001",
                f"unknown mesh axis {res!r} in the partial sums of {array!r}",
                unreduced_span(anchor, ctx),
                notes=(mesh_axes_note(env),),
            )
            ok = False
            continue
        for ax in res:
            if ax in seen_axes:
                d.error(
                    "S003",
                    f"mesh axis {ax!r} both shards {seen_axes[ax]!r} and holds "
                    f"partial sums of {array!r}",
                    unreduced_span(anchor, ctx),
                    f"{ax!r} already shards {seen_axes[ax]!r}",
                    notes=("an axis is either a sharding axis or an unreduced axis",),
                )
                ok = False
            unreduced.add(ax)
    if not ok:
        return None
    return Layout(tuple(dims), frozenset(unreduced))


def _check_divisible(
    dim: str, axes: tuple[str, ...], array: str, span: Span, env: Env, ctx: Context
) -> None:
    size = env.size(dim)
    shards = 1
    for ax in axes:
        s = env.size(ax)
        if s is None:
            return
        shards *= s
    if size is not None and size % shards != 0:
        ctx.diagnostics.error(
            "S004",
            f"dimension {dim!r} of size {size} is not divisible by its "
            f"{shards} shards over {format_axes(axes)} in {array!r}",
            span,
            notes=("every shard of a dimension has the same size",),
        )
