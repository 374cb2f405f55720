"""The `insert-collectives` pass: walk the statements, lowering each to local ops plus the
collectives it needs. The walk lowers every subexpression; contractions, elementwise ops and
explicit collectives each have a module that lowers one node from its lowered operands; layout
requests go through `passes.reshard`. Every inserted collective records why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from shardc.lang.layout import DimSharding, Layout, format_axes
from shardc.lang.source import Span
from shardc.lang.syntax import (
    ArrayDecl,
    Assign,
    Binary,
    Call,
    CollectiveCall,
    Contract,
    DimDecl,
    Expr,
    HardwareDecl,
    MeshDecl,
    Program,
    Reduce,
    Ref,
)
from shardc.passes.context import Context
from shardc.passes.ir import (
    Collective,
    CompiledProgram,
    Elementwise,
    Input,
    Reduction,
    Topology,
    Value,
)
from shardc.passes.lower import contract as contraction
from shardc.passes.lower.chain import JointPick
from shardc.passes.lower.elementwise import combine, unary
from shardc.passes.lower.explicit import explicit_collective
from shardc.passes.lower.resharding import reshard
from shardc.passes.lower.state import LoweringState, PlanCaches, derived_name
from shardc.passes.symbolic_plans import Chooser

if TYPE_CHECKING:
    from shardc.hardware import Chip


def insert_collectives(program: Program, ctx: Context, chooser: Chooser | None = None, *,
                       chip: Chip | None = None, topology: Topology | None = None,
                       bindings: Mapping[str, float] = MappingProxyType({})) -> CompiledProgram:
    """The `insert-collectives` pass: lower a validated program to per-device ops, inserting
    the collectives its layouts need, on `chip` and `topology` with the validated `bindings`
    (what `passes.pipeline.Unit` holds). Where the ranking of a contraction's plans depends on
    symbolic sizes, `chooser` picks (`passes.symbolic_plans.AtPoint`: as a compile at those sizes
    would); without one, the book's default. A chooser with a `shared` dict (the whole-program
    search's, `passes.objective.Forced`) lends its plan caches to every lowering of the same
    program and context: they depend only on statement shapes, not on the plans chosen."""
    st = LoweringState(ctx, chooser, chip, topology, bindings)
    shared = getattr(chooser, "shared", None)
    if shared is not None:
        st.caches = shared.setdefault("caches", PlanCaches())
    return walk(st, program)


def walk(st: LoweringState, program: Program) -> CompiledProgram:
    """Lower each statement in turn; stop at the first that fails."""
    st.name = st.ctx.source.name
    for stmt in program.statements:
        start = len(st.ops)
        match stmt:
            case MeshDecl(axes=axes):
                st.mesh = {a.name: a.size for a in axes}
                st.size_cache.clear()
            case DimDecl(dims=dims):
                for d in dims:
                    st.dims[d.name] = d.size
                st.size_cache.clear()
            case HardwareDecl(name=name):
                st.hardware = name
            case ArrayDecl(name=name, dtype=dtype, layout=layout, param=param):
                if param:
                    st.params.add(name)
                v = Value(name, name, dtype, layout.stripped())
                st.values[name] = st.emit(Input(v, stmt.span))
                st.arrays[name] = v
            case Assign():
                assign(st, stmt)
        if st.failed:
            break
        if isinstance(stmt, (ArrayDecl, Assign)) and stmt.times:
            # every op of a statement in `repeat` runs with it
            st.ops[start:] = [dataclasses.replace(op, times=stmt.times)
                              for op in st.ops[start:]]
            made = {op.out.array for op in st.ops[start:]}  # inline `In[I_X]` too
            made.add(stmt.name if isinstance(stmt, ArrayDecl) else stmt.target)
            st.array_times.update(dict.fromkeys(made, stmt.times))
    return CompiledProgram(
        st.name, tuple(st.mesh.items()), tuple(st.dims.items()), st.hardware,
        tuple(st.ops), tuple(st.arrays.values()), tuple(st.decisions),
        st.topology, tuple(sorted(st.params)), program.repeats,
        tuple(st.array_times.items()), sized_choices=st.sized_choices,
        aliases=tuple(st.aliases.items()))


def assign(st: LoweringState, stmt: Assign) -> None:
    target = stmt.target
    tid = target if target not in st.values else st.fresh(target)
    start = len(st.ops)
    req = stmt.layout.stripped() if stmt.layout is not None else None
    if isinstance(stmt.expr, Contract):
        v = contract(st, stmt.expr, req, target, stmt)
    else:
        # An elementwise statement weighs its request when it aligns the operands (moving
        # a small operand can beat moving the result).
        v = elementwise(st, stmt.expr, target, req)
        if v is not None:
            if req is not None:
                v = reshard(st, v, req, stmt.span,
                                 f"the left-hand side requests {st.fmt(req, target)}",
                                 target)
            elif v.layout.unreduced and not stmt.partial:
                axes = st.ordered(v.layout.unreduced)
                want = v.layout.with_unreduced(frozenset())
                v = reshard(st, v, want, stmt.span,
                                 f"{target} is written without {{U_{format_axes(axes)}}}: "
                                 "its partial sums are reduced")
    if v is None:
        st.failed = True
        return
    if len(st.ops) > start and st.ops[-1].out.id == v.id and v.id not in st.arrays:
        # Name the statement's last result after its target.
        named = Value(tid, target, v.dtype, v.layout)
        st.aliases.pop(target, None)
        st.name_last(named)
        st.values[target] = named
        st.arrays[target] = named
    else:
        # `B = A` with nothing to do: B is another name for A's blocks, stored once.
        owner = next((a.array for a in st.arrays.values() if a.id == v.id), None)
        if owner is not None and owner != target:
            st.aliases[target] = st.aliases.get(owner, owner)
        st.values[target] = v
        st.arrays[target] = Value(tid, target, v.dtype, v.layout)


def expr(st: LoweringState, e: Expr, target: str) -> Value | None:
    match e:
        case Ref(name=name, layout=layout):
            if name not in st.values:
                assert layout is not None  # validate guarantees
                v = Value(name, name, "bf16", layout.stripped())
                st.values[name] = st.emit(Input(v, e.span))
                st.arrays[name] = v
                return v
            v = st.values[name]
            if e.renames:
                # `In[T->S, D]`: resharded in the array's own dims (so a copy already
                # gathered is reused), then read with T called S; no data moves.
                back = {new: old for old, new in e.renames}
                if layout is not None:
                    want = layout.stripped().renamed(back)
                    moved = reshard(st, v, want, e.span,
                                         f"{name} is used as {st.fmt(want, name)}")
                    if moved is None:
                        return None
                    v = moved
                return Value(v.id, v.array, v.dtype, v.layout.renamed(dict(e.renames)))
            if layout is not None:
                want = layout.stripped()
                return reshard(st, v, want, e.span,
                                    f"{name} is used as {st.fmt(want, name)}")
            return v
        case Contract():
            return contract(st, e, None, target, None)
        case Binary():
            return binary(st, e, target)
        case Call(fn=fn, args=args):
            return unary(st, fn, expr(st, args[0], target), e.span)
        case CollectiveCall():
            return collective(st, e, target)
        case Reduce():
            return reduce(st, e, target)
    raise AssertionError(e)


def contract(st: LoweringState, e: Contract, requested: Layout | None, target: str,
             stmt: Assign | None, keep_partial: bool = False,
             picks: tuple[JointPick | None, ...] | None = None) -> Value | None:
    """`A ·_J B`: its operands lowered, then the product (`contract.contract`). The head of a
    chain (`A ·_J B ·_K C`) first chooses how its inner products run (`chain_picks`); `picks`
    hands each inner product, down the chain's left operands, its pick (the last) and those
    of the products inside it."""
    if picks is None and isinstance(e.lhs, Contract):
        picks = (*contraction.chain_picks(st, e, requested, keep_partial), None)
    joint = picks[-1] if picks else None
    if isinstance(e.lhs, Contract) and picks is not None:
        lv = contract(st, e.lhs, None, target, None, picks=picks[:-1])
    else:
        lv = expr(st, e.lhs, target)
    rv = expr(st, e.rhs, target)
    if lv is None or rv is None:
        return None
    return contraction.contract(st, e, lv, rv, requested, target, stmt, keep_partial, joint)


def elementwise(st: LoweringState, e: Expr, target: str, request: Layout | None = None
                ) -> Value | None:
    """A statement's right-hand side other than a contraction, its request weighed where
    operands are aligned: also through the unary functions around a `Binary` (`neg(A + b)`
    keeps the layout `A + b` takes, so moving the small `b` to the request can beat moving
    the result, as XLA's partitioner does)."""
    match e:
        case Binary():
            return binary(st, e, target, request)
        case Call(fn=fn, args=(Binary() | Call() as inner,)):
            return unary(st, fn, elementwise(st, inner, target, request), e.span)
    return expr(st, e, target)


def binary(st: LoweringState, e: Binary, target: str, request: Layout | None = None
           ) -> Value | None:
    lv = expr(st, e.lhs, target)
    rv = expr(st, e.rhs, target)
    if lv is None or rv is None:
        return None
    return combine(st, e.op, lv, rv, e.span, request)


def collective(st: LoweringState, e: CollectiveCall, target: str) -> Value | None:
    """An explicit collective on its lowered argument (`explicit.explicit_collective`)."""
    if e.kind in ("AllReduce", "ReduceScatter") and isinstance(e.arg, Contract):
        # `AllReduce_X(A ·_J B)` reduces the product's partial sums itself.
        a = contract(st, e.arg, None, target, None, keep_partial=True)
    else:
        a = expr(st, e.arg, target)
    if a is None:
        return None
    return explicit_collective(st, e, a)


def reduce(st: LoweringState, e: Reduce, target: str) -> Value | None:
    """`Sum_{D}(A)` keeps the partial sums a sharded D leaves (the statement reduces them
    unless it asks for `{U_X}`); `Max_{D}(A)` combines partial maxima with an AllReduce of
    the maximum; `softmax_{S}(A)` is exp(A - Max_S(A)) / Sum_S(exp(A - Max_S(A))), with the
    two small AllReduces a sharded S needs (Megatron-LM's vocabulary-parallel softmax)."""
    a = expr(st, e.arg, target)
    if a is None:
        return None
    if e.kind == "Broadcast":  # the gradient of a sum: copied along the dims it lacks
        dims = tuple(DimSharding(d, a.layout.axes_of(d) if d in a.dims else ())
                     for d in e.dims)
        name = derived_name(f"broadcast({a.array})")
        out = Value(st.fresh(name), name, a.dtype, Layout(dims, a.layout.unreduced))
        new = tuple(d for d in e.dims if d not in a.dims)
        return st.emit(Reduction("broadcast", out, a, new, e.span))
    if e.kind == "Sum":
        return reduction(st, "sum", a, e.dims, e.span)
    if a.layout.unreduced:
        a = reshard(st, a, a.layout.with_unreduced(frozenset()), e.span,
                         f"{e.kind} is not linear: partial sums are reduced first")
        if a is None:
            return None
    peak = maximum(st, a, e.dims, e.span)
    if e.kind == "Max":
        return peak
    shifted = combine(st, "-", a, peak, e.span)
    if shifted is None:
        return None
    name = derived_name(f"exp({shifted.array})")
    ex = st.emit(Elementwise("exp", Value(st.fresh(name), name, a.dtype, shifted.layout),
                             (shifted,), e.span))
    total = reduction(st, "sum", ex, e.dims, e.span)
    if total.layout.unreduced:
        moved = reshard(st, total, total.layout.with_unreduced(frozenset()), e.span,
                             f"softmax_{{{','.join(e.dims)}}}: the denominator's partial sums "
                             "over the sharded dimension are summed")
        if moved is None:
            return None
        total = moved
    return combine(st, "/", ex, total, e.span)


def reduction(st: LoweringState, kind: str, a: Value, dims: tuple[str, ...], span: Span) -> Value:
    """A local reduction over `dims`; a sum over a sharded dim is a partial sum."""
    axes = frozenset(x for d in a.layout.dims if d.dim in dims for x in d.axes)
    kept = tuple(d for d in a.layout.dims if d.dim not in dims)
    unreduced = a.layout.unreduced | axes if kind == "sum" else a.layout.unreduced
    name = derived_name(f"{kind}_{''.join(dims)}({a.array})")
    out = Value(st.fresh(name), name, a.dtype, Layout(kept, unreduced))
    return st.emit(Reduction(kind, out, a, dims, span))


def maximum(st: LoweringState, a: Value, dims: tuple[str, ...], span: Span) -> Value:
    """The maximum over `dims`: local, then an AllReduce of the maximum over the axes that
    shard them."""
    local = reduction(st, "max", a, dims, span)
    axes = tuple(x for d in a.layout.dims if d.dim in dims for x in d.axes)
    if not axes:
        return local
    out = Value(st.fresh(local.array), local.array, local.dtype, local.layout)
    return st.emit(Collective(
        "AllReduce", out, local, axes, None, span,
        f"the maximum over {', '.join(dims)}, sharded over {format_axes(axes)}: each device "
        "holds the maximum of its block; they are combined", combine="max"))
