"""The `insert-collectives` pass: walk the statements, lowering each to local ops plus the
collectives it needs. Contractions, elementwise ops and explicit collectives each have a module;
layout requests go through `passes.reshard`. Every inserted collective records why.
"""

from __future__ import annotations

import dataclasses

from shardc.lang.layout import DimSharding, Layout, format_axes
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
from shardc.passes.ir import Collective, CompiledProgram, Elementwise, Input, Reduction, Value
from shardc.passes.lower.contract import Contractions
from shardc.passes.lower.elementwise import ElementwiseOps
from shardc.passes.lower.explicit import ExplicitCollectives
from shardc.passes.lower.state import derived_name
from shardc.passes.regions import Chooser


def insert_collectives(program: Program, ctx: Context, chooser: Chooser | None = None
                       ) -> CompiledProgram:
    """The `insert-collectives` pass: lower a validated program to per-device ops, inserting
    the collectives its layouts need. Where the ranking of a contraction's plans depends on
    symbolic sizes, `chooser` picks (`passes.regions.AtPoint`: as a compile at those sizes
    would); without one, the book's default. A chooser with a `shared` dict (the whole-program
    search's, `passes.objective.Forced`) lends its plan searches to every lowering of the same
    program and context: they depend only on statement shapes, not on the plans chosen."""
    lowering = _Lowering(ctx, chooser=chooser)
    shared = getattr(chooser, "shared", None)
    if shared is not None:
        lowering.searches = shared.setdefault("searches", {})
        lowering.memo = shared.setdefault("memo", {})
        lowering.pricings = shared.setdefault("pricings", {})
    return lowering.run(program)


class _Lowering(Contractions, ElementwiseOps, ExplicitCollectives):
    """The statement walk; each kind of expression is lowered by the part named after it."""

    def run(self, program: Program) -> CompiledProgram:
        self.name = self.ctx.source.name
        for stmt in program.statements:
            start = len(self.ops)
            match stmt:
                case MeshDecl(axes=axes):
                    self.mesh = {a.name: a.size for a in axes}
                    self.size_cache.clear()
                case DimDecl(dims=dims):
                    for d in dims:
                        self.dims[d.name] = d.size
                    self.size_cache.clear()
                case HardwareDecl(name=name):
                    self.hardware = name
                case ArrayDecl(name=name, dtype=dtype, layout=layout, param=param):
                    if param:
                        self.params.add(name)
                    v = Value(name, name, dtype, layout.stripped())
                    self.values[name] = self.emit(Input(v, stmt.span))
                    self.arrays[name] = v
                case Assign():
                    self.assign(stmt)
            if self.failed:
                break
            if isinstance(stmt, (ArrayDecl, Assign)) and stmt.times:
                # every op of a statement in `repeat` runs with it
                self.ops[start:] = [dataclasses.replace(op, times=stmt.times)
                                    for op in self.ops[start:]]
                made = {op.out.array for op in self.ops[start:]}  # inline `In[I_X]` too
                made.add(stmt.name if isinstance(stmt, ArrayDecl) else stmt.target)
                self.array_times.update(dict.fromkeys(made, stmt.times))
        return CompiledProgram(
            self.name, tuple(self.mesh.items()), tuple(self.dims.items()), self.hardware,
            tuple(self.ops), tuple(self.arrays.values()), tuple(self.decisions),
            self.ctx.topology, tuple(sorted(self.params)), program.repeats,
            tuple(self.array_times.items()), sized_choices=self.sized_choices,
            aliases=tuple(self.aliases.items()))

    def assign(self, stmt: Assign) -> None:
        target = stmt.target
        tid = target if target not in self.values else self.fresh(target)
        start = len(self.ops)
        req = stmt.layout.stripped() if stmt.layout is not None else None
        if isinstance(stmt.expr, Contract):
            v = self.contract(stmt.expr, req, target, stmt)
        else:
            # An elementwise statement weighs its request when it aligns the operands (moving
            # a small operand can beat moving the result).
            v = self.elementwise(stmt.expr, target, req)
            if v is not None:
                if req is not None:
                    v = self.reshard(v, req, stmt.span,
                                     f"the left-hand side requests {self.fmt(req, target)}",
                                     target)
                elif v.layout.unreduced and not stmt.partial:
                    axes = self.ordered(v.layout.unreduced)
                    want = v.layout.with_unreduced(frozenset())
                    v = self.reshard(v, want, stmt.span,
                                     f"{target} is written without {{U_{format_axes(axes)}}}: "
                                     "its partial sums are reduced")
        if v is None:
            self.failed = True
            return
        if len(self.ops) > start and self.ops[-1].out.id == v.id and v.id not in self.arrays:
            # Name the statement's last result after its target.
            named = Value(tid, target, v.dtype, v.layout)
            self.aliases.pop(target, None)
            self.name_last(named)
            self.values[target] = named
            self.arrays[target] = named
        else:
            # `B = A` with nothing to do: B is another name for A's blocks, stored once.
            owner = next((a.array for a in self.arrays.values() if a.id == v.id), None)
            if owner is not None and owner != target:
                self.aliases[target] = self.aliases.get(owner, owner)
            self.values[target] = v
            self.arrays[target] = Value(tid, target, v.dtype, v.layout)


    def expr(self, e: Expr, target: str) -> Value | None:
        match e:
            case Ref(name=name, layout=layout):
                if name not in self.values:
                    assert layout is not None  # validate guarantees
                    v = Value(name, name, "bf16", layout.stripped())
                    self.values[name] = self.emit(Input(v, e.span))
                    self.arrays[name] = v
                    return v
                v = self.values[name]
                if e.renames:
                    # `In[T->S, D]`: resharded in the array's own dims (so a copy already
                    # gathered is reused), then read with T called S; no data moves.
                    back = {new: old for old, new in e.renames}
                    if layout is not None:
                        want = layout.stripped().renamed(back)
                        moved = self.reshard(v, want, e.span,
                                             f"{name} is used as {self.fmt(want, name)}")
                        if moved is None:
                            return None
                        v = moved
                    return Value(v.id, v.array, v.dtype, v.layout.renamed(dict(e.renames)))
                if layout is not None:
                    want = layout.stripped()
                    return self.reshard(v, want, e.span,
                                        f"{name} is used as {self.fmt(want, name)}")
                return v
            case Contract():
                return self.contract(e, None, target, None)
            case Binary():
                return self.binary(e, target)
            case Call(fn=fn, args=args):
                return self.unary(fn, self.expr(args[0], target), e.span)
            case CollectiveCall():
                return self.explicit_collective(e, target)
            case Reduce():
                return self.reduce(e, target)
        raise AssertionError(e)

    def reduce(self, e: Reduce, target: str) -> Value | None:
        """`Sum_{D}(A)` keeps the partial sums a sharded D leaves (the statement reduces them
        unless it asks for `{U_X}`); `Max_{D}(A)` combines partial maxima with an AllReduce of
        the maximum; `softmax_{S}(A)` is exp(A - Max_S(A)) / Sum_S(exp(A - Max_S(A))), with the
        two small AllReduces a sharded S needs (Megatron-LM's vocabulary-parallel softmax)."""
        a = self.expr(e.arg, target)
        if a is None:
            return None
        if e.kind == "Broadcast":  # the gradient of a sum: copied along the dims it lacks
            dims = tuple(DimSharding(d, a.layout.axes_of(d) if d in a.dims else ())
                         for d in e.dims)
            name = derived_name(f"broadcast({a.array})")
            out = Value(self.fresh(name), name, a.dtype, Layout(dims, a.layout.unreduced))
            new = tuple(d for d in e.dims if d not in a.dims)
            return self.emit(Reduction("broadcast", out, a, new, e.span))
        if e.kind == "Sum":
            return self.reduction("sum", a, e.dims, e.span)
        if a.layout.unreduced:
            a = self.reshard(a, a.layout.with_unreduced(frozenset()), e.span,
                             f"{e.kind} is not linear: partial sums are reduced first")
            if a is None:
                return None
        peak = self.maximum(a, e.dims, e.span)
        if e.kind == "Max":
            return peak
        shifted = self.combine("-", a, peak, e.span)
        if shifted is None:
            return None
        name = derived_name(f"exp({shifted.array})")
        ex = self.emit(Elementwise("exp", Value(self.fresh(name), name, a.dtype, shifted.layout),
                                   (shifted,), e.span))
        total = self.reduction("sum", ex, e.dims, e.span)
        if total.layout.unreduced:
            moved = self.reshard(total, total.layout.with_unreduced(frozenset()), e.span,
                                 f"softmax_{{{','.join(e.dims)}}}: the denominator's partial sums "
                                 "over the sharded dimension are summed")
            if moved is None:
                return None
            total = moved
        return self.combine("/", ex, total, e.span)

    def reduction(self, kind: str, a: Value, dims: tuple[str, ...], span) -> Value:
        """A local reduction over `dims`; a sum over a sharded dim is a partial sum."""
        axes = frozenset(x for d in a.layout.dims if d.dim in dims for x in d.axes)
        kept = tuple(d for d in a.layout.dims if d.dim not in dims)
        unreduced = a.layout.unreduced | axes if kind == "sum" else a.layout.unreduced
        name = derived_name(f"{kind}_{''.join(dims)}({a.array})")
        out = Value(self.fresh(name), name, a.dtype, Layout(kept, unreduced))
        return self.emit(Reduction(kind, out, a, dims, span))

    def maximum(self, a: Value, dims: tuple[str, ...], span) -> Value:
        """The maximum over `dims`: local, then an AllReduce of the maximum over the axes that
        shard them."""
        local = self.reduction("max", a, dims, span)
        axes = tuple(x for d in a.layout.dims if d.dim in dims for x in d.axes)
        if not axes:
            return local
        out = Value(self.fresh(local.array), local.array, local.dtype, local.layout)
        return self.emit(Collective(
            "AllReduce", out, local, axes, None, span,
            f"the maximum over {', '.join(dims)}, sharded over {format_axes(axes)}: each device "
            "holds the maximum of its block; they are combined", combine="max"))
