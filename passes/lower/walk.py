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
from shardc.passes.layout_cost import local_bytes
from shardc.passes.lower import contract as contraction
from shardc.passes.lower.chain import JointPick
from shardc.passes.lower.elementwise import (
    alignment_key,
    best_alignment,
    cheapest_copy,
    combine,
    cost_steps,
    unary,
    wide_layouts,
    wide_search,
)
from shardc.passes.lower.explicit import explicit_collective
from shardc.passes.lower.prefixes import Prefixes, Recording, recording
from shardc.passes.lower.resharding import (
    SHARED_ORDINAL,
    apply_steps,
    cached_source,
    coarsest_common,
    copies_of,
    later_reads,
    names_read,
    partial_gathers,
    plain_reads,
    rank_all,
    reads_cost,
    reshard,
    shared_options,
    shared_reads,
    shared_reshard,
)
from shardc.passes.lower.state import LoweringState, PlanCaches, derived_name
from shardc.passes.reshard import Step, plan_reshard
from shardc.passes.symbolic_plans import Chooser

if TYPE_CHECKING:
    from shardc.hardware import Chip


def insert_collectives(
    program: Program,
    ctx: Context,
    chooser: Chooser | None = None,
    *,
    chip: Chip | None = None,
    topology: Topology | None = None,
    bindings: Mapping[str, float] = MappingProxyType({}),
    explain: bool = True,
    idle_axes: bool = True,
    prefixes: Prefixes | None = None,
) -> CompiledProgram:
    """The `insert-collectives` pass: lower a validated program to per-device ops, inserting
    the collectives its layouts need, on `chip` and `topology` with the validated `bindings`
    (what `passes.pipeline.Unit` holds). Where the ranking of a contraction's plans depends on
    symbolic sizes, `chooser` picks (`passes.symbolic_plans.AtPoint`: as a compile at those sizes
    would); without one, the book's default. A chooser with a `shared` dict (the whole-program
    search's, `passes.objective.Forced`) lends its plan caches to every lowering of the same
    program and context: they depend only on statement shapes, not on the plans chosen.
    `explain` and `idle_axes` are the pass's switches (`passes.pipeline.InsertCollectives`);
    `prefixes`, the whole-program search's lowerings of the same program and context, which
    this one resumes from where its choices are theirs (`passes.lower.prefixes`)."""
    st = LoweringState(ctx, chooser, chip, topology, bindings, explain, idle_axes)
    shared = getattr(chooser, "shared", None)
    if shared is not None:
        st.caches = shared.setdefault("caches", PlanCaches())
    rec = recording(chooser, prefixes)
    if rec is None:
        return walk(st, program)
    st.chooser = rec
    return walk(st, program, rec)


def as_declared(program: Program, bindings: Mapping[str, float]) -> dict[str, int]:
    """The sizes the planner takes as declared beyond the program's own: where the bindings
    give every size the program leaves symbolic a number, each of them (a compile with `--set`
    binding them all plans as the program declaring them does: `--set` replaces the declared
    size, docs/language.md 9); else none, and a bound size plans as a symbolic one, so that a
    report's `at` binding only some of them chooses as the compile does. (The walk asks only
    outside `--objective statement`, whose regions stay the book's strategies and whose
    compile at a point keeps to them, docs/cost-model.md.)"""
    free = [
        s.name
        for stmt in program.statements
        if isinstance(stmt, (MeshDecl, DimDecl))
        for s in (stmt.axes if isinstance(stmt, MeshDecl) else stmt.dims)
        if s.size is None
    ]
    if not free or any(n not in bindings for n in free):
        return {}
    return {n: int(bindings[n]) for n in free}


def walk(st: LoweringState, program: Program, rec: Recording | None = None) -> CompiledProgram:
    """Lower each statement in turn; stop at the first that fails. With `rec`, the statements
    an earlier lowering with the same choices lowered are not lowered again
    (`passes.lower.prefixes`)."""
    st.name = st.ctx.source.name
    for i, stmt in enumerate(program.statements):
        if isinstance(stmt, Assign):
            st.last_read.update(dict.fromkeys(names_read(stmt.expr), i))
            if stmt.layout is not None:  # `plain_reads` skips contractions and reductions
                for name in plain_reads(stmt.expr):
                    st.read_in.setdefault(name, []).append((i, stmt.layout.stripped()))
                summed = _summed_in(stmt.expr, stmt.layout.stripped())
                if summed is not None:
                    st.summed_in.setdefault(summed[0], []).append((i, summed[1]))
    given = {} if st.ctx.options.objective == "statement" else as_declared(program, st.bindings)
    first = 0
    if rec is not None:
        resumed = rec.resume(st)
        if not isinstance(resumed, int):
            return resumed
        first = resumed
    for i, stmt in enumerate(program.statements):
        if i < first:
            continue
        if rec is not None:
            rec.begin(st, i)
        st.statement = i
        start = len(st.ops)
        match stmt:
            case MeshDecl(axes=axes):
                st.mesh = {a.name: given.get(a.name, a.size) for a in axes}
                st.size_cache.clear()
            case DimDecl(dims=dims):
                for d in dims:
                    st.dims[d.name] = given.get(d.name, d.size)
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
                prev = program.statements[i - 1] if i else None
                if stmt.partial and not (isinstance(prev, Assign) and prev.partial):
                    # The first term of a sum: the partial sums its terms share
                    run: list[Assign] = []
                    for s in program.statements[i:]:
                        if not (isinstance(s, Assign) and s.partial):
                            break
                        run.append(s)
                    st.term_reduced = contraction.natural_partials(st, run)
                assign(st, stmt)
        if st.failed:
            break
        if isinstance(stmt, (ArrayDecl, Assign)) and stmt.times:
            # every op of a statement in `repeat` runs with it
            st.ops[start:] = [dataclasses.replace(op, times=stmt.times) for op in st.ops[start:]]
            made = {op.out.array for op in st.ops[start:]}  # inline `In[I_X]` too
            made.add(stmt.name if isinstance(stmt, ArrayDecl) else stmt.target)
            st.array_times.update(dict.fromkeys(made, stmt.times))
        if rec is not None:
            rec.end()
    out = CompiledProgram(
        st.name,
        tuple(st.mesh.items()),
        tuple(st.dims.items()),
        st.hardware,
        tuple(st.ops),
        tuple(st.arrays.values()),
        tuple(st.decisions),
        st.topology,
        tuple(sorted(st.params)),
        program.repeats,
        tuple(st.array_times.items()),
        sized_choices=st.sized_choices,
        aliases=tuple(st.aliases.items()),
    )
    if rec is not None:
        rec.finish(out)
    return out


def _summed_in(e: Expr, request: Layout) -> tuple[str, Layout] | None:
    """The array a statement sums as it is into `request`, and the layout that sum runs in
    without moving its result (`LoweringState.summed_in`); None for any other statement."""
    if not (isinstance(e, Reduce) and e.kind == "Sum" and isinstance(e.arg, Ref)):
        return None
    if e.arg.layout is not None or e.arg.renames or request.unreduced:
        return None
    return e.arg.name, Layout((*request.dims, *(DimSharding(d, ()) for d in e.dims)))


def assign(st: LoweringState, stmt: Assign) -> None:
    if not stmt.partial:
        st.term_gathers.clear()  # the terms' sum, or no sum: no gather is left pending
        st.term_reduced.clear()
    target = stmt.target
    tid = target if target not in st.values else st.fresh(target)
    start = len(st.ops)
    req = stmt.layout.stripped() if stmt.layout is not None else None
    shared_reads(st, stmt.expr, req, stmt.span)
    if isinstance(stmt.expr, Contract):
        v = contract(st, stmt.expr, req, target, stmt)
    elif isinstance(stmt.expr, Reduce) and stmt.expr.kind == "Sum" and req is not None:
        v = reduce(st, stmt.expr, target, req)
        if v is not None:
            v = reshard(
                st, v, req, stmt.span, f"the left-hand side requests {st.fmt(req, target)}", target
            )
    else:
        # An elementwise statement weighs its request when it aligns the operands (moving
        # a small operand can beat moving the result).
        v = elementwise(st, stmt.expr, target, req)
        if v is not None:
            if req is not None and isinstance(stmt.expr, Ref) and stmt.expr.layout is None:
                why = f"the left-hand side requests {st.fmt(req, target)}"
                v = shared_reshard(st, v, req, stmt.span, why, target)
            elif req is not None:
                v = reshard(
                    st,
                    v,
                    req,
                    stmt.span,
                    f"the left-hand side requests {st.fmt(req, target)}",
                    target,
                )
            elif v.layout.unreduced and not stmt.partial:
                axes = st.ordered(v.layout.unreduced)
                want = v.layout.with_unreduced(frozenset())
                v = reshard(
                    st,
                    v,
                    want,
                    stmt.span,
                    f"{target} is written without {{U_{format_axes(axes)}}}: "
                    "its partial sums are reduced",
                )
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
                    moved = reshard(st, v, want, e.span, f"{name} is used as {st.fmt(want, name)}")
                    if moved is None:
                        return None
                    v = moved
                return Value(v.id, v.array, v.dtype, v.layout.renamed(dict(e.renames)))
            if layout is not None:
                want = layout.stripped()
                return reshard(st, v, want, e.span, f"{name} is used as {st.fmt(want, name)}")
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


def contract(
    st: LoweringState,
    e: Contract,
    requested: Layout | None,
    target: str,
    stmt: Assign | None,
    keep_partial: bool = False,
    picks: tuple[JointPick | None, ...] | None = None,
) -> Value | None:
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
    copies = joint is None and not isinstance(e.lhs, Contract)
    if copies:
        lv, rv = contraction.cached_operands(st, e, lv, rv, requested, keep_partial, stmt)
    return contraction.contract(st, e, lv, rv, requested, target, stmt, keep_partial, joint, copies)


def elementwise(
    st: LoweringState, e: Expr, target: str, request: Layout | None = None
) -> Value | None:
    """A statement's right-hand side other than a contraction, its request weighed where
    operands are aligned: also through the unary functions around a `Binary` (`neg(A + b)`
    keeps the layout `A + b` takes, so moving the small `b` to the request can beat moving
    the result, as XLA's partitioner does)."""
    if isinstance(e, Call):
        on_copy = _calls_on_copy(st, e, target, request)
        if on_copy is None:
            on_copy = _calls_shared(st, e, request)
        if on_copy is not None:
            return on_copy
    match e:
        case Binary():
            return binary(st, e, target, request)
        case Call(fn=fn, args=(Binary() | Call() as inner,)):
            return unary(st, fn, elementwise(st, inner, target, request), e.span)
    return expr(st, e, target)


def _calls_shared(st: LoweringState, e: Call, request: Layout | None) -> Value | None:
    """Unary calls on an array a later statement reads again, into `request`: the calls on
    the array and their result resharded (as before), or, where the whole-program search
    picks it, the array brought to `request` through a layout a later statement can slice
    (`shared_options`, as a reshard statement is) and the calls run there: `D0[I_X, K_Y] =
    gelu(E[I_YX, K]); S1[K_XY] = Sum_{I}(E)` on a v5p 4x2 gathers E over X once for both
    (5.5 us) rather than permute gelu(E) and scatter the sum (8.1 us). None: as before."""
    calls: list[Call] = []
    inner: Expr = e
    while isinstance(inner, Call) and len(inner.args) == 1:
        calls.append(inner)
        inner = inner.args[0]
    if request is None or not isinstance(inner, Ref) or inner.layout is not None:
        return None
    here = peek_array(st, inner)
    if here is None or here.dims != request.dim_names:
        return None
    ordinal = SHARED_ORDINAL + st.reshard_statements
    st.reshard_statements += 1
    found = shared_options(st, here, request)
    if found is None:
        return None
    src, own, through = found
    # First the calls on the array with their result resharded (as before), priced as the
    # array's own reshard; then the array resharded (its copies left for later reads)
    tail = sorted([own, *through], key=lambda o: o[0])
    # every option is tried (at most four), as at a reshard statement (`shared_reshard`)
    r = rank_all(st, ordinal, 1 + len(tail))
    if r == 0:
        return None
    why = f"{calls[-1].fn} runs on {st.fmt(request, here.array)}, gathered once for later reads"
    v: Value | None = apply_steps(st, src, tail[r - 1][1], e.span, lambda s: why)
    for call in reversed(calls):
        v = unary(st, call.fn, v, call.span)
    return v


def _calls_on_copy(st: LoweringState, e: Call, target: str, request: Layout | None) -> Value | None:
    """Unary calls on an array (`gelu(E)`, `neg(exp(E))`) run on it brought to `request`
    from a copy an earlier reshard made (`cached_source`), where that costs less than from
    the array itself: the result then needs no reshard (`S1[K] = Sum_{I}(E[I_XY, K]);
    D2[I, K] = gelu(E)` gathers E once, not E and gelu(E)). Only where every size is
    declared (`as_declared`). None otherwise."""
    calls: list[Call] = []
    inner: Expr = e
    while isinstance(inner, Call) and len(inner.args) == 1:
        calls.append(inner)
        inner = inner.args[0]
    here = peek_array(st, inner)
    if here is None or request is None or here.dims != request.dim_names:
        return None
    if not copies_of(st, here) or not st.all_declared({*here.dims, *st.mesh}):
        return None
    sizes, pricing = st.known_sizes(), st.pricing(here.dtype, here.dims)
    if cached_source(st, here, request, sizes, pricing) is here:
        return None
    v = expr(st, inner, target)
    if v is not None:
        why = f"{calls[-1].fn} runs on a copy an earlier reshard made"
        v = reshard(st, v, request, e.span, why)
    for call in reversed(calls):
        v = unary(st, call.fn, v, call.span)
    return v


def binary(
    st: LoweringState,
    e: Binary,
    target: str,
    request: Layout | None = None,
    then: tuple[Value, Layout | None] | None = None,
) -> Value | None:
    """`e`, with `then` (the other operand of the op that consumes it, and that op's
    request) weighed where its operands are aligned (`combine`)."""
    lv = operand(st, e.lhs, target, e.rhs, request)
    rv = operand(st, e.rhs, target, e.lhs, request)
    if lv is None or rv is None:
        return None
    return combine(st, e.op, lv, rv, e.span, request, then)


def operand(
    st: LoweringState, e: Expr, target: str, other: Expr, request: Layout | None
) -> Value | None:
    """An operand of a `Binary` whose other operand is `other`: where the operand is itself
    an elementwise op (under unary calls: `silu(A * B) + bias`) and `other` an array read
    as it is, the inner op is aligned knowing what the outer one will do with its result
    and `other`, as a chain's products are planned together (`passes.lower.chain`)."""
    inner, calls = e, []
    while isinstance(inner, Call) and len(inner.args) == 1:
        calls.append(inner)
        inner = inner.args[0]
    ahead = peek_array(st, other)
    if calls and request is not None and isinstance(inner, Ref):
        # `exp(E) * E` into a finer request: where both operands reach the request by free
        # slices, the calls run on the slice, not on the whole array
        here = peek_array(st, inner)
        if here is not None and ahead is not None and _slices_to(here, request, ahead):
            read = expr(st, inner, target)
            if read is None:
                return None
            v = reshard(st, read, request, e.span, "sliced before the call")
            for call in reversed(calls):
                v = unary(st, call.fn, v, call.span)
            return v
    if calls and isinstance(inner, Ref) and inner.layout is None and ahead is not None:
        # The calls on a copy of the array an earlier reshard made, where aligning from it
        # costs less (`cheapest_copy`)
        here = peek_array(st, inner)
        if here is not None and here.dims == tuple(inner.source_dims(here.dims)):
            ahead = _other_copy(st, here, ahead, request)
            v = cheapest_copy(st, here, ahead, request)
            if v is not here:
                # sliced first where the alignment takes a slice of the copy
                best = best_alignment(st, v, ahead, request)
                want = None if best is None else best.layout.reordered(v.dims, frozenset())
                if want is not None and coarsest_common(v.layout, want) == v.layout:
                    v = reshard(st, v, want, e.span, "sliced before the call") or v
                for call in reversed(calls):
                    v = unary(st, call.fn, v, call.span)
                return v
    if not isinstance(inner, Binary) or ahead is None or not wide_search(st, ahead.dims):
        return expr(st, e, target)
    v = binary(st, inner, target, None, (ahead, request))
    for call in reversed(calls):
        v = unary(st, call.fn, v, call.span)
    return v


def _other_copy(st: LoweringState, v: Value, other: Value, request: Layout | None) -> Value:
    """`other`, or the copy of it an earlier reshard made (`copies_of`) that `v` or one of its
    copies aligns with most cheaply into `request`: `D1[I, K_Y] = exp(E) * C` where E and C
    were both gathered whole for later reads slices both (no move), rather than slice E to
    C's own blocks and gather the product. Only where every size is declared, as
    `cheapest_copy`, which alone reads the copy picked here (`walk.as_declared`)."""
    copies = [u for u in copies_of(st, other, 4) if not u.layout.unreduced]
    if not copies or v.layout.unreduced or not st.all_declared({*v.dims, *other.dims, *st.mesh}):
        return other
    best, key = other, alignment_key(st, cheapest_copy(st, v, other, request), other, request)
    for u in copies:
        k = alignment_key(st, cheapest_copy(st, v, u, request), u, request)
        if k is not None and (key is None or k < key):
            best, key = u, k
    return best


def _slices_to(v: Value, request: Layout, other: Value) -> bool:
    """Whether `v` and `other`, with `request`'s dims, both reach it by free slices alone."""
    return all(
        u.dims == request.dim_names
        and not u.layout.unreduced
        and not request.unreduced
        and coarsest_common(u.layout, request) == u.layout
        for u in (v, other)
    )


def peek_array(st: LoweringState, e: Expr) -> Value | None:
    """An array read in its own layout or an annotated one, without lowering it; None for
    any other expression (or a renamed read)."""
    if not isinstance(e, Ref) or e.renames or e.name not in st.values:
        return None
    v = st.values[e.name]
    if e.layout is None:
        return v
    return Value(v.id, v.array, v.dtype, e.layout.stripped())


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


def reduce(
    st: LoweringState, e: Reduce, target: str, request: Layout | None = None
) -> Value | None:
    """`Sum_{D}(A)` keeps the partial sums a sharded D leaves (the statement reduces them
    unless it asks for `{U_X}`), its operand first moved to the layout that costs least
    with the move of the sum to the statement's `request` (`summed_layout`); `Max_{D}(A)`
    combines partial maxima with an AllReduce of the maximum; `softmax_{S}(A)` is
    exp(A - Max_S(A)) / Sum_S(exp(A - Max_S(A))), with the two small AllReduces a sharded S
    needs (Megatron-LM's vocabulary-parallel softmax)."""
    a = expr(st, e.arg, target)
    if a is None:
        return None
    if e.kind == "Broadcast":  # the gradient of a sum: copied along the dims it lacks
        dims = tuple(DimSharding(d, a.layout.axes_of(d) if d in a.dims else ()) for d in e.dims)
        name = derived_name(f"broadcast({a.array})")
        out = Value(st.fresh(name), name, a.dtype, Layout(dims, a.layout.unreduced))
        new = tuple(d for d in e.dims if d not in a.dims)
        return st.emit(Reduction("broadcast", out, a, new, e.span))
    if e.kind == "Sum":
        shared = _sum_shared(st, e, a, request)
        if shared is not None:
            return reduction(st, "sum", shared, e.dims, e.span)
        if request is not None:
            a = cheapest_sum_source(st, a, e.dims, request, copies_of(st, a, 4))
            want = summed_layout(st, a, e.dims, request)
            if want is not None:
                a = reshard(
                    st,
                    a,
                    want,
                    e.span,
                    f"Sum_{{{','.join(e.dims)}}} into "
                    f"{st.fmt(request, target)} costs least from here",
                )
                if a is None:
                    return None
        return reduction(st, "sum", a, e.dims, e.span)
    if a.layout.unreduced:
        a = reshard(
            st,
            a,
            a.layout.with_unreduced(frozenset()),
            e.span,
            f"{e.kind} is not linear: partial sums are reduced first",
        )
        if a is None:
            return None
    peak = maximum(st, a, e.dims, e.span)
    if e.kind == "Max":
        return peak
    shifted = combine(st, "-", a, peak, e.span)
    if shifted is None:
        return None
    name = derived_name(f"exp({shifted.array})")
    ex = st.emit(
        Elementwise("exp", Value(st.fresh(name), name, a.dtype, shifted.layout), (shifted,), e.span)
    )
    total = reduction(st, "sum", ex, e.dims, e.span)
    if total.layout.unreduced:
        moved = reshard(
            st,
            total,
            total.layout.with_unreduced(frozenset()),
            e.span,
            f"softmax_{{{','.join(e.dims)}}}: the denominator's partial sums "
            "over the sharded dimension are summed",
        )
        if moved is None:
            return None
        total = moved
    return combine(st, "/", ex, total, e.span)


def _sum_shared(st: LoweringState, e: Reduce, a: Value, request: Layout | None) -> Value | None:
    """A sum of an array a later statement reads again, into `request`: the sum's own plan
    (`summed_layout`), or, where the whole-program search picks it, the array brought to
    the request's layout with the summed dims whole through a layout a later statement can
    slice (`shared_options`), then summed locally: `S0[K_XY] = Sum_{I}(E[I_Y, K]); R1[I,
    K_XY] = E` on a v5e 2x4 gathers E once (3.0 us) rather than scatter the sum and
    AllToAll E (6.0 us); or summed where it communicates least (`leanest_sums`, first in the
    search's descent, whose width the first lowering sets: the options that sum on the way
    to `whole` vary in number with the copies there). None: the sum's own plan."""
    if request is None or not isinstance(e.arg, Ref) or e.arg.layout is not None:
        return None
    ordinal = SHARED_ORDINAL + st.reshard_statements
    st.reshard_statements += 1
    if request.unreduced or not set(request.dim_names) <= set(a.dims):
        return None
    whole = Layout(tuple(DimSharding(d, () if d in e.dims else request.axes_of(d)) for d in a.dims))
    found = shared_options(st, a, whole)
    if found is None:
        return None
    src, own, through = found
    before = _summed_cost(st, a, e.dims, request)
    if before is None:
        return None
    # First the sum's own plan; then the array resharded (its copies left for later reads);
    # then the sum run where it stands or on a copy on the way, its result moved after
    tail = sorted([own, *through], key=lambda o: o[0])
    there = _sum_there(st, e.dims, a, src, whole, request)
    leans = leanest_sums(st, a, e.dims, request)
    count = 1 + len(tail) + len(leans)
    r = rank_all(st, ordinal, count + len(there), 1 + len(tail))
    if r == 0:
        return None
    if r >= count:
        mid, steps = there[r - count]
        if not steps:
            return a  # summed where it stands, its sum moved after
        why = f"{a.array} is read again later: a copy in {st.fmt(mid, a.array)}"
        moved = apply_steps(st, src, steps, e.span, lambda s: why)
        want = summed_layout(st, moved, e.dims, request)
        if want is None:
            return moved
        return reshard(st, moved, want, e.span, f"Sum_{{{','.join(e.dims)}}} costs least from here")
    if r > len(tail):
        at, lay = leans[r - 1 - len(tail)]
        why = f"Sum_{{{','.join(e.dims)}}} costs least by T_lower's measures from here"
        return reshard(st, at, lay, e.span, why)
    why = f"Sum_{{{','.join(e.dims)}}} runs on {st.fmt(whole, a.array)}, gathered once"
    return apply_steps(st, src, tail[r - 1][1], e.span, lambda s: why)


def _sum_there(
    st: LoweringState,
    dims: tuple[str, ...],
    a: Value,
    src: Value,
    whole: Layout,
    request: Layout,
) -> list[tuple[Layout, list[Step]]]:
    """`_sum_shared`'s options that sum before moving: on `a` as it stands, where the sum's
    own plan moves `a` first (the plan's key adds HBM time the objective may hide behind
    communication: `S0[K_XY] = Sum_{I}(E[I, K_Y])` on a 4x4 v5e sums E's blocks and permutes
    the sum, fewer hops than from `[I, K_YX]`), and on the copy on the way to `whole` (or to
    a later read) that the sum (its own plan from there) and the later reads cost least
    from, counted together (a partial gather of E, summed there, its sum permuted: not E
    permuted, then summed)."""
    sizes, pricing = st.known_sizes(), st.pricing(a.dtype, a.dims)
    out: list[tuple[Layout, list[Step]]] = []
    if summed_layout(st, a, dims, request) is not None:
        out.append((a.layout, []))
    table = {
        a.array: sorted(
            [*st.read_in.get(a.array, ()), *st.summed_in.get(a.array, ())], key=lambda r: r[0]
        )
    }
    reads = later_reads(st, a, read_in=table)
    mids = [
        *partial_gathers(src.layout, coarsest_common(src.layout, whole)),
        *(coarsest_common(whole, r) for r in reads),
    ]
    priced: list[tuple[float, float, int, Layout, list[Step]]] = []
    for k, mid in enumerate(dict.fromkeys(mids)):
        steps = plan_reshard(src.layout, mid, sizes, pricing) if mid != src.layout else None
        rest = _summed_cost(st, dataclasses.replace(a, layout=mid), dims, request)
        if not steps or rest is None or any(s.dst == whole for s in steps):
            continue
        t = cost_steps(st, steps, a.dtype) + rest
        priced.append((t + reads_cost(st, a, (src.layout, mid), reads), t, k, mid, steps))
    # the cheapest counted with the later reads (each priced as a move of the array, which
    # a later sum's own plan may undercut), and the cheapest for this sum alone
    for key in (lambda o: (o[0], o[2]), lambda o: (o[1], o[2])):
        if priced:
            _, _, _, mid, steps = min(priced, key=key)
            if (mid, steps) not in out:
                out.append((mid, steps))
    return out


def summed_layout(
    st: LoweringState, a: Value, dims: tuple[str, ...], request: Layout
) -> Layout | None:
    """The layout to sum `a` over `dims` in when the sum goes on to `request`: of `a`'s own
    and every layout over the axes in play and those idle on both (`wide_layouts`; the axes
    in play alone where the idle ones make too many), the one whose reshard, local
    sum (HBM time) and reshard of the result to `request` cost least; None to keep `a`'s.
    A sum over a sharded dim leaves partial sums to reduce and the kept dims to gather
    (`Sum_{I}(E[I_X, K_Y])` into `[K]` on a 4x2 v5p: AllReduce_X, AllGather_Y, 7.0 us);
    gathering the operand first may cost less (4.1 us). Only where `wide_search` holds and
    `a` has no partial sums of its own; once per statement shape."""
    return _summed_at(st, a, dims, request)[0]


def _summed_cost(
    st: LoweringState, a: Value, dims: tuple[str, ...], request: Layout
) -> float | None:
    """What summing `a` in `summed_layout`'s layout and moving the sum to `request` costs."""
    return _summed_at(st, a, dims, request)[1]


def _summed_at(st: LoweringState, a: Value, dims: tuple[str, ...], request: Layout) -> Summed:
    if a.layout.unreduced or not wide_search(st, a.dims):
        return None, None, ()
    key = (a.layout, a.dtype, dims, request)
    if key not in st.caches.summed:
        st.caches.summed[key] = _summed(st, a, dims, request)
    return st.caches.summed[key]


def cheapest_sum_source(
    st: LoweringState,
    a: Value,
    dims: tuple[str, ...],
    request: Layout,
    copies: list[Value],
) -> Value:
    """Where the sum's own plan (`summed_layout`) costs least: `a`, or one of `copies`
    (`copies_of`) an earlier reshard made, the first of the least (`R0[I, K_X] = E` gathered
    E: `Sum_{I}` into `[K_YX]` sums that copy and slices)."""
    best, cost = a, _summed_cost(st, a, dims, request)
    for u in copies:
        c = _summed_cost(st, u, dims, request)
        if c is not None and (cost is None or c < cost * (1 - 1e-9)):
            best, cost = u, c
    return best


def leanest_sums(
    st: LoweringState, a: Value, dims: tuple[str, ...], request: Layout
) -> list[tuple[Value, Layout]]:
    """Where the sum of `a` over `dims` into `request` costs least by the measures `T_lower`
    weighs, beside the sum's own plan (which ranks by communication plus HBM time): of `a`
    and the copies earlier reshards made of it (`copies_of`, as `reduce` looks at), the one
    and the layout (among `_summed`'s) whose reshard and the move of the sum to `request`
    take least time, and the one whose communication or HBM time, whichever is longer, is
    least (ties to the lesser time of both); each where it is not the own plan. `T_lower`
    takes the largest of the program's summed times: a sum in a program whose communication
    outweighs its HBM time hides the HBM time, and one whose communication and HBM time
    balance costs the larger of them. On a copy gathered for a later read, slicing only some
    of the axes idle there onto the kept dims leaves the sum whole over the others, so its
    move to `request` takes each block from a device on the same fast link (`E: f32[I_X,
    K_Y]; S0[K_ZXY] = Sum_{I}(E); R1[I, K_Y] = E` on a 2x2x4 H100 sums R1's `[I, K_Y]`
    sliced to `[I, K_YZ]`, whole over X, and permutes the sum over NVLink: 144.81 us against
    145.83 for the sum sliced to `[I, K_YXZ]` and permuted across InfiniBand)."""
    copies = copies_of(st, a, 4)
    own = cheapest_sum_source(st, a, dims, request, copies)
    out: list[tuple[Value, Layout]] = [(own, summed_layout(st, own, dims, request) or own.layout)]
    for k in range(2):
        best: tuple[Value, Layout] | None = None
        best_t: float | None = None
        for u in [a, *copies]:
            leans = _summed_at(st, u, dims, request)[2]
            if len(leans) > k and (best_t is None or leans[k][1] < best_t * (1 - 1e-9)):
                best, best_t = (u, leans[k][0]), leans[k][1]
        if best is not None and all(best[0].id != v.id or best[1] != lay for v, lay in out):
            out.append(best)
    return out[1:]


Summed = tuple[Layout | None, float | None, tuple[tuple[Layout, float], ...]]
"""`_summed`'s answer: the layout the sum's own plan runs it in (None: its operand's), that
plan's time, and the layouts `leanest_sums` weighs, each with its measure."""


def _summed(st: LoweringState, a: Value, dims: tuple[str, ...], request: Layout) -> Summed:
    w_hbm = contraction.hbm_rate(st)
    axes = [
        x
        for x in st.mesh
        if x in {*a.layout.sharding_axes, *request.sharding_axes} and x not in request.unreduced
    ]
    # and the axes idle on both, sliced onto the kept dims where that costs less (less HBM
    # traffic for a sum of a copy whole over them, `S0[K_Y] = Sum_{I}(E[I, K])` on 2x2x4
    # H100s sums `[I, K_XYZ]` and gathers the sum), while the layouts stay few
    idle = [x for x in st.mesh if x not in axes and x not in request.unreduced and st.mesh[x] != 1]
    wide = wide_layouts(a.dims, [x for x in st.mesh if x in axes or x in idle], st.divisible)
    if not idle or not wide:
        wide = wide_layouts(a.dims, axes, st.divisible)
    best, best_cost = None, None
    # the least communication, and the least of communication or HBM time, whichever is
    # longer (`T_lower`'s max in one statement), each tie to the least cost (`leanest_sums`)
    lean: list[tuple[float, float, Layout] | None] = [None, None]
    for lay in dict.fromkeys([a.layout, *wide]):
        there = plan_reshard(a.layout, lay, st.known_sizes(), st.pricing(a.dtype, a.dims))
        out = Layout(
            tuple(d for d in lay.dims if d.dim not in dims),
            frozenset(x for d in lay.dims if d.dim in dims for x in d.axes),
        )
        on = plan_reshard(out, request, st.known_sizes(), st.pricing(a.dtype, out.dim_names))
        if there is None or on is None:
            continue
        comm = cost_steps(st, there, a.dtype) + cost_steps(st, on, a.dtype)
        hbm = 0.0
        if w_hbm:
            hbm = (
                float(
                    local_bytes(lay, a.dtype, st.numeric_size)
                    + local_bytes(out, a.dtype, st.numeric_size)
                )
                / w_hbm
            )
        cost = comm + hbm
        if best_cost is None or cost < best_cost * (1 - 1e-9):
            best, best_cost = lay, cost
        for k, t in enumerate((comm, max(comm, hbm))):
            was = lean[k]
            if (
                was is None
                or t < was[0] * (1 - 1e-9)
                or (t <= was[0] * (1 + 1e-9) and cost < was[1] * (1 - 1e-9))
            ):
                lean[k] = (t, cost, lay)
    leans = tuple((o[2], o[0]) for o in lean if o is not None)
    return (None if best is None or best == a.layout else best), best_cost, leans


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
    return st.emit(
        Collective(
            "AllReduce",
            out,
            local,
            axes,
            None,
            span,
            f"the maximum over {', '.join(dims)}, sharded over {format_axes(axes)}: each device "
            "holds the maximum of its block; they are combined",
            combine="max",
        )
    )
