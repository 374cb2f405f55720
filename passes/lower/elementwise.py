"""Elementwise ops (`A + B`, `A * B`): reduce the partial sums the op cannot combine, then bring
both operands to one layout, whichever operand is cheaper to move.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shardc.lang.dtypes import promote
from shardc.lang.layout import DimSharding, Layout
from shardc.lang.source import Span
from shardc.lang.syntax import LINEAR_FUNCTIONS
from shardc.passes.cost_model import Num
from shardc.passes.ir import Elementwise, Value
from shardc.passes.layout_cost import local_elements, steps_time
from shardc.passes.lower.resharding import apply_steps, copies_of, reshard
from shardc.passes.lower.state import LoweringState, derived_name
from shardc.passes.reshard import Step, plan_reshard
from shardc.passes.symbolic_plans import Candidate, plan_key
from shardc.passes.symbols import as_expr


@dataclass(frozen=True, slots=True)
class Alignment:
    """One layout for an elementwise result: how each operand gets there, and the result on
    to the statement's request."""

    order: int
    layout: Layout
    cost: float
    elements: float
    """The result's elements per device: the op's work, the tie-break between equal costs."""
    big_steps: list[Step]
    small_steps: list[Step]
    request_steps: list[Step]
    checked: bool = False
    """Whether `layout` is one the operands do not hold (their union, a refinement, a wide
    layout): taken only where its shards divide its dims."""


def _scatter_target(v: Value, other: Value, drop: frozenset[str]) -> Layout | None:
    """Where `v`'s partial sums over `drop` are reduced to when the other operand of a sum
    shards the same dims as `v` does plus some of those axes (`dIn_9[D]{U_Y} + dIn_7[D_Y]`):
    straight into the other's layout by a ReduceScatter, rather than an AllReduce and a slice
    (Megatron-LM's backward pass reduces the sum of a layer input's gradients so). None
    otherwise: the sums are reduced in place."""
    if other.layout.unreduced or {d.dim for d in v.layout.dims} != set(other.dims):
        return None
    theirs = {d.dim: d.axes for d in other.layout.dims}
    dims = []
    for d in v.layout.dims:
        axes = theirs[d.dim]
        if axes[: len(d.axes)] != d.axes or not set(axes[len(d.axes) :]) <= drop:
            return None
        dims.append(DimSharding(d.dim, axes))
    out = Layout(tuple(dims), v.layout.unreduced - drop)
    return out if out.dims != v.layout.dims else None


def _union(a: Layout, b: Layout, unreduced: frozenset[str]) -> Layout | None:
    """Each of `a`'s dims sharded as whichever operand shards it more finely (`[I_X, J]` and
    `[J_Y]` give `[I_X, J_Y]`; `[I_YX]` and `[I_Y]` give `[I_YX]`): the operand that shards a
    dim less takes the rest with a free local slice, so each device works on its block only,
    as XLA's partitioner does. None where neither operand's axes of a dim lead the other's
    (`[I_XY]` and `[I_Y]`: no local slice turns one into the other) or an axis would shard two
    dims.

    >>> _union(Layout.of({"I": ("X",), "J": ()}), Layout.of({"J": ("Y",)}), frozenset()).format()
    '[I_X, J_Y]'
    >>> _union(Layout.of({"I": ("Y",), "K": ()}), Layout.of({"I": ("Y", "X"), "K": ("Z",)}),
    ...        frozenset()).format()
    '[I_YX, K_Z]'
    >>> _union(Layout.of({"I": ("Y",)}), Layout.of({"I": ("X", "Y")}), frozenset()) is None
    True
    """
    dims = []
    for d in a.dims:
        theirs = b.axes_of(d.dim) if d.dim in b.dim_names else ()
        finer, coarser = (theirs, d.axes) if len(theirs) > len(d.axes) else (d.axes, theirs)
        if finer[: len(coarser)] != coarser:
            return None
        dims.append(DimSharding(d.dim, finer))
    axes = [x for d in dims for x in d.axes]
    if len(axes) != len(set(axes)) or set(axes) & unreduced:
        return None
    return Layout(tuple(dims), unreduced)


def _refined(big: Layout, small: Layout, unreduced: frozenset[str]) -> Layout | None:
    """`big`'s layout with each dim it shares with `small` sharded further by the axes `small`
    adds after `big`'s own, up to the first axis `big` uses elsewhere (`[T_X, F]` and `[F_ZYX]`
    give `[T_X, F_ZY]`: the small operand gathers X only, the big one slices Z and Y, as XLA's
    partitioner does where `_union` clashes). None where nothing is added.

    >>> _refined(Layout.of({"T": ("X",), "F": ()}), Layout.of({"F": ("Z", "Y", "X")}),
    ...          frozenset()).format()
    '[T_X, F_ZY]'
    """
    dims, added = [], False
    for d in big.dims:
        mine = d.axes
        theirs = small.axes_of(d.dim) if d.dim in small.dim_names else ()
        elsewhere = {a for e in big.dims if e.dim != d.dim for a in e.axes} | set(unreduced)
        extra: list[str] = []
        if theirs[: len(mine)] == mine:
            for a in theirs[len(mine) :]:
                if a in elsewhere:
                    break
                extra.append(a)
        added = added or bool(extra)
        dims.append(DimSharding(d.dim, (*mine, *extra)))
    return Layout(tuple(dims), unreduced) if added else None


WIDE_LAYOUTS = 64
"""Layouts a numeric program's elementwise op or sum tries beyond the fixed few (`wide_layouts`):
every layout of its dims over the axes in play while there are at most this many."""


def wide_layouts(
    dims: Sequence[str],
    axes: Sequence[str],
    divisible: Callable[[str, tuple[str, ...]], bool],
    limit: int = WIDE_LAYOUTS,
) -> list[Layout]:
    """Every layout of `dims` over `axes` (each axis on one dim or none, in each order) whose
    shards divide their dims, or [] when there are more than `limit`: the layouts in which an
    elementwise op or a sum may run besides its operands' own and the request. An operand may
    reach a layout neither operand nor the request holds more cheaply than any of theirs
    (`[I_YX, K] * [I_X, K_Y] -> [I, K_XY]` on a 2x2 v5e: AllToAll the first to `[I_Y, K_X]`,
    permute the second there, AllToAll the result; 4.5 us against 4.9).

    >>> len(wide_layouts(("I", "J"), ("X", "Y"), lambda d, a: True))
    11
    >>> wide_layouts(("I", "J", "K"), ("X", "Y", "Z", "W"), lambda d, a: True)
    []
    """
    count = 0
    for k in range(len(axes) + 1):  # k axes placed, in order, over the dims
        count += (
            math.comb(len(axes), k)
            * math.factorial(k)
            * math.comb(k + len(dims) - 1, len(dims) - 1)
        )
    if count > limit:
        return []
    out = []
    for where in itertools.product((*dims, None), repeat=len(axes)):
        per = {d: [a for a, w in zip(axes, where, strict=True) if w == d] for d in dims}
        for orders in itertools.product(*[itertools.permutations(per[d]) for d in dims]):
            if all(not o or divisible(d, o) for d, o in zip(dims, orders, strict=True)):
                out.append(
                    Layout(tuple(DimSharding(d, o) for d, o in zip(dims, orders, strict=True)))
                )
    return out


def wide_search(st: LoweringState, dims: Sequence[str]) -> bool:
    """Whether an op over `dims` tries every layout (`wide_layouts`): under the exact model
    where the program declares every size, as a contraction's wider roles are
    (`passes.einsum_plan`); a report leaving a size symbolic keeps the fixed candidates its
    regions choose among."""
    return st.ctx.model == "exact" and st.all_declared({*dims, *st.mesh})


Then = tuple[Value, Layout | None]
"""The other operand of the op consuming a result, and that op's request."""


def ahead_cost(st: LoweringState, layout: Layout, dtype: str, then: Then) -> float:
    """The least the consuming op costs to align a result in `layout` with `then`'s operand
    (and move its result to `then`'s request): 0 where partial sums are in play (the
    consuming op reduces them first, priced where it runs)."""
    other, request = then
    if layout.unreduced or other.layout.unreduced:
        return 0.0
    mine = Value("", "", dtype, layout)
    big, small = (mine, other) if set(other.dims) <= set(mine.dims) else (other, mine)
    options = _alignments(st, big, small, frozenset(), request)
    return min((a.cost for a in options), default=0.0)


def unary(st: LoweringState, fn: str, a: Value | None, span: Span) -> Value | None:
    """`fn(a)` elementwise, in `a`'s layout; partial sums reduced first unless `fn` is
    linear."""
    if a is None:
        return None
    if a.layout.unreduced and fn not in LINEAR_FUNCTIONS:
        a = reshard(
            st,
            a,
            a.layout.with_unreduced(frozenset()),
            span,
            f"{fn} is not linear: partial sums are reduced first",
        )
        if a is None:
            return None
    name = derived_name(f"{fn}({a.array})")
    out = Value(st.fresh(name), name, a.dtype, a.layout)
    return st.emit(Elementwise(fn, out, (a,), span))


def combine(
    st: LoweringState,
    op: str,
    lv: Value | None,
    rv: Value | None,
    span: Span,
    request: Layout | None = None,
    then: Then | None = None,
) -> Value | None:
    """`lv op rv` elementwise, broadcasting by dim name: the partial sums the op cannot
    combine reduced first, then both operands in the layout that costs least to reach,
    counting the move of the result to `request` (the statement's left-hand side) after,
    or, with `then`, what the op consuming the result pays to align it (`ahead_cost`)."""
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
        lv = reshard(
            st,
            lv,
            _scatter_target(lv, rv, lu - keep) or lv.layout.with_unreduced(keep & lu),
            span,
            why,
        )
        if lv is None:
            return None
    if ru - keep:
        rv = reshard(
            st,
            rv,
            _scatter_target(rv, lv, ru - keep) or rv.layout.with_unreduced(keep & ru),
            span,
            why,
        )
    if lv is None or rv is None:
        return None
    big, small = (lv, rv) if set(rv.dims) <= set(lv.dims) else (rv, lv)
    unreduced = big.layout.unreduced | small.layout.unreduced
    if then is not None and not wide_search(st, big.dims):
        # A size the program leaves symbolic (bound by `--set` or `at`, or not at all): the
        # layout is chosen as the report's regions choose it, without what the consuming op
        # pays (`ahead_cost`), so a compile at a point and the report at it agree.
        then = None
    options = _alignments(st, big, small, unreduced, request, then)
    big, small, options = _from_copies(st, big, small, unreduced, request, then, options)
    if not options:
        st.error("C004", f"cannot align the operands of `{op}`", span)
        return None
    ordinal = st.choices
    st.choices += 1
    pick = None
    names = {d.dim for v in (small, big) for d in v.layout.dims} | set(st.mesh)
    sized = len(options) > 1 and not st.all_known(names)
    st.sized_choices += sized
    if st.chooser is not None and sized:
        # Which layout the result takes depends on symbolic sizes: the chooser picks, over
        # the same key the numeric sort below uses (passes/symbolic_plans.py).
        cands = [
            Candidate(
                a.order,
                as_expr(_symbolic_time(st, a, big, small)),
                as_expr(local_elements(a.layout, st.size_expr)),
                0,
                shards=st.open_shards((a.layout,) if a.checked else ()),
            )
            for a in options
        ]
        pick = st.chooser.choose(ordinal, cands)
    if then is not None:
        dtype = promote(lv.dtype, rv.dtype)
        ahead = {a.order: ahead_cost(st, a.layout, dtype, then) for a in options}
        options.sort(key=lambda a: (plan_key(a.cost + ahead[a.order], a.elements, 0), a.order))
    else:
        options.sort(key=lambda a: (plan_key(a.cost, a.elements, 0), a.order))
    if pick is not None:
        options.sort(key=lambda a: a.order != pick)
    best = options[0]
    why = f"`{op}` needs both operands in one layout"
    if best.request_steps and len(options) > 1:
        why += " (the requested one, moving the operands rather than the result)"
    big = apply_steps(st, big, best.big_steps, span, lambda s: why)
    small = apply_steps(st, small, best.small_steps, span, lambda s: why)
    name = derived_name(f"{lv.array}{op}{rv.array}")
    out = Value(st.fresh(name), name, promote(lv.dtype, rv.dtype), best.layout)
    args = (big, small) if set(rv.dims) <= set(lv.dims) else (small, big)
    return st.emit(Elementwise(op, out, args, span))


def alignment_key(
    st: LoweringState, lv: Value, rv: Value, request: Layout | None
) -> tuple[float, float, int] | None:
    """The planner's key of the cheapest alignment of `lv op rv` (operands without partial
    sums) into `request`, as `combine` ranks them; None where there is none."""
    best = best_alignment(st, lv, rv, request)
    return None if best is None else plan_key(best.cost, best.elements, 0)


def best_alignment(
    st: LoweringState, lv: Value, rv: Value, request: Layout | None
) -> Alignment | None:
    """The cheapest alignment of `lv op rv` (operands without partial sums) into `request`,
    as `combine` ranks them; None where there is none."""
    big, small = (lv, rv) if set(rv.dims) <= set(lv.dims) else (rv, lv)
    options = _alignments(st, big, small, frozenset(), request)
    return min(options, key=lambda a: (plan_key(a.cost, a.elements, 0), a.order), default=None)


def cheapest_copy(st: LoweringState, v: Value, other: Value, request: Layout | None) -> Value:
    """`v`, or a copy of it an earlier reshard made (`copies_of`), whose alignment with
    `other` into `request` costs strictly less: `R0[I, K] = E; D2[I, K_X] = exp(E) * C`
    slices the gathered copy of E (no move at all, where exp on E's own blocks, a permute
    and a gather of the product cost 4.0 us on 2x4 H100s); `D1 = C + E; D2 = exp(E) * C`
    multiplies in the layout D1's reshard left C in. Only where every size is declared (a
    size bound while others stay free plans as a symbolic one, `walk.as_declared`) and
    neither holds partial sums."""
    copies = copies_of(st, v, 4)
    names = {*v.dims, *other.dims, *st.mesh}
    if not copies or v.layout.unreduced or other.layout.unreduced or not st.all_declared(names):
        return v
    best, key = v, alignment_key(st, v, other, request)
    for u in copies:
        if u.layout.unreduced:
            continue
        k = alignment_key(st, u, other, request)
        if k is not None and (key is None or k < key):
            best, key = u, k
    return best


def _from_copies(
    st: LoweringState,
    big: Value,
    small: Value,
    unreduced: frozenset[str],
    request: Layout | None,
    then: Then | None,
    options: list[Alignment],
) -> tuple[Value, Value, list[Alignment]]:
    """The operands, or copies of them earlier reshards made (`copies_of`, without partial
    sums), where an alignment from those costs strictly less, with their alignments: `S1[I_Y]
    = Sum_{K}(E); D2[I, K] = E + E` adds the copy of E the sum gathered to itself. Only
    where every size is declared, as `cheapest_copy`."""
    names = {*big.dims, *small.dims, *st.mesh}
    if then is not None or unreduced or not options or not st.all_declared(names):
        return big, small, options
    bigs = [u for u in copies_of(st, big, 4) if not u.layout.unreduced]
    smalls = [u for u in copies_of(st, small, 4) if not u.layout.unreduced]
    if not bigs and not smalls:
        return big, small, options
    best = (min(plan_key(a.cost, a.elements, 0) for a in options), big, small, options)
    for b, s in itertools.product([big, *bigs], [small, *smalls]):
        if b is big and s is small:
            continue
        opts = _alignments(st, b, s, unreduced, request, then)
        if opts:
            key = min(plan_key(a.cost, a.elements, 0) for a in opts)
            if key < best[0]:
                best = (key, b, s, opts)
    return best[1], best[2], best[3]


def _alignments(
    st: LoweringState,
    big: Value,
    small: Value,
    unreduced: frozenset[str],
    request: Layout | None,
    then: Then | None = None,
) -> list[Alignment]:
    """The layouts the result may take, in the order ties keep: the smaller operand follows
    the bigger; the bigger takes the smaller's shardings on the dims they share; each dim
    sharded as whichever operand shards it (their union); the statement's request; then,
    where `wide_search` holds, every layout over the axes in play (those and `then`'s). Each
    operand moves there the cheapest way; with a request, so does the result after. Found
    once per statement shape within a lowering."""
    key = (
        big.layout,
        big.dtype,
        small.layout,
        small.dtype,
        unreduced,
        request,
        None if then is None else (then[0].layout, then[0].dtype, then[1]),
    )
    hit = st.caches.alignments.get(key)
    if hit is None:
        hit = st.caches.alignments[key] = _align(st, big, small, unreduced, request, then)
    return list(hit)


def _align(
    st: LoweringState,
    big: Value,
    small: Value,
    unreduced: frozenset[str],
    request: Layout | None,
    then: Then | None,
) -> list[Alignment]:
    used = set(small.layout.sharding_axes)
    checked: set[Layout] = set()
    layouts = [
        big.layout.with_unreduced(unreduced),
        Layout(
            tuple(
                DimSharding(d.dim, small.layout.axes_of(d.dim))
                if d.dim in small.dims
                else DimSharding(d.dim, tuple(x for x in d.axes if x not in used))
                for d in big.layout.dims
            ),
            unreduced,
        ),
    ]
    for union in (
        _union(big.layout, small.layout, unreduced),
        _refined(big.layout, small.layout, unreduced),
    ):
        if union is not None and all(st.divisible(d.dim, d.axes) for d in union.dims):
            layouts.append(union)
            checked.add(union)
    if request is not None and set(request.dim_names) == set(big.dims):
        layouts.append(request.reordered(big.dims, unreduced))
    if wide_search(st, big.dims):
        # After the fixed few (ties keep them): every layout over the axes in play.
        later = (
            (*then[0].layout.sharding_axes, *(then[1].sharding_axes if then[1] else ()))
            if then
            else ()
        )
        axes = [
            a
            for a in st.mesh
            if a
            in {
                *big.layout.sharding_axes,
                *small.layout.sharding_axes,
                *(request.sharding_axes if request else ()),
                *later,
            }
            and a not in unreduced
        ]
        wide = [lay.with_unreduced(unreduced) for lay in wide_layouts(big.dims, axes, st.divisible)]
        layouts += wide
        checked.update(wide)
    out: list[Alignment] = []
    for layout in dict.fromkeys(layouts):
        big_want = layout.reordered(big.dims, big.layout.unreduced)
        small_want = layout.reordered(small.dims, small.layout.unreduced)
        sizes = st.known_sizes()
        big_steps = plan_reshard(big.layout, big_want, sizes, st.pricing(big.dtype, big.dims))
        small_steps = plan_reshard(
            small.layout, small_want, sizes, st.pricing(small.dtype, small.dims)
        )
        request_steps: list[Step] | None = []
        if request is not None and layout != request:
            request_steps = plan_reshard(
                layout,
                request,
                sizes,
                st.pricing(promote(big.dtype, small.dtype), layout.dim_names),
            )
        if big_steps is None or small_steps is None or request_steps is None:
            continue
        cost = (
            cost_steps(st, big_steps, big.dtype)
            + cost_steps(st, small_steps, small.dtype)
            + cost_steps(st, request_steps, promote(big.dtype, small.dtype))
        )
        elements = float(local_elements(layout, st.numeric_size))
        out.append(
            Alignment(
                len(out),
                layout,
                cost,
                elements,
                big_steps,
                small_steps,
                request_steps,
                layout in checked and layout not in layouts[:2],
            )
        )
    return out


def _symbolic_time(st: LoweringState, a: Alignment, big: Value, small: Value) -> Num:
    total: Num = 0
    for steps, dtype in (
        (a.big_steps, big.dtype),
        (a.small_steps, small.dtype),
        (a.request_steps, promote(big.dtype, small.dtype)),
    ):
        total = total + steps_time(
            steps, dtype, st.size_expr, st.ctx.model, st.topology, st.hw_numbers(dtype)[0]
        )
    return total


def cost_steps(st: LoweringState, steps: Sequence[Step], dtype: str) -> float:
    links, _ = st.hw_numbers(dtype)
    return float(steps_time(steps, dtype, st.numeric_size, st.ctx.model, st.topology, links))
