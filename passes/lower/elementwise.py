"""Elementwise ops (`A + B`, `A * B`): reduce the partial sums the op cannot combine, then bring
both operands to one layout, whichever operand is cheaper to move.
"""

from __future__ import annotations

from shardc.lang.dtypes import promote
from shardc.lang.layout import DimSharding, Layout
from shardc.lang.syntax import Binary
from shardc.passes.ir import Elementwise, Value
from shardc.passes.layout_cost import steps_time
from shardc.passes.lower.state import LoweringState
from shardc.passes.regions import Candidate, plan_key
from shardc.passes.reshard import Step, plan_reshard
from shardc.passes.symbols import as_expr


class ElementwiseOps(LoweringState):
    """The lowering of `Binary` expressions."""

    def binary(self, e: Binary, target: str) -> Value | None:
        lv = self.expr(e.lhs, target)
        rv = self.expr(e.rhs, target)
        if lv is None or rv is None:
            return None
        return self.combine(e.op, lv, rv, e.span)

    def combine(self, op: str, lv: Value | None, rv: Value | None, span) -> Value | None:
        """`lv op rv` elementwise, broadcasting by dim name: the partial sums the op cannot
        combine reduced first, then both operands in one layout, whichever moves less."""
        if lv is None or rv is None:
            return None
        lu, ru = lv.layout.unreduced, rv.layout.unreduced
        keep: frozenset[str] = frozenset()
        if op in "+-" and lu == ru:
            keep = lu
        elif op == "*" and bool(lu) != bool(ru):
            u = lu or ru
            other = rv if lu else lv
            if not (u & other.layout.used_axes):
                keep = u
        why = f"`{op}` cannot combine these partial sums: they are reduced first"
        if lu - keep:
            lv = self.reshard(lv, lv.layout.with_unreduced(keep & lu), span, why)
        if ru - keep:
            rv = self.reshard(rv, rv.layout.with_unreduced(keep & ru), span, why)
        if lv is None or rv is None:
            return None
        big, small = (lv, rv) if set(rv.dims) <= set(lv.dims) else (rv, lv)
        # Option A: the smaller operand follows the bigger one.
        follow_big = Layout(tuple(DimSharding(d, big.layout.axes_of(d)) for d in small.dims),
                            small.layout.unreduced)
        # Option B: the bigger operand takes the smaller one's shardings on the shared dims.
        used = set(small.layout.sharding_axes)
        follow_small = Layout(tuple(
            DimSharding(d.dim, small.layout.axes_of(d.dim) if d.dim in small.dims
                        else tuple(x for x in d.axes if x not in used))
            for d in big.layout.dims), big.layout.unreduced)
        options: list[tuple[float, int, str, Layout, list[Step]]] = []
        for which, want in (("small", follow_big), ("big", follow_small)):
            v = small if which == "small" else big
            steps = plan_reshard(v.layout, want)
            if steps is not None:
                options.append((self.cost_steps(steps, v.dtype), len(options), which, want, steps))
        if not options:
            self.error("C004", f"cannot align the operands of `{op}`", span)
            return None
        ordinal = self.choices
        self.choices += 1
        pick = None
        names = {d.dim for v in (small, big) for d in v.layout.dims} | set(self.mesh)
        sized = len(options) > 1 and not self.all_known(names)
        self.sized_choices += sized
        if self.chooser is not None and sized:
            # Which operand moves depends on symbolic sizes: the chooser picks, over the same
            # key the numeric sort below uses (passes/regions.py).
            cands = []
            for _, i, which_, _, steps_ in options:
                v = small if which_ == "small" else big
                t = steps_time(steps_, v.dtype, self.size_expr, self.ctx.model,
                               self.ctx.topology, self.hw_numbers(v.dtype)[0])
                cands.append(Candidate(i, as_expr(t), as_expr(0), 0))
            pick = self.chooser.choose(ordinal, cands)
        options.sort(key=lambda t: (plan_key(t[0], 0.0, 0), t[1]))
        if pick is not None:
            options.sort(key=lambda t: t[1] != pick)
        _, _, which, want, steps = options[0]
        why = f"`{op}` needs both operands in one layout"
        if which == "small":
            small = self.apply_steps(small, steps, span, lambda s: why)
        else:
            big = self.apply_steps(big, steps, span, lambda s: why)
        out_layout = big.layout.with_unreduced(big.layout.unreduced | small.layout.unreduced)
        name = f"{lv.array}{op}{rv.array}"
        out = Value(self.fresh(name), name, promote(lv.dtype, rv.dtype), out_layout)
        args = (big, small) if set(rv.dims) <= set(lv.dims) else (small, big)
        return self.emit(Elementwise(op, out, args, span))

    def cost_steps(self, steps, dtype: str) -> float:
        links, _ = self.hw_numbers(dtype)
        return float(steps_time(steps, dtype, self.numeric_size, self.ctx.model,
                                self.ctx.topology, links))

