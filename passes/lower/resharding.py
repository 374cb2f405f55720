"""The resharding every part of the lowering uses: a value is brought to a layout by reshard's
plan, each step emitted with its reason, and a layout an earlier step made is reused.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from shardc.lang.layout import DimSharding, Layout, format_axes
from shardc.lang.source import Span
from shardc.lang.syntax import Binary, Call, CollectiveCall, Contract, Expr, Reduce, Ref
from shardc.passes.ir import Collective, LocalSlice, Value
from shardc.passes.layout_cost import Pricing
from shardc.passes.lower.explain import describe_step
from shardc.passes.lower.state import LoweringState
from shardc.passes.reshard import Step, plan_reshard


def reshard(
    st: LoweringState, v: Value, want: Layout, span: Span, why: str, name: str | None = None
) -> Value | None:
    """`v` brought to `want` by reshard's plan; None (with C004) where no plan makes it."""
    if v.layout == want:
        return v
    sizes, pricing = st.known_sizes(), st.pricing(v.dtype, v.dims)
    v = cached_source(st, v, want, sizes, pricing)
    if v.layout == want:
        return v
    steps = plan_reshard(v.layout, want, sizes, pricing)
    if steps is None:
        extra = want.unreduced - v.layout.unreduced
        shown = name or v.array
        st.error(
            "C004",
            f"cannot make {st.fmt(want, shown)} from "
            f"{st.fmt(v.layout, v.array)}: "
            f"no collective creates partial sums over {format_axes(st.ordered(extra))}",
            span,
            ("partial sums {U_X} come from contracting a dim sharded over X",),
        )
        return None
    return apply_steps(st, v, steps, span, lambda s: why)


SHARED_ORDINAL = 1 << 20
"""Where the ordinals of reshard statements' choice points start (`shared_reshard`): apart
from the contractions' and elementwise ops' (counted from 0)."""


def shared_reshard(
    st: LoweringState, v: Value, want: Layout, span: Span, why: str, name: str
) -> Value | None:
    """A reshard statement's `reshard`, where the array it reads is read again by a later
    statement: its own cheapest plan, or the plan through the layout the two share (each
    dim keeps the axes both hold first; `coarsest_common`), which gathers a copy that later
    statements can slice for free (`cached_source`). Which runs is the whole-program search's
    choice (`passes.objective.Forced.rank`): `D0[I, K_YX] = gelu(E); R1[I_Y, K_X] = E;
    R2[I_X, K] = E` on a 2x4 v5p gathers E over Y once (3.0 us) rather than AllToAll it for
    R1 and gather it again for R2 (6.0 us)."""
    ordinal = SHARED_ORDINAL + st.reshard_statements
    st.reshard_statements += 1
    found = shared_options(st, v, want)
    if found is None:
        return reshard(st, v, want, span, why, name)
    src, own, through = found
    options = sorted(
        [(own[0], 0, own[1]), *((t, i + 1, steps) for i, (t, steps) in enumerate(through))],
        key=lambda o: (o[0], o[1]),
    )
    coarse = coarser_options(st, src, want, [o[2] for o in options])
    options += [(t, len(options) + i, steps) for i, (t, steps) in enumerate(coarse)]
    r = 0
    if len(options) > 1:
        # every option is tried (at most three, and the coarser copies in the search's
        # descent): a copy gathered for later statements costs this one more than its own
        # plan by design, so `NEAR` would drop the useful ones
        r = rank_all(st, ordinal, len(options), len(options) - len(coarse))
    start = len(st.ops)
    made = apply_steps(st, src, options[r][2], span, lambda s: why)
    if options[r][1]:
        # copies made for later reads: a product reading the array as it is looks at them
        # (`contract.cached_operands`), as at those `shared_reads` makes
        st.read_copies.update(op.out.id for op in st.ops[start:])
    return made


COARSER = 2
"""The most coarser copies of a reshard statement's target `coarser_options` offers."""


def coarser_options(
    st: LoweringState, src: Value, want: Layout, taken: Sequence[Sequence[Step]]
) -> list[Option]:
    """At a reshard statement whose array a later statement reads where no layout is stated
    for it (a product's operand; `later_reads` finds none), the plans through a coarser copy
    of the target (its axes partly gathered: `partial_gathers`), the `COARSER` cheapest,
    which the product may read (`contract.cached_operands`): `R0[J_Z, K_XY] = B[J_XZY, K];
    C[I_Y, K_ZX] = A ·_J B` on 8 H100s gathers `[J_Z, K]` and slices R0, and the product
    reads that copy (7.0 us against 8.0). None where the statement's options `taken` move
    the same way, or a later read states a layout (`shared_options` weighs those)."""
    if later_reads(st, src):
        return []
    sizes, pricing = st.known_sizes(), st.pricing(src.dtype, src.dims)
    seen = {tuple(s.dst for s in steps) for steps in taken}
    out: list[Option] = []
    common = coarsest_common(src.layout, want)
    for mid in partial_gathers(want, coarsest_common(want, src.layout)):
        there = plan_reshard(src.layout, mid, sizes, pricing)
        on = plan_reshard(mid, want, sizes, pricing)
        if there is None or on is None or mid == common:
            continue
        steps = [*there, *on]
        if tuple(s.dst for s in steps) not in seen:
            seen.add(tuple(s.dst for s in steps))
            out.append((pricing.time(steps, sizes), steps))
    return sorted(out, key=lambda o: o[0])[:COARSER]


def rank_all(st: LoweringState, ordinal: int, options: int, product: int = 0) -> int:
    """The option the whole-program search runs at a choice point whose `options` are all
    tried (`passes.objective.Forced.rank` without `NEAR`: a copy made for later statements
    costs this one more than its own plan by design, and an own plan that moves nothing would
    make every ratio undefined); only the first `product` (all where 0) in its exhaustive
    product, the others in its descent."""
    r: int = st.chooser.rank(ordinal, [1.0] * options, 1.0, product)  # type: ignore[union-attr]
    return r


Option = tuple[float, list[Step]]
"""A way to reshard: its time and its steps."""


def shared_options(
    st: LoweringState, v: Value, want: Layout
) -> tuple[Value, Option, list[Option]] | None:
    """`shared_reshard`'s options from `v` to `want`: the copy of `v` they start from, its
    own plan, and the plans through layouts later statements may slice (cheapest first, each
    moving otherwise than the own plan); None where it has no choice to make."""
    if (
        not hasattr(st.chooser, "rank")
        or v.layout == want
        or st.ctx.model != "exact"
        or v.array in st.params
        or st.last_read.get(v.array, -1) <= st.statement
        or v.layout.unreduced
        or want.unreduced
        # sizes the program leaves symbolic (bound by `--set` or `at`, or not): the report's
        # regions have no such option, so neither has a compile at a point
        or not st.all_declared({*v.layout.dim_names, *st.mesh})
    ):
        return None
    sizes, pricing = st.known_sizes(), st.pricing(v.dtype, v.dims)
    src = cached_source(st, v, want, sizes, pricing)
    own = plan_reshard(src.layout, want, sizes, pricing)
    if own is None:
        return None
    # Through the layout the two share (gathered once, both slice it), and through the
    # cheapest partial gather of the source on the way there (`partial_gathers`: a later
    # statement may read that copy, as `R0[I, J_XY] = A[I_XY, J]` on a 4x4 v5p gathers Y,
    # AllToAlls X and slices Y, leaving `[I_X, J]` for a product reading A).
    common = coarsest_common(src.layout, want)
    every = later_reads(st, v, most=None)
    for later in dict.fromkeys(every):
        # a later statement that wants the array in another layout: the copy gathered here may
        # serve it too (`D1[I_YX, K] = E + E` after `R0[I, K_YX] = E` slices a whole E); each
        # layout once (the common prefix of each dim's axes: the same in any order, repeated)
        common = coarsest_common(common, later)
    through: list[tuple[float, bool, list[Step], float, bool]] = []
    reads = every[:LATER_READS]
    gathers = partial_gathers(src.layout, common)
    # (a later read's layout, or the coarsest it and the target share: both slice it)
    shared = [coarsest_common(want, r) for r in reads]
    mixed = [m for r in reads for m in mixed_prefixes(src.layout, r)]
    for mid in dict.fromkeys([*gathers, *reads, *shared, *mixed]):
        there = plan_reshard(src.layout, mid, sizes, pricing)
        on = plan_reshard(mid, want, sizes, pricing)
        if there is not None and on is not None and mid != want:
            steps = [*there, *on]
            t = pricing.time(steps, sizes)
            with_reads = t + reads_cost(st, v, (src.layout, mid, want), reads)
            through.append((t, mid != common, steps, with_reads, mid in gathers))
    through.sort(key=lambda o: (o[0], o[1]))
    # and through the partial gather or later read whose copy the later reads cost least
    # from, counted with them: `R0[I_XY, K_Z] = E[I_ZY, K_X]; D1[I_XZ, K_Y] = E + E` on 16
    # H100s gathers K first (1.2 us), so D1 permutes half the bytes a permute of E's own
    # blocks moves
    ahead = sorted(through, key=lambda o: (o[3], o[1]))[:1]
    through = [o for o in through if o[4]]
    kept: list[Option] = []
    seen = {tuple(s.dst for s in own)}
    for t, _, steps, _, _ in [*(through[:1] + [o for o in through if not o[1]])[:2], *ahead]:
        key = tuple(s.dst for s in steps)
        if key not in seen:
            seen.add(key)
            kept.append((t, steps))
    return src, (pricing.time(own, sizes), own), kept


LATER_READS = 2
"""The later reads of an array a copy is weighed for (`later_reads`): the nearest ones (a
long program reads an activation again and again; the first reads are the ones a copy made
now serves before another is made)."""


def later_reads(
    st: LoweringState,
    v: Value,
    most: int | None = LATER_READS,
    read_in: Mapping[str, Sequence[tuple[int, Layout]]] | None = None,
) -> list[Layout]:
    """The layouts the next `most` later statements (None: all of them) read `v`'s array in
    (`read_in`, `st.read_in` where None), in `v`'s dims' order."""
    dims = set(v.dims)
    out: list[Layout] = []
    for i, lay in (st.read_in if read_in is None else read_in).get(v.array, ()):
        if i > st.statement and set(lay.dim_names) == dims:
            out.append(lay.reordered(v.dims, frozenset()))
            if len(out) == most:
                break
    return out


def reads_cost(
    st: LoweringState, v: Value, copies: Sequence[Layout], reads: Sequence[Layout]
) -> float:
    """What the `reads` of `v`'s array cost, each from the cheapest of `copies`."""
    total = 0.0
    for want in reads:
        times = [0.0 if c == want else move_time(st, v, c, want) for c in copies]
        total += min((t for t in times if t is not None), default=0.0)
    return total


def move_time(st: LoweringState, v: Value, src: Layout, dst: Layout) -> float | None:
    """The time of reshard's plan from `src` to `dst` for `v`'s array; None where none."""
    key = (src, dst, v.dtype)
    if key not in st.caches.moves:
        sizes, pricing = st.known_sizes(), st.pricing(v.dtype, v.dims)
        steps = plan_reshard(src, dst, sizes, pricing)
        st.caches.moves[key] = None if steps is None else pricing.time(steps, sizes)
    return st.caches.moves[key]


def shared_reads(st: LoweringState, e: Expr, request: Layout | None, span: Span) -> None:
    """Before a contraction, an elementwise op or a sum: each array it reads (in its own layout,
    unrenamed) that a later statement reads again in a stated layout (`read_in`) may first
    be brought to a layout the two can share, a choice of the whole-program search
    (`passes.objective.Forced.rank`), as a reshard statement's is (`shared_reshard`); the op
    then reads that copy where it costs it less (`contract.cached_operands`,
    `elementwise._from_copies`), and so does the later statement (`cached_source`). `C = A
    ·_J B; D1 = gelu(C); R2[I_Y, J_X] = A` on a 2x2 v5p gathers A whole once for both (6.0
    us, where the product's AllToAll and gather and R2's AllToAll cost 7.0); `D0[I_YX, K] =
    E + E; D1[I_YX, K] = E + E` moves E once, not each sum (4.0 us against 5.0); `S0[K] =
    Sum_{I}(E[I, K_YX]); R1[I, K_X] = E` on 4x2 H100s sums R1's copy (13.0 us against 14.0)."""
    if not hasattr(st.chooser, "rank"):
        return
    if isinstance(e, Contract):
        names = _own_reads((e.lhs, e.rhs))
    elif isinstance(e, Reduce) and e.kind == "Sum":
        names = _own_reads((e.arg,))
    elif isinstance(e, Binary) or isinstance(e, Call) and _has_binary(e):
        names = plain_reads(e)
    else:
        return
    for name in names:
        if st.last_read.get(name, -1) <= st.statement or name not in st.values:
            continue
        ordinal = SHARED_ORDINAL + st.reshard_statements
        st.reshard_statements += 1
        v = st.values[name]
        options = read_options(st, v, request if isinstance(e, (Binary, Call)) else None)
        if not options:
            continue
        r = rank_all(st, ordinal, len(options) + 1)
        if r:
            why = f"{name} is read again later: a copy in {st.fmt(options[r - 1][-1].dst, name)}"
            made = apply_steps(st, v, options[r - 1], span, _reason(why))
            st.read_copies.add(made.id)


def _reason(why: str) -> Callable[[Step], str]:
    return lambda s: why


def _has_binary(e: Expr) -> bool:
    while isinstance(e, Call) and len(e.args) == 1:
        e = e.args[0]
    return isinstance(e, Binary)


def _plain_refs(e: Expr) -> Iterator[Ref]:
    match e:
        case Ref():
            yield e
        case Binary(lhs=lhs, rhs=rhs):
            yield from _plain_refs(lhs)
            yield from _plain_refs(rhs)
        case Call(args=args):
            for a in args:
                yield from _plain_refs(a)


SHARED_READS = 3
"""The most layouts `read_options` offers an array (beside leaving it be)."""


def read_options(st: LoweringState, v: Value, request: Layout | None) -> list[list[Step]]:
    """`shared_reads`'s options for `v`: the steps to the layouts a later statement's read
    may share with this one (the request, each later read's layout, the coarsest all of
    them slice, and the partial gathers on the way: `partial_gathers`), at most
    `SHARED_READS`: the one the later reads cost least from (counted with them), the one
    gathered for all the reads, and the request. None where it has no choice to make (as
    `shared_options`)."""
    if (
        st.ctx.model != "exact"
        or v.array in st.params
        or v.layout.unreduced
        or not st.all_declared({*v.layout.dim_names, *st.mesh})
    ):
        return []
    reads = later_reads(st, v)
    if not reads and request is None:
        return []  # (a request alone: the op's own layout, which a later sum may read)
    key = (v.layout, v.dtype, request, tuple(reads))
    if key not in st.caches.reads:
        st.caches.reads[key] = _read_options(st, v, request, reads)
    return st.caches.reads[key]


def _read_options(
    st: LoweringState, v: Value, request: Layout | None, reads: list[Layout]
) -> list[list[Step]]:
    mine = v.layout
    wants = (
        [request.reordered(v.dims, frozenset())]
        if request is not None and set(request.dim_names) == set(v.dims)
        else []
    )
    common = mine
    for lay in [*wants, *reads]:
        common = coarsest_common(common, lay)
    sizes, pricing = st.known_sizes(), st.pricing(v.dtype, v.dims)
    priced: list[tuple[float, int, list[Step]]] = []
    for k, t in enumerate(dict.fromkeys([*wants, *reads, *partial_gathers(mine, common)])):
        steps = plan_reshard(mine, t, sizes, pricing) if t != mine else None
        if steps and any(s.kind != "slice" for s in steps):
            ahead = pricing.time(steps, sizes) + reads_cost(st, v, (mine, t), reads)
            priced.append((ahead, k, steps))
    if not priced:
        return []
    by_target = {steps[-1].dst: steps for _, _, steps in priced}
    keep = [min(priced, key=lambda o: (o[0], o[1]))[2]]
    for t in (common, *wants):
        if t in by_target and by_target[t] not in keep:
            keep.append(by_target[t])
    return keep[:SHARED_READS]


def partial_gathers(src: Layout, common: Layout) -> list[Layout]:
    """The layouts between `src` and `common` (a gather of it, `coarsest_common`): each dim
    keeps a prefix of its axes in `src` at least as long as in `common`; `src` left out.

    >>> src = Layout.of({"I": ("X", "Y"), "J": ()})
    >>> [m.format("A") for m in partial_gathers(src, Layout.of({"I": (), "J": ()}))]
    ['A[I, J]', 'A[I_X, J]']
    """
    keep = [range(len(c.axes), len(d.axes) + 1) for d, c in zip(src.dims, common.dims, strict=True)]
    out = []
    for ks in itertools.product(*keep):
        mid = Layout(
            tuple(DimSharding(d.dim, d.axes[:k]) for d, k in zip(src.dims, ks, strict=True)),
            common.unreduced,
        )
        if mid != src:
            out.append(mid)
    return out


def mixed_prefixes(src: Layout, read: Layout) -> list[Layout]:
    """The layouts whose dims each keep a prefix of their axes in `src` or in `read` (each axis
    on one dim), some a prefix of `src`'s and some one of `read`'s alone: a copy on the way
    from `src` that a later read in `read` reaches by gathers and one AllToAll, neither a
    partial gather of `src` nor a coarser `read` (`R0[I_XY, K_Z] = E[I_ZY, K_X]; D1[I,
    K_YZX] = E + E` on 16 H100s goes through `[I_Z, K_Y]`).

    >>> src = Layout.of({"I": ("X",), "K": ()})
    >>> [m.format("E") for m in mixed_prefixes(src, Layout.of({"I": (), "K": ("Y",)}))]
    ['E[I_X, K_Y]']
    """
    per = []
    for d in src.dims:
        other = read.axes_of(d.dim)
        mine = [d.axes[:k] for k in range(len(d.axes) + 1)]
        per.append(dict.fromkeys([*mine, *(other[:k] for k in range(len(other) + 1))]))
    out = []
    for axes in itertools.product(*per):
        flat = [x for a in axes for x in a]
        pairs = list(zip(src.dims, axes, strict=True))
        from_src = any(a and d.axes[: len(a)] == a for d, a in pairs)
        from_read = any(
            a and d.axes[: len(a)] != a and read.axes_of(d.dim)[: len(a)] == a for d, a in pairs
        )
        if len(flat) == len(set(flat)) and from_src and from_read:
            out.append(Layout(tuple(DimSharding(d.dim, a) for d, a in pairs)))
    return out


def coarsest_common(a: Layout, b: Layout) -> Layout:
    """The finest layout both `a` and `b` are slices of: each dim keeps the axes `a` and `b`
    both shard it over first, in their order (from it, either is a free local slice).

    >>> a = Layout.of({"I": ("X",), "K": ("Y", "X")})
    >>> coarsest_common(a, Layout.of({"I": ("X", "Y"), "K": ("Y",)})).format("E")
    'E[I_X, K_Y]'
    """
    dims = []
    for d in a.dims:
        other = b.axes_of(d.dim) if d.dim in b.dim_names else ()
        n = 0
        while n < min(len(d.axes), len(other)) and d.axes[n] == other[n]:
            n += 1
        dims.append(DimSharding(d.dim, d.axes[:n]))
    return Layout(tuple(dims), a.unreduced & b.unreduced)


def names_read(e: Expr) -> set[str]:
    """The arrays an expression reads."""
    match e:
        case Ref(name=name):
            return {name}
        case Contract(lhs=lhs, rhs=rhs) | Binary(lhs=lhs, rhs=rhs):
            return names_read(lhs) | names_read(rhs)
        case Call(args=args):
            return set().union(*(names_read(a) for a in args))
        case CollectiveCall(arg=arg) | Reduce(arg=arg):
            return names_read(arg)
    return set()


def plain_reads(e: Expr) -> list[str]:
    """The arrays an expression reads in their own dims outside a contraction, a reduction or
    an explicit collective (elementwise operands, call arguments, a reshard's source), each
    once, in the order read: the result's layout is where each of them is wanted."""
    return _own_reads(_plain_refs(e))


def _own_reads(exprs: Iterable[Expr]) -> list[str]:
    """The arrays of `exprs` read as they are (a reference with no layout and no renames),
    each once, in order."""
    return list(
        dict.fromkeys(
            r.name for r in exprs if isinstance(r, Ref) and r.layout is None and not r.renames
        )
    )


def cached_source(
    st: LoweringState, v: Value, want: Layout, sizes: dict[str, float], pricing: Pricing
) -> Value:
    """The copy of `v` to reshard from: `v`, or a layout of it an earlier reshard made
    (`resharded`), where every mesh axis's size is known, under the exact model, and
    resharding that copy costs strictly less (`R0[I, K_Y] = E; R1[I, K_X] = E` slices
    R1 from the whole E that R0's reshard gathered, rather than gather E again).
    Parameters are gathered again where needed (`apply_steps`)."""
    if any(a not in sizes for a in st.mesh):
        return v
    copies = copies_of(st, v)

    def cost(u: Value) -> float | None:
        steps = plan_reshard(u.layout, want, sizes, pricing)
        return None if steps is None else pricing.time(steps, sizes)

    best, best_cost = v, cost(v)
    for u in copies:
        c = cost(u)
        if c is not None and (best_cost is None or c < best_cost * (1 - 1e-9)):
            best, best_cost = u, c
    return best


def copies_of(st: LoweringState, v: Value, most: int = 16) -> list[Value]:
    """The layouts of `v` earlier reshards made (`apply_steps`), at most `most`: none under
    the book's model, or of a parameter (gathered again where needed, as FSDP keeps only its
    shard between uses)."""
    if st.ctx.model != "exact" or v.array in st.params or v.id not in st.copies:
        return []
    copies: list[Value] = []
    frontier = [v.id]
    seen = {v.id}
    while frontier and len(copies) < most:
        for u in st.copies.get(frontier.pop(), ()):
            if u.id not in seen:
                seen.add(u.id)
                copies.append(u)
                frontier.append(u.id)
    return copies


def apply_steps(
    st: LoweringState,
    v: Value,
    steps: Sequence[Step],
    span: Span,
    why: Callable[[Step], str],
    beat: str = "",
) -> Value:
    """Emit `steps` on `v`, each op with its reason (`why`, then what the plan beat)."""
    for s in steps:
        # An activation already brought to this layout is reused (the backward pass reads
        # the forward's gathered input, as the book's algorithms do); parameters are
        # gathered again where needed, so FSDP keeps only its shard between uses.
        key = (v.id, s.dst)
        if key in st.resharded and v.array not in st.params:
            v = st.resharded[key]
            continue
        out = Value(st.fresh(v.array), v.array, v.dtype, s.dst)
        if s.kind == "slice":
            v = st.emit(
                LocalSlice(out, v, span, f"{why(s)}: free local slice over {format_axes(s.axes)}")
            )
        else:
            reason = f"{why(s)}: {describe_step(s, v.array, tuple(st.mesh))}"
            if beat:
                reason += f"; {beat}"
            v = st.emit(
                Collective(
                    s.kind,  # type: ignore[arg-type]
                    out,
                    v,
                    s.axes,
                    s.dim,
                    span,
                    reason,
                )
            )
        st.resharded[key] = v
        st.copies.setdefault(key[0], []).append(v)
    return v
