"""The lowering's state (sizes, values and ops emitted so far) and the resharding every part of
it uses: a value is brought to a layout by reshard's plan, each step recorded with its reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shardc.lang.input_limits import MAX_DERIVED_NAME
from shardc.lang.layout import Layout, format_axes
from shardc.lang.source import Span
from shardc.lang.syntax import Assign, Contract, Expr
from shardc.passes.context import Context
from shardc.passes.cost_model import Links
from shardc.passes.ir import Collective, Decision, LocalSlice, Op, Value
from shardc.passes.layout_cost import Pricing
from shardc.passes.lower.explain import describe_step
from shardc.passes.reshard import Step, plan_reshard
from shardc.passes.sizes import size_of
from shardc.passes.symbols import HardwareSymbols, planning_figures, size_symbol

if TYPE_CHECKING:
    import sympy as sp

    from shardc.passes.regions import Chooser

def derived_name(text: str) -> str:
    """The name an intermediate value is shown by (`exp(A-max_S(A))`), elided in the middle past
    MAX_DERIVED_NAME characters. A name repeats its operands' names, and softmax repeats its
    argument's four times, so without the cap the names of nested softmaxes grow as 4^depth
    (12 deep: gigabytes).

    >>> derived_name("gelu(A)")
    'gelu(A)'
    >>> len(derived_name("gelu(" * 100 + "A" + ")" * 100)) == MAX_DERIVED_NAME
    True
    """
    if len(text) <= MAX_DERIVED_NAME:
        return text
    tail = MAX_DERIVED_NAME // 4
    return f"{text[:MAX_DERIVED_NAME - tail - 1]}…{text[-tail:]}"


TYPICAL_DIM = 4096
TYPICAL_AXIS = 4
"""Where a size is symbolic, plans are ranked as if dims were 4096 and mesh axes 4; the report
then lists the alternatives with the condition under which each would win."""


@dataclass
class LoweringState:
    """What the statement walk has seen and emitted; the parts of the lowering share it."""

    ctx: Context
    name: str = ""
    mesh: dict[str, int | None] = field(default_factory=dict)
    dims: dict[str, int | None] = field(default_factory=dict)
    hardware: str | None = None
    values: dict[str, Value] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    arrays: dict[str, Value] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    counter: dict[str, int] = field(default_factory=dict)
    failed: bool = False
    # Per-compilation memo of decision formulas: programs repeat statement shapes, and building
    # and printing SymPy costs dominated planning before (docs/benchmarks.md).
    memo: dict[tuple, tuple[sp.Expr, sp.Basic | None]] = field(default_factory=dict)
    chain_picks: dict[int, Any] = field(default_factory=dict)
    """By the id of each inner contraction of a chain planned together: its `JointPick`, or
    None where it is planned alone (`Contractions.plan_chain`)."""
    searches: dict[tuple, Any] = field(default_factory=dict)
    """The plan search of each statement shape (`Contractions.contract`)."""
    resharded: dict[tuple, Value] = field(default_factory=dict)
    copies: dict[str, list[Value]] = field(default_factory=dict)
    """By value id: the copies `apply_steps` made of it in one step (`cached_source`)."""
    pricings: dict[tuple, Pricing] = field(default_factory=dict)
    """How the reshard planner prices each (dtype, dims) (`pricing`)."""
    figures: tuple | None = None
    params: set[str] = field(default_factory=set)
    array_times: dict[str, tuple] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    """`B = A` with nothing to do: B names A's blocks (alias -> the array it names)."""
    chooser: Chooser | None = None
    """Picks the plan where the ranking depends on symbolic sizes (None: the book's default)."""
    keep_candidates: bool = True
    """Key every plan of such a contraction over the symbolic sizes (`passes.regions`)."""
    choices: int = 0
    sized_choices: int = 0
    """Choice points met so far (contractions and elementwise alignments): a chooser's ordinal."""

    size_cache: dict[str, float | None] = field(default_factory=dict)
    """`known`'s answers; the walk empties it when a `mesh` or `dim` statement changes them."""

    # ---- sizes -------------------------------------------------------------------------------
    def known(self, name: str) -> float | None:
        """The size of a dim or mesh axis as a number (`--set` applied), None when symbolic."""
        try:
            return self.size_cache[name]
        except KeyError:
            pass
        v = size_of(name, self.dims if name in self.dims else self.mesh, self.ctx.bindings)
        out = self.size_cache[name] = None if v is None else float(v)
        return out

    def known_sizes(self) -> dict[str, float]:
        return {n: v for n in (*self.dims, *self.mesh) if (v := self.known(n)) is not None}

    def numeric_size(self, name: str) -> float:
        v = self.known(name)
        if v is not None:
            return v
        return float(TYPICAL_AXIS if name in self.mesh else TYPICAL_DIM)

    def size_expr(self, name: str) -> sp.Expr | int:
        """A size as planning formulas use it: its number when known (a Python int, which the
        cost model treats as known: a ring of 1 moves nothing), else its symbol."""
        v = self.known(name)
        return size_symbol(name) if v is None else int(v)

    def declared(self, dim: str) -> bool:
        """The program gives `dim` a number (a dim declared symbolic stays so under `--set`)."""
        return self.dims.get(dim) is not None

    def pricing(self, dtype: str, dims: Sequence[str]) -> Pricing:
        """How the reshard planner prices an array's steps: the chip's link figures, and each
        dim at its size where the program declares one, else at TYPICAL_DIM, even when a
        binding gives it a size: a reshard's plan must be the same in a report with a size
        left symbolic and in the compile that binds it (`Report.at`), as the plans of a
        contraction are (`passes.regions`)."""
        key = (dtype, tuple(dims))
        hit = self.pricings.get(key)
        if hit is None:  # one object per array shape: the planner's memo key compares by identity
            known = {d: v for d in dims if self.declared(d) and (v := self.known(d)) is not None}
            hit = self.pricings[key] = Pricing.of(dtype, known, float(TYPICAL_DIM), self.ctx.model,
                                                  self.ctx.topology, self.hw_numbers(dtype)[0])
        return hit

    def all_known(self, names) -> bool:
        return all(self.known(n) is not None for n in names)

    def all_declared(self, names) -> bool:
        """Every name is a dim or mesh axis the program gives a number (`--set` aside)."""
        return all((self.dims if n in self.dims else self.mesh).get(n) is not None
                   for n in names)

    def divisible(self, dim: str, axes: tuple[str, ...]) -> bool:
        size = self.known(dim)
        if size is None:
            return True
        shards = 1.0
        for a in axes:
            s = self.known(a)
            if s is None:
                return True
            shards *= s
        return size % shards == 0

    def hw_numbers(self, dtype: str) -> tuple[Links, float | None]:
        """Link figures and C for planning (passes.symbols.planning_figures), once per run."""
        if self.figures is None:
            self.figures = planning_figures(self.ctx.chip, self.ctx.bindings,
                                            frozenset(self.dims),
                                            self.ctx.options.matmul_precision)
        links, values = self.figures
        c = values.get(HardwareSymbols(frozenset(self.dims)).flops(dtype).name)
        return links, (None if c is None else float(c))

    # ---- values and ops ----------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        k = self.counter.get(base, 0) + 1
        self.counter[base] = k
        return f"{base}.{k}"

    def emit(self, op: Op) -> Value:
        self.ops.append(op)
        return op.out

    def name_last(self, named: Value) -> None:
        """The last op's result becomes `named` (a statement's result takes its target's name).

        Where that result is a reshard the cache keeps (an array brought to a layout), the
        cache is pointed at the new id, so that a later read of the array in that layout reads
        the value this op makes: `C = B + A` after `B[I, J_X] = A` reads B's blocks, still
        shown as `A[I, J_X]`. No op makes the old id any more."""
        last = self.ops[-1]
        self.ops[-1] = dataclasses.replace(last, out=named)
        if isinstance(last, (Collective, LocalSlice)):
            key = (last.src.id, last.out.layout)  # as `apply_steps` keys the step it emitted
            cached = self.resharded.get(key)
            if cached is not None and cached.id == last.out.id:
                renamed = self.resharded[key] = dataclasses.replace(cached, id=named.id)
                kids = self.copies.get(key[0], [])
                kids[:] = [renamed if u.id == cached.id else u for u in kids]
                if cached.id in self.copies:
                    self.copies[named.id] = self.copies.pop(cached.id)

    def error(self, code: str, message: str, span: Span, notes: tuple[str, ...] = ()) -> None:
        self.ctx.diagnostics.error(code, message, span, notes=notes)
        self.failed = True

    def fmt(self, layout: Layout, name: str) -> str:
        return layout.format(name, tuple(self.mesh))

    def ordered(self, axes) -> tuple[str, ...]:
        order = list(self.mesh)
        return tuple(sorted(axes, key=lambda a: order.index(a) if a in order else len(order)))

    # ---- the walk and the contraction search (walk.py, contract.py) ---------------------------
    def expr(self, e: Expr, target: str) -> Value | None:
        raise NotImplementedError

    def contract(self, e: Contract, requested: Layout | None, target: str,
                 stmt: Assign | None, keep_partial: bool = False) -> Value | None:
        raise NotImplementedError

    # ---- resharding --------------------------------------------------------------------------
    def reshard(self, v: Value, want: Layout, span: Span, why: str,
                name: str | None = None) -> Value | None:
        if v.layout == want:
            return v
        sizes, pricing = self.known_sizes(), self.pricing(v.dtype, v.dims)
        v = self.cached_source(v, want, sizes, pricing)
        if v.layout == want:
            return v
        steps = plan_reshard(v.layout, want, sizes, pricing)
        if steps is None:
            extra = want.unreduced - v.layout.unreduced
            shown = name or v.array
            self.error("C004", f"cannot make {self.fmt(want, shown)} from "
                       f"{self.fmt(v.layout, v.array)}: "
                       f"no collective creates partial sums over {format_axes(self.ordered(extra))}",
                       span, ("partial sums {U_X} come from contracting a dim sharded over X",))
            return None
        return self.apply_steps(v, steps, span, lambda s: why)

    def cached_source(self, v: Value, want: Layout, sizes: dict[str, float],
                      pricing) -> Value:
        """The copy of `v` to reshard from: `v`, or a layout of it an earlier reshard made
        (`resharded`), where every mesh axis's size is known, under the exact model, and
        resharding that copy costs strictly less (`R0[I, K_Y] = E; R1[I, K_X] = E` slices
        R1 from the whole E that R0's reshard gathered, rather than gather E again).
        Parameters are gathered again where needed (`apply_steps`)."""
        if (self.ctx.model != "exact" or v.array in self.params or v.id not in self.copies
                or any(a not in sizes for a in self.mesh)):
            return v
        copies: list[Value] = []
        frontier = [v.id]
        seen = {v.id}
        while frontier and len(copies) < 16:
            for u in self.copies.get(frontier.pop(), ()):
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

    def apply_steps(self, v: Value, steps: Sequence[Step], span: Span,
                    why: Callable[[Step], str], beat: str = "") -> Value:
        for s in steps:
            # An activation already brought to this layout is reused (the backward pass reads
            # the forward's gathered input, as the book's algorithms do); parameters are
            # gathered again where needed, so FSDP keeps only its shard between uses.
            key = (v.id, s.dst)
            if key in self.resharded and v.array not in self.params:
                v = self.resharded[key]
                continue
            out = Value(self.fresh(v.array), v.array, v.dtype, s.dst)
            if s.kind == "slice":
                v = self.emit(LocalSlice(out, v, span, f"{why(s)}: free local slice over "
                                         f"{format_axes(s.axes)}"))
            else:
                reason = f"{why(s)}: {describe_step(s, v.array, tuple(self.mesh))}"
                if beat:
                    reason += f"; {beat}"
                v = self.emit(Collective(s.kind, out, v, s.axes, s.dim, span,  # type: ignore[arg-type]
                                         reason))
            self.resharded[key] = v
            self.copies.setdefault(key[0], []).append(v)
        return v

