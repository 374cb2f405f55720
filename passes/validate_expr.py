"""Validating expressions: references, contractions, elementwise ops, calls and explicit
collectives get their dims and dtype, or a diagnostic with its span."""

from __future__ import annotations

import difflib

from shardc.lang.dtypes import promote
from shardc.lang.layout import Layout
from shardc.lang.send import SEND_NOTE
from shardc.lang.source import Span
from shardc.lang.syntax import (
    COLLECTIVE_KINDS,
    ELEMENTWISE_FUNCTIONS,
    Binary,
    Call,
    CollectiveCall,
    Contract,
    Expr,
    Reduce,
    Ref,
)
from shardc.passes.context import Context
from shardc.passes.validate_env import Env, did_you_mean
from shardc.passes.validate_layout import check_layout, mesh_axes_note, resolve_axes, unreduced_span
from shardc.passes.validate_send import check_send

Checked = tuple[Expr, str, tuple[str, ...]]
"""An expression checked: resolved, with its dtype and dims."""

_COLLECTIVE_EXAMPLES = {
    "AllGather": "AllGather_X(A)",
    "AllReduce": "AllReduce_X(A)",
    "ReduceScatter": "ReduceScatter_{X,K}(A)",
    "AllToAll": "AllToAll_{X,K}(A)",
    "Send": "Send_{X: 0->3}(A) or Send_{X: +1}(A)",
}


def check_expr(expr: Expr, env: Env, ctx: Context) -> Checked | None:
    """Return (resolved expr, dtype, dims) or None after reporting."""
    match expr:
        case Ref():
            return _check_ref(expr, env, ctx)
        case Contract():
            return _check_contract(expr, env, ctx)
        case Binary():
            return _check_binary(expr, env, ctx)
        case Call():
            return _check_call(expr, env, ctx)
        case CollectiveCall():
            return _check_collective(expr, env, ctx)
        case Reduce():
            return _check_reduce(expr, env, ctx)
    raise AssertionError(f"unhandled expression {expr!r}")


def _check_ref(expr: Ref, env: Env, ctx: Context) -> Checked | None:
    d = ctx.diagnostics
    name, layout = expr.name, expr.layout
    if name in env.failed:
        return None  # its definition was reported already
    if expr.renames and layout is None:  # the derived backward pass names a gradient back
        return _check_renamed(expr, None, env, ctx)
    if layout is not None:
        new_layout = check_layout(layout, name, expr.span, env, ctx)
        if new_layout is None:
            return None
        if expr.renames:
            return _check_renamed(expr, new_layout, env, ctx)
        if name in env.arrays:
            dtype, dims = env.arrays[name]
            if not _use_layout_ok(expr, repr(name), dims, new_layout, ctx):
                return None
            return Ref(name, new_layout, expr.span), dtype, dims
        env.arrays[name] = ("bf16", new_layout.dim_names)
        env.array_lines.setdefault(name, expr.span.line)
        return Ref(name, new_layout, expr.span), "bf16", new_layout.dim_names
    if name not in env.arrays:
        notes = ("declare it, e.g. `A: bf16[I, J_X]`, or give it a layout at its first use",)
        d.error(
            "N011",
            f"undefined array {name!r}",
            expr.span,
            did_you_mean(name, env.arrays),
            notes=notes,
        )
        return None
    dtype, dims = env.arrays[name]
    return expr, dtype, dims


def _check_renamed(expr: Ref, layout: Layout | None, env: Env, ctx: Context) -> Checked | None:
    """`In[B, T->S, D]`: an existing array, each renamed dim one of its own, renamed to a
    declared dim of the same size that the array does not already have."""
    d = ctx.diagnostics
    name = expr.name
    if name not in env.arrays:
        d.error(
            "S013",
            f"{name!r} is renamed before it exists",
            expr.span,
            "no array to rename",
            notes=("a rename reads an array: declare or compute it first",),
        )
        return None
    dtype, dims = env.arrays[name]
    olds = [old for old, _ in expr.renames]
    news = [new for _, new in expr.renames]
    for old, new in expr.renames:
        problem = None
        if old not in dims:
            problem = f"{name!r} has no dimension {old!r} (its dims are [{', '.join(dims)}])"
        elif olds.count(old) > 1 or news.count(new) > 1:
            problem = f"{old!r} or {new!r} is renamed twice"
        elif new in dims and new not in olds:
            problem = (
                f"{name!r} already has a dimension {new!r}: renaming {old!r} to it "
                "would give the array two"
            )
        else:
            a, b = env.size(old), env.size(new)
            if a is not None and b is not None and a != b:
                problem = f"renaming {old!r} ({a}) to {new!r} ({b}) needs equal sizes"
        if problem is not None:
            d.error(
                "S013",
                problem,
                expr.span,
                f"{old}->{new}",
                notes=("`A[T->S, D]` reads A with its dim T called S; T and S have one size",),
            )
            return None
    used = expr.used_dims(dims)
    if layout is None:
        return expr, dtype, used
    if not _use_layout_ok(expr, f"{name!r} renamed", used, layout, ctx):
        return None
    return Ref(name, layout, expr.span, expr.renames), dtype, used


def _use_layout_ok(
    expr: Ref, what: str, dims: tuple[str, ...], layout: Layout, ctx: Context
) -> bool:
    """A layout on a use: every dim of the array (`dims`), in any order (S005), and no
    partial sums (S008). False after reporting."""
    d = ctx.diagnostics
    if sorted(dims) != sorted(layout.dim_names):
        d.error(
            "S005",
            f"{what} has dims [{', '.join(dims)}] but is written [{', '.join(layout.dim_names)}]",
            expr.span,
            f"expected the dims [{', '.join(dims)}], in any order",
            notes=("a layout on a use names every dim of the array",),
        )
        return False
    if layout.unreduced:
        d.error(
            "S008",
            f"a use of {expr.name!r} cannot request partial sums",
            unreduced_span(expr.span, ctx),
            "partial sums requested here",
            notes=("only declarations and left-hand sides may say {U_X}",),
        )
        return False
    return True


def _check_contract(expr: Contract, env: Env, ctx: Context) -> Checked | None:
    d = ctx.diagnostics
    lc = check_expr(expr.lhs, env, ctx)
    rc = check_expr(expr.rhs, env, ctx)
    if lc is None or rc is None:
        return None
    (le, lt, ld), (re_, rt, rd) = lc, rc
    cdims = _subscript_dims(expr.dims, (*ld, *rd), "contraction", expr.dims_span, env, ctx)
    if cdims is None:
        return None
    for k, dim in enumerate(cdims):
        if dim in cdims[:k]:
            d.error(
                "S006",
                f"dimension {dim!r} appears twice in the contraction ·_{_subscript(expr.dims)}",
                expr.dims_span,
                notes=("list each contracted dimension once: ·_{N,H}",),
            )
            return None
    for cd in cdims:
        for side, dims_, e in (("left", ld, expr.lhs), ("right", rd, expr.rhs)):
            if cd not in dims_:
                d.error(
                    "S009",
                    f"contraction over {cd!r}, which the {side} operand "
                    f"{_describe(e)} lacks (its dims: {', '.join(dims_)})",
                    expr.dims_span,
                    notes=("both operands of ·_J must have dim J",),
                )
                return None
    out = [x for x in ld if x not in cdims] + [x for x in rd if x not in cdims and x not in ld]
    return (Contract(le, re_, tuple(cdims), expr.span, expr.dims_span), promote(lt, rt), tuple(out))


def _subscript_dims(
    parts: tuple[str, ...], present: tuple[str, ...], what: str, span: Span, env: Env, ctx: Context
) -> list[str] | None:
    """The dims a subscript names (`·_J`, `Sum_{N,H}`): each entry a declared dim or one of
    the operands', or a run of one-letter declared dims (`·_KH` is K and H); N009 otherwise."""
    out: list[str] = []
    for p in parts:
        if p in env.dims or p in present:
            out.append(p)
        elif len(p) > 1 and all(c in env.dims for c in p):
            out.extend(p)
        else:
            ctx.diagnostics.error(
                "N009",
                f"{what} over undeclared dimension {p!r}",
                span,
                did_you_mean(p, env.dims),
                notes=(f"declare it with `dim {p}` (symbolic) or `dim {p}=1024`",),
            )
            return None
    return out


def _check_binary(expr: Binary, env: Env, ctx: Context) -> Checked | None:
    lc = check_expr(expr.lhs, env, ctx)
    rc = check_expr(expr.rhs, env, ctx)
    if lc is None or rc is None:
        return None
    (le, lt, ld), (re_, rt, rd) = lc, rc
    if set(rd) <= set(ld):
        dims = ld
    elif set(ld) < set(rd):
        dims = rd
    else:
        ctx.diagnostics.error(
            "S010",
            f"cannot broadcast [{', '.join(ld)}] {expr.op} [{', '.join(rd)}]",
            expr.span,
            "neither operand's dims include the other's",
            notes=(
                "in an elementwise op one operand's dims must include the other's "
                "(bias[F] + X[B, F])",
            ),
        )
        return None
    return Binary(expr.op, le, re_, expr.span), promote(lt, rt), dims


def _check_reduce(expr: Reduce, env: Env, ctx: Context) -> Checked | None:
    """`Sum_{D}(A)`, `Max_{D}(A)`: dims of A, each once; `softmax_{S}(A)`: one dim of A."""
    d = ctx.diagnostics
    ac = check_expr(expr.arg, env, ctx)
    if ac is None:
        return None
    arg, dtype, dims = ac
    if expr.kind == "Broadcast":  # written by the backward pass: the result's dims
        if not set(dims) <= set(expr.dims):
            raise AssertionError(f"broadcast of {dims} to {expr.dims}")
        return Reduce(expr.kind, expr.dims, arg, expr.span, expr.sub_span), dtype, expr.dims
    wanted = _subscript_dims(expr.dims, dims, "reduction", expr.sub_span, env, ctx)
    if wanted is None:
        return None
    for k, dim in enumerate(wanted):
        if dim in wanted[:k]:
            d.error(
                "S006",
                f"dimension {dim!r} appears twice in {expr.kind}_{{{','.join(expr.dims)}}}",
                expr.sub_span,
                notes=("list each reduced dimension once: Sum_{N,H}",),
            )
            return None
        if dim not in dims:
            d.error(
                "S014",
                f"{expr.kind} over {dim!r}, which {_describe(arg)} does not have "
                f"(its dims are [{', '.join(dims)}])",
                expr.sub_span,
                f"not a dimension of {_describe(arg)}",
                notes=("a reduction names dimensions of its operand",),
            )
            return None
    if expr.kind == "softmax" and len(wanted) != 1:
        d.error(
            "S014",
            f"softmax normalises over one dimension, not {len(wanted)}",
            expr.sub_span,
            "one dimension here",
            notes=("softmax_{S}(A) divides exp(A) by its sum over S",),
        )
        return None
    out = dims if expr.kind == "softmax" else tuple(x for x in dims if x not in wanted)
    if not out:
        d.error(
            "S014",
            f"{expr.kind} over every dimension of {_describe(arg)} leaves a "
            "scalar, which the language has no layout for",
            expr.sub_span,
            "every dimension",
            notes=("keep at least one dimension",),
        )
        return None
    return Reduce(expr.kind, tuple(wanted), arg, expr.span, expr.sub_span), dtype, out


def _check_call(expr: Call, env: Env, ctx: Context) -> Checked | None:
    d = ctx.diagnostics
    fn, args = expr.fn, expr.args
    name_span = Span(expr.span.line, expr.span.col, expr.span.line, expr.span.col + len(fn))
    if fn not in ELEMENTWISE_FUNCTIONS:
        head = fn.rstrip("_")
        if head in COLLECTIVE_KINDS:
            d.error(
                "C002",
                f"{head} needs the mesh axes it works over",
                name_span,
                f"write {_COLLECTIVE_EXAMPLES[head]}",
                (SEND_NOTE,)
                if head == "Send"
                else (
                    "a collective names its mesh axes in a subscript: AllGather_X, "
                    "AllGather_XY or AllGather_{data,model}",
                ),
            )
            return None
        known = [*ELEMENTWISE_FUNCTIONS, *COLLECTIVE_KINDS]
        head, sep, sub = fn.partition("_")
        label = did_you_mean(head, known)
        if label and sep:
            close = difflib.get_close_matches(head, known, n=1, cutoff=0.6)[0]
            label = f"did you mean {close + sep + sub!r}?"
        if fn.lower() in ("softmax", "sum", "max"):
            label = f"write {fn}_{{D}}(...) with the dimension it reduces"
        d.error(
            "N012",
            f"unknown function {fn!r}",
            name_span,
            label,
            notes=(
                "elementwise functions: " + ", ".join(ELEMENTWISE_FUNCTIONS) + "; "
                "reductions: Sum_{D}(A), Max_{D}(A), softmax_{S}(A); "
                "collectives: " + ", ".join(_COLLECTIVE_EXAMPLES.values()),
            ),
        )
        return None
    if len(args) != 1:
        d.error(
            "N013",
            f"{fn!r} takes one argument, got {len(args)}",
            expr.span,
            notes=("elementwise functions apply to one array; combine arrays with +, -, * or ·_J",),
        )
        return None
    ac = check_expr(args[0], env, ctx)
    if ac is None:
        return None
    return Call(fn, (ac[0],), expr.span), ac[1], ac[2]


def _check_collective(expr: CollectiveCall, env: Env, ctx: Context) -> Checked | None:
    d = ctx.diagnostics
    kind, parts, dim = expr.kind, expr.axes, expr.dim
    ac = check_expr(expr.arg, env, ctx)
    if ac is None:
        return None
    ae, at, ad = ac
    if kind == "Send":  # point-to-point: entries `X: 0->3` or `P: +1`, not axes
        if not check_send(expr, env.size, env.mesh, ctx):
            return None
        return CollectiveCall(kind, parts, None, ae, expr.span, expr.sub_span, expr.send), at, ad
    written = f"{kind}_{_subscript(parts) if dim is None else _braced(parts, dim)}"
    if kind in ("ReduceScatter", "AllToAll") and dim is None:
        d.error(
            "C001",
            f"{written} does not say which dimension it shards",
            expr.sub_span,
            f"write {kind}_{_braced(parts, 'K')} to shard dimension K",
            notes=(f"{kind}_{{X,K}} works over mesh axis X and shards dim K",),
        )
        return None
    if not parts:
        d.error(
            "C002",
            f"{kind} needs at least one mesh axis",
            expr.sub_span,
            f"write {_COLLECTIVE_EXAMPLES[kind]}",
        )
        return None
    res = resolve_axes(parts, env)
    if isinstance(res, str):
        d.error(
            "S001",
            f"unknown mesh axis {res!r} in {written}",
            expr.sub_span,
            notes=(mesh_axes_note(env),),
        )
        return None
    for k, ax in enumerate(res):
        if ax in res[:k]:
            d.error(
                "C010",
                f"mesh axis {ax!r} appears twice in {written}",
                expr.sub_span,
                f"second use of {ax!r}",
                ("name each mesh axis of a collective once",),
            )
            return None
    if dim is not None and dim not in ad:
        if dim in env.mesh:
            d.error(
                "C003",
                f"{written} ends in {dim!r}, which is a mesh axis, not a dimension",
                expr.sub_span,
                f"expected a dimension of the argument: {', '.join(ad)}",
                (f"the last entry of {kind}_{{X,K}} is the dimension K it shards",),
            )
        else:
            d.error(
                "C003",
                f"{kind} shards dimension {dim!r}, which its argument lacks "
                f"(dims: {', '.join(ad)})",
                expr.sub_span,
                notes=(f"the last entry of {kind}_{{X,K}} is the dimension K it shards",),
            )
        return None
    return CollectiveCall(kind, res, dim, ae, expr.span, expr.sub_span), at, ad


def _subscript(parts: tuple[str, ...]) -> str:
    """A subscript as the program writes it: `X`, `XY` or `{X,Y}`."""
    return parts[0] if len(parts) == 1 else "{" + ",".join(parts) + "}"


def _braced(parts: tuple[str, ...], dim: str) -> str:
    return "{" + ",".join([*parts, dim]) + "}"


def _describe(e: Expr) -> str:
    return f"{e.name!r}" if isinstance(e, Ref) else "(an expression)"
