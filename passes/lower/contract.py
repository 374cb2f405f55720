"""Contractions: search the ways to run `A ·_J B` (passes.einsum_plan), rank them by time with
every size known or by the book's rule otherwise, emit the chosen plan, and price the
alternatives in SymPy for the decision record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import sympy as sp

from shardc.lang.dtypes import promote
from shardc.lang.layout import DimSharding, Layout
from shardc.lang.syntax import Assign, Contract, Expr, Ref
from shardc.passes.conditions import less_than
from shardc.passes.cost_model import LEVELS, Links, Num
from shardc.passes.einsum_plan import (
    EinsumPlan,
    Floors,
    PlanSearch,
    Signature,
    book_departures,
    case_label,
    output_dims,
    plan_signature,
    search_plans,
)
from shardc.passes.ir import Alternative, Decision, Einsum, Value
from shardc.passes.layout_cost import SizeOf, local_bytes, local_elements, steps_time
from shardc.passes.lower.chain import JointPick, Option, plan_chain, stage_hints
from shardc.passes.lower.explain import beat_text, case_reason, whole_program_text
from shardc.passes.lower.resharding import apply_steps, coarsest_common, copies_of
from shardc.passes.lower.state import (
    Blocks,
    LoweringState,
    Measure,
    Rank,
    SearchKey,
    StepsKey,
    derived_name,
)
from shardc.passes.objective import PRODUCT_OPTIONS, distinct
from shardc.passes.reshard import Step
from shardc.passes.symbolic_plans import COPY_MARGIN, Candidate, Recipe, roofline
from shardc.passes.symbols import HardwareSymbols, as_expr, size_symbol


def contract(
    st: LoweringState,
    e: Contract,
    lv: Value,
    rv: Value,
    requested: Layout | None,
    target: str,
    stmt: Assign | None,
    keep_partial: bool = False,
    joint: JointPick | None = None,
    copies: bool = False,
) -> Value | None:
    """`lv ·_J rv` (the operands of `e`, lowered by `walk.contract`): the plans searched and
    ranked, the chosen one emitted and its decision recorded. `joint`: how the chain this
    product is an inner stage of runs it (`chain_picks`); `copies`: whether the plans from
    copies of the operands are candidates too where sizes are symbolic (`copy_sources`; as
    `cached_operands` where they are known)."""
    dtype = promote(lv.dtype, rv.dtype)
    numeric = st.all_known(
        {*(d.dim for d in lv.layout.dims), *(d.dim for d in rv.layout.dims), *st.mesh}
    )
    links, c = st.hw_numbers(dtype)
    hint = joint.hint if joint is not None else None
    ranking = search_from(st, e, lv, rv, requested, keep_partial, stmt, hint)
    search, objective = ranking.search, ranking.objective
    ranked = search.ranked
    if not ranked:
        st.error(
            "C009",
            f"no way to compute {st.fmt(requested, target) if requested else target}"
            f" from {st.fmt(lv.layout, lv.array)} and {st.fmt(rv.layout, rv.array)}",
            e.span,
            (
                "every way of giving the mesh axes to dims either leaves a shard "
                "that does not divide its dim or needs partial sums {U_X} that "
                "only a contracted dim sharded over X produces",
            ),
        )
        return None
    if joint is not None:
        # Chosen with the contraction that consumes the result (`chain_picks`): the cheapest
        # plan that leaves the layout the chain's plan gives it (the operands are read in
        # the layouts it foresaw, so one does).
        chosen = next(p for p in ranked if p.final == joint.final)
        ranked = [chosen, *(p for p in ranked if p is not chosen)]
    ordinal = st.choices
    st.choices += 1
    candidates: tuple[Candidate, ...] = ()
    whole = ""
    if not numeric and not search.capped:
        candidates = plan_candidates(st, search, lv.dtype, rv.dtype, dtype, links, c)
        sources = (
            copy_sources(st, e, lv, rv, requested, keep_partial, stmt, search) if copies else []
        )
        if sources:
            candidates = with_copies(st, candidates, search, lv, rv, sources, links, c)
        st.sized_choices += 1
        pick = st.chooser.choose(ordinal, candidates) if st.chooser else None
        if pick is not None:
            k, pick = from_source(pick, search, sources)
            if k:  # a copy's plan: that copy is the operand
                side, u, ranking = sources[k - 1]
                lv, rv = (u, rv) if side == 0 else (lv, u)
                search, objective = ranking.search, ranking.objective
                ranked = search.ranked
            chosen = search.plans[pick]
            ranked = [chosen, *(p for p in ranked if p is not chosen)]
    elif numeric and hasattr(st.chooser, "rank"):
        # The whole-program search (passes.objective) may run another of the best plans,
        # the wider roles ranked with the book's (`PlanSearch.every`), as `ranked` ranks them
        # where sizes are symbolic.
        options = distinct(
            [ranked[0], *search.every], lambda p: (p.lhs_steps, p.rhs_steps, p.out_steps)
        )
        if st.all_declared({*lv.dims, *rv.dims, *st.mesh}):
            options += leanest(ranking, options)
            options += tightest(ranking, options)
        times = [float(objective(p)[1]) for p in options]
        r = st.chooser.rank(ordinal, times, product=PRODUCT_OPTIONS)  # type: ignore[union-attr]
        chosen = options[r]
        if chosen is not ranked[0]:
            whole = whole_program_text(chosen, ranked[0], objective, lv.array, rv.array, target)
        ranked = [chosen, *(p for p in ranked if p is not chosen)]
    best = ranked[0]
    line = (stmt.span if stmt is not None else e.span).line
    record_decision(
        st,
        ranked,
        ranking,
        numeric,
        line,
        e,
        lv,
        rv,
        dtype,
        target,
        (search.tried, search.space) if search.capped else None,
        candidates,
        ordinal,
        joint,
    )
    beat = (
        whole
        if whole
        else joint.reason(st.chip is not None)
        if joint is not None
        else beat_text(ranked, objective, lv.array, rv.array, target)
    )
    mesh = tuple(st.mesh)
    why_l = case_reason(lv, rv, e.dims, "lhs", target, mesh)
    why_r = case_reason(lv, rv, e.dims, "rhs", target, mesh)
    lv2 = apply_steps(st, lv, best.lhs_steps, e.span, why_l, beat)
    rv2 = apply_steps(st, rv, best.rhs_steps, e.span, why_r, beat)
    case = case_label(lv.layout, rv.layout, e.dims)
    name = target if stmt is not None else derived_name(f"{lv.array}·{rv.array}")
    out = Value(st.fresh(name), name, dtype, best.local_out)
    v = st.emit(Einsum(out, lv2, rv2, e.dims, e.span, case))
    why_o = case_reason(lv, rv, e.dims, "out", name, mesh, best.final)
    if stmt is not None and stmt.partial and shared_steps(best.out_steps):
        # One term of a sum the compiler made (a gradient with several contributions):
        # its partial sums stay unreduced and the sum is reduced once, or its blocks stay
        # sharded and the sum is gathered once. The plan is ranked without that reduction
        # or gather (`plan_search`'s `shared`), which the sum pays once.
        if MOVES & {s.kind for s in best.out_steps}:
            st.term_gathers.add(blocks(best.local_out))
        else:
            st.term_reduced.update(a for s in best.out_steps for a in s.axes)
        return v
    return apply_steps(st, v, best.out_steps, e.span, why_o, beat)


def leanest(ranking: Ranking, options: Sequence[EinsumPlan]) -> list[EinsumPlan]:
    """The plan that communicates least, where `options` (the best by the planner's key, comms
    plus compute) lack one moving as little: the whole-program objective `T_lower` takes the
    larger of the program's summed terms, so a plan trading a latency-bound collective for
    compute that stays hidden under the program's comms wins there although it loses on its
    own key. `C[I, K] = A[I, J] ·_J B[J_Y, K_XZ]` on 8 H100s (K=8): slicing A over Y and
    reducing C (an AllReduce, two latency hops) ranks first; gathering B over Z and Y and
    multiplying the whole A saves a hop for HBM time T_comms still hides (issue 31's hunt)."""
    return least_by(ranking, options, ranking.comms)


def tightest(ranking: Ranking, options: Sequence[EinsumPlan]) -> list[EinsumPlan]:
    """The plan whose larger of communication and local roofline time is least, where
    `options` lack one as low: the planner's key adds the two, `T_lower` takes the larger, so
    a plan that communicates more while its product shrinks as much can rank outside the
    best. `C[I, K] = A[I, J] ·_J B[J, K]` on a 2x4 v5e (I=J=2048, K=128): gathering C over X
    after multiplying `[I_X, K]` (12.65 us) ranks below plans summing to more (14.19 us)."""
    return least_by(ranking, options, lambda p: max(ranking.comms(p), ranking.local(p)))


def least_by(
    ranking: Ranking, options: Sequence[EinsumPlan], measure: Callable[[EinsumPlan], float]
) -> list[EinsumPlan]:
    """The plan of the search's best least by `measure` (ties to the planner's key), where
    every one of `options` measures more; else none."""
    if not ranking.search.every:
        return []
    best = min(ranking.search.every, key=lambda p: (measure(p), ranking.objective(p)))
    return [best] if measure(best) < min(measure(p) for p in options) else []


def cached_operands(
    st: LoweringState,
    e: Contract,
    lv: Value,
    rv: Value,
    requested: Layout | None,
    keep_partial: bool,
    stmt: Assign | None,
) -> tuple[Value, Value]:
    """The operands to plan `e` from: `lv` and `rv`, or a copy of one an earlier reshard made
    (`resharding.copies_of`) where the cheapest plan from it costs less, every size of the
    product known (elsewhere the report lists the plans from each copy beside the operands'
    own, `copy_sources`, and its chooser picks among them as this does at a point).
    `R0[J_XY, K] = B` gathering B over Y leaves `[J_X, K]`, from which `C[I_XY, K] = A ·_J B`
    gathers X alone (1.2 us), not XY from B's own `[J_X, K_Y]` (2.1 us). Only an operand the
    cheapest plan moves looks at its copies (and one read as it is, at the copies
    `resharding.shared_reads` made: `looked_at`); where that plan's first step makes a copy
    made already, at the ones gathered or moved further on (A gathered whole for later reads,
    whose first gather the plan shares, needs only a slice), not at slices of the operand."""
    copies = (copies_of(st, lv, 4), copies_of(st, rv, 4))
    names = {*lv.layout.dim_names, *rv.layout.dim_names, *st.mesh}
    if not (copies[0] or copies[1]) or not st.all_known(names):
        return lv, rv

    def best(a: Value, b: Value) -> tuple[float, EinsumPlan | None]:
        ranking = search_from(st, e, a, b, requested, keep_partial, stmt)
        ranked = ranking.search.ranked
        if not ranked:
            return float("inf"), None
        return float(ranking.objective(ranked[0])[1]), ranked[0]

    t0, p = best(lv, rv)
    if p is None:
        return lv, rv
    pick, least = (lv, rv), t0 * (1 - COPY_MARGIN)
    for side, u in looked_at(st, (lv, rv), copies, (p.lhs_steps, p.rhs_steps)):
        pair = (u, rv) if side == 0 else (lv, u)
        t, _ = best(*pair)
        if t < least:
            pick, least = pair, t
    return pick


def search_from(
    st: LoweringState,
    e: Contract,
    a: Value,
    b: Value,
    requested: Layout | None,
    keep_partial: bool,
    stmt: Assign | None,
    hint: Layout | None = None,
) -> Ranking:
    """The plan search of `e` from the operands `a` and `b` (each the operand or a copy of it
    an earlier reshard made: the same dims, another layout), for the statement's request:
    the product's own (`hint`: its chain's joint pick), and the ones `cached_operands` and
    `copy_sources` compare."""
    out_dims = requested.dim_names if requested is not None else output_dims(a.dims, b.dims, e.dims)
    shared = frozenset(st.term_gathers) if stmt is not None and stmt.partial else None
    reduced = frozenset(st.term_reduced)
    return plan_search(st, a, b, e.dims, out_dims, requested, keep_partial, hint, shared, reduced)


def looked_at(
    st: LoweringState,
    operands: tuple[Value, Value],
    copies: tuple[list[Value], list[Value]],
    steps: tuple[tuple[Step, ...], tuple[Step, ...]],
) -> list[tuple[int, Value]]:
    """The copies (side 0: the left operand's, 1: the right's) a product looks at where the
    cheapest plan from the operands as they are takes `steps` on each (`cached_operands`)."""
    out = []
    for side, (v, moves) in enumerate(zip(operands, steps, strict=True)):
        # where the plan's first step makes a copy made already, the copies further on
        # (gathered or moved: a slice of the operand it reaches itself for free)
        shared = bool(moves) and (v.id, moves[0].dst) in st.resharded
        seen = {v.layout}
        for u in copies[side]:
            # a copy made under other names (`In[B, T->S, D]` reads `In` with T as S)
            # is not this operand's layout; an operand read as it is looks only at a copy
            # made for this read and a later one (`resharding.shared_reads`)
            if (
                u.layout in seen
                or u.layout.dim_names != v.layout.dim_names
                or not moves
                and u.id not in st.read_copies
                or shared
                and coarsest_common(v.layout, u.layout) == v.layout
            ):
                continue
            seen.add(u.layout)
            out.append((side, u))
    return out


def copy_sources(
    st: LoweringState,
    e: Contract,
    lv: Value,
    rv: Value,
    requested: Layout | None,
    keep_partial: bool,
    stmt: Assign | None,
    search: PlanSearch,
) -> list[tuple[int, Value, Ranking]]:
    """Where the product's sizes are symbolic, `cached_operands` as a choice: each copy of an
    operand that the operands' cheapest plan looks at somewhere (`looked_at`, for each plan
    of `search`), with the plans from it (side 0: a copy of the left operand, 1: of the
    right), in the order `cached_operands` tries them. `plan_candidates` lists their plans
    beside the operands' own, so a chooser picks the copy where a compile at the point
    would (`passes.symbolic_plans.sourced`)."""
    copies = (copies_of(st, lv, 4), copies_of(st, rv, 4))
    if not (copies[0] or copies[1]):
        return []
    moves = {(p.lhs_steps[:1], p.rhs_steps[:1]) for p in search.plans}
    found = dict.fromkeys(
        (side, u.id)
        for first in sorted(moves, key=repr)
        for side, u in looked_at(st, (lv, rv), copies, first)
    )
    if not found:
        return []
    out = []
    for side, copy in enumerate(copies):
        for u in copy:
            if (side, u.id) not in found:
                continue
            a, b = (u, rv) if side == 0 else (lv, u)
            ranking = search_from(st, e, a, b, requested, keep_partial, stmt)
            if ranking.search.plans and not ranking.search.capped:
                out.append((side, u, ranking))
    return out


def shared_steps(steps: Sequence[Step]) -> bool:
    """Whether the steps that take one term of a sum to the sum's layout can be left to the
    sum, paid once for all its terms: reductions of partial sums (Megatron-LM's backward pass
    reduces the sum of a layer input's gradients once), or gathers (each term of a gradient
    gathered over X before the sum moves X times what one gather of the sum does: XLA sums
    the terms of dIn sharded and gathers once), or AllToAlls (the terms of an attention
    step's dIn, each computed batch-sharded and wanted sharded over D, are summed and moved
    once)."""
    kinds = {s.kind for s in steps}
    return bool(kinds) and (
        kinds <= {"AllReduce", "ReduceScatter"}
        or bool(MOVES & kinds)
        and kinds <= {*MOVES, "slice"}
    )


def natural_partials(st: LoweringState, terms: Sequence[Assign]) -> set[str]:
    """The mesh axes whose partial sums the sum of `terms` reduces anyway: those that at least
    two terms' products hold as their operands stand, a contracted dim sharded over the axis
    in both (GQA's dQ ·_{K,G,H} WQ, dK ·_{K,H} WK and dV ·_{K,H} WV with K over Y: one
    ReduceScatter of dIn over Y, Megatron-LM's). A term whose operands hold no such axis, or
    the only one that does, is ranked with its reduction (`left_to_sum`)."""
    count: dict[str, int] = {}
    for t in terms:
        e = t.expr
        if not isinstance(e, Contract):
            continue
        held = [_held(st, x) for x in (e.lhs, e.rhs)]
        axes = {a for d in e.dims for a in held[0].get(d, ()) if a in held[1].get(d, ())}
        for a in axes:
            count[a] = count.get(a, 0) + 1
    return {a for a, n in count.items() if n >= 2}


def _held(st: LoweringState, e: Expr) -> dict[str, tuple[str, ...]]:
    """Each dim's mesh axes in operand `e` as it stands, by the names the use gives them;
    empty for an operand that is not a plain array."""
    if not isinstance(e, Ref):
        return {}
    if e.layout is not None:
        return {d.dim: tuple(d.axes) for d in e.layout.dims}
    v = st.values.get(e.name)
    if v is None:
        return {}
    dims = e.used_dims(tuple(d.dim for d in v.layout.dims))
    return {n: tuple(d.axes) for n, d in zip(dims, v.layout.dims, strict=True)}


MOVES = frozenset({"AllGather", "AllToAll"})
"""The steps that move a term's blocks to the sum's layout (`shared_steps`)."""


def blocks(layout: Layout) -> Blocks:
    """Each dim's mesh axes, by position (`state.Blocks`)."""
    return tuple(d.axes for d in layout.dims)


def left_to_sum(
    p: EinsumPlan, gathered: frozenset[Blocks], reducible: frozenset[str] = frozenset()
) -> bool:
    """Whether the sum pays the steps that take this term to the sum's layout anyway, so the
    term is ranked without them: a reduction of partial sums over axes the sum reduces anyway
    (`reducible`: two terms hold them as they stand, or an earlier term left them: GQA's dQ,
    dK and dV terms of dIn, ReduceScattered once as Megatron-LM does), or a gather or
    AllToAll of blocks its operands already held sharded, or that an earlier term left alike.
    A term whose partial sums no other term shares pays their reduction: ranked as if the sum
    paid it, an attention step's dKc term AllReduced dIn over Y (2.1 MB) where gathering the
    1 kB WK avoids it, as XLA does. A plan that slices its operands over an axis only to move
    the result back over it pays the move: ranked as if the sum paid it, each term sliced
    over an idle axis to save FLOPs and the sum gathered what no term needed sharded (an
    attention step's dIn over X, where XLA moves nothing)."""
    if not shared_steps(p.out_steps):
        return False
    if not MOVES & {s.kind for s in p.out_steps}:
        return {a for s in p.out_steps for a in s.axes} <= reducible
    moved = {a for s in p.out_steps if s.kind in MOVES for a in s.axes}
    sliced = {a for s in (*p.lhs_steps, *p.rhs_steps) if s.kind == "slice" for a in s.axes}
    # Blocks the operands already held sharded are the sum's to move, as before; blocks this
    # plan slices only to move them again are its own cost unless an earlier term did so.
    return not moved & sliced or blocks(p.local_out) in gathered


def chain_picks(
    st: LoweringState, top: Contract, requested: Layout | None, keep_partial: bool
) -> tuple[JointPick | None, ...]:
    """How the inner contractions of the chain `top` heads (`A ·_J B ·_K C`: its left operands,
    innermost first) are run: the layouts of the chain's intermediate results chosen together
    (`passes.lower.chain`), where every operand is an array whose layout is known before
    lowering and the program declares every size; None for a product planned alone. Under the
    book's model each product is planned alone, as the book's answers are."""
    stages: list[Contract] = []
    x: Expr = top
    while isinstance(x, Contract):
        stages.append(x)
        x = x.lhs
    stages.reverse()
    alone: tuple[JointPick | None, ...] = (None,) * (len(stages) - 1)
    if st.ctx.model != "exact":
        return alone
    leaves = [peek(st, x), *(peek(st, s.rhs) for s in stages)]
    if any(v is None for v in leaves):
        return alone
    operands = [v for v in leaves if v is not None]
    names = {
        *st.mesh,
        *(d for v in operands for d in v.dims),
        *(requested.dim_names if requested is not None else ()),
    }
    if not st.all_declared(names):
        # Sizes the program leaves symbolic are planned one product at a time even where a
        # binding gives them a number (unless `--set` binds them all: `walk.as_declared`), so
        # a report's `at(...)` and a compile with those bindings choose the same plans (as
        # reshards are priced: `pricing`).
        return alone
    dtypes = [operands[0].dtype]
    for v in operands[1:]:
        dtypes.append(promote(dtypes[-1], v.dtype))
    last = len(stages) - 1

    def options(i: int, lay: Layout) -> list[Option]:
        s, rv = stages[i], operands[i + 1]
        lv = Value("", "", dtypes[i], lay)
        req, kp = (requested, keep_partial) if i == last else (None, False)
        out_dims = req.dim_names if req is not None else output_dims(lay.dim_names, rv.dims, s.dims)
        hints: list[Layout | None] = [None]
        if i < last:
            hints += stage_hints(out_dims, operands[i + 2].layout, requested)
        out: list[Option] = []
        seen: set[tuple[Layout, Layout | None]] = set()
        for hint in hints:
            ranking = plan_search(st, lv, rv, s.dims, out_dims, req, kp, hint)
            for p in ranking.search.ranked:  # the cheapest plan leaving each layout
                if (p.final, hint) not in seen:
                    seen.add((p.final, hint))
                    out.append((p.final, float(ranking.objective(p)[1]), hint))
        return out

    picks = plan_chain(operands[0].layout, len(stages), options)
    return alone if picks is None else tuple(picks)


def peek(st: LoweringState, e: Expr) -> Value | None:
    """An operand's dtype and the layout it is read in, without lowering it: a plain use
    of an array (no renamed dims); None otherwise."""
    if not isinstance(e, Ref) or e.renames:
        return None
    want = e.layout.stripped() if e.layout is not None else None
    v = st.values.get(e.name)
    if v is None:
        return Value(e.name, e.name, "bf16", want) if want is not None else None
    return v if want is None else Value(v.id, v.array, v.dtype, want)


@dataclass(frozen=True, slots=True)
class Ranking:
    """What `plan_search` returns: the search of one statement shape, the objective that
    ranked it (smallest first), and the shape it was searched for."""

    search: PlanSearch
    objective: Callable[[EinsumPlan], Rank]
    key: SearchKey
    comms: Callable[[EinsumPlan], float]
    """A plan's communication time (its three reshards'), every size known."""
    local: Callable[[EinsumPlan], float]
    """The local product's roofline time (the larger of its math and its HBM traffic)."""


def plan_search(
    st: LoweringState,
    lv: Value,
    rv: Value,
    contract: tuple[str, ...],
    out_dims: tuple[str, ...],
    requested: Layout | None,
    keep_partial: bool,
    hint: Layout | None = None,
    shared: frozenset[Blocks] | None = None,
    reducible: frozenset[str] = frozenset(),
) -> Ranking:
    """The ranked plans of `lv ·_contract rv` and the objective that ranks them, searched
    once per statement shape: within a lowering the sizes, topology and chip are fixed, so
    the ranking depends only on the operands' layouts and dtypes, the request and the hint
    (docs/benchmarks.md: a chain of 2,000 einsums has two shapes). `shared` (None: not a
    term): the product is one term of a gradient's sum, whose partial sums the sum reduces
    once, so a plan that ends in a reduction is ranked without it (Megatron-LM adds the
    input-gradient terms of grouped-query attention while partial and ReduceScatters the sum
    once where `reducible` holds its axes, as is a gather from the blocks `shared` names,
    which earlier terms left to the sum (`left_to_sum`)."""
    if shared is None:
        reducible = frozenset()
    dtype = promote(lv.dtype, rv.dtype)
    names = {*(d.dim for d in lv.layout.dims), *(d.dim for d in rv.layout.dims), *st.mesh}
    numeric = st.all_known(names)
    links, c = st.hw_numbers(dtype)
    topo = st.topology
    size_of = st.numeric_size
    caches = st.caches
    shape: SearchKey = (
        lv.layout,
        rv.layout,
        lv.dtype,
        rv.dtype,
        contract,
        out_dims,
        requested,
        keep_partial,
        hint,
        shared,
        reducible,
    )
    measured = caches.measured.setdefault(shape, {})

    # A reshard's time and a local product's size, by value: the plans of a search share
    # their operands' targets and reshards (each is one of few), and the lowering's sizes,
    # chip and topology are fixed, so one lowering prices each once.
    seconds, flops = caches.seconds, caches.flops

    def reshard_time(steps: tuple[Step, ...], dt: str) -> float:
        t = seconds.get((steps, dt))
        if t is None:
            t = seconds[(steps, dt)] = float(
                steps_time(steps, dt, size_of, st.ctx.model, topo, links)
            )
        return t

    def flops_of(p: EinsumPlan) -> float:
        f = flops.get((p.lhs_target, p.rhs_target))
        if f is None:
            f = flops[(p.lhs_target, p.rhs_target)] = 2.0 * float(einsum_elements(p, size_of))
        return f

    # Wherever the product's sizes are known: the symbolic report's regions rank a plan by
    # the same roofline time, a Max of math and HBM traffic (`plan_candidates`), so a size
    # bound while others stay free, the compile at a point and the report at it choose alike.
    declared = numeric and st.all_declared(names)
    w_hbm = hbm_rate(st) if numeric else None
    hbm = caches.hbm

    def hbm_time(p: EinsumPlan) -> float:
        """The local product's HBM time (its operands and result read and written once),
        under the exact model with a chip; 0 otherwise (the book ranks by comms and math)."""
        if w_hbm is None:
            return 0.0
        key = (p.lhs_target, p.rhs_target, p.local_out, lv.dtype, rv.dtype)
        t = hbm.get(key)
        if t is None:
            t = hbm[key] = float(einsum_bytes(p, lv.dtype, rv.dtype, size_of)) / w_hbm
        return t

    def measure(p: EinsumPlan) -> Measure:
        """Each reshard's time, the local product's HBM time and the FLOPs."""
        # by identity, the entry holding the plan (`PlanCaches.ranks` says why and when safe)
        hit = measured.get(id(p))
        if hit is None or hit[0] is not p:
            hit = measured[id(p)] = (
                p,
                (
                    (
                        reshard_time(p.lhs_steps, lv.dtype),
                        reshard_time(p.rhs_steps, rv.dtype),
                        reshard_time(p.out_steps, dtype),
                        hbm_time(p),
                    ),
                    flops_of(p),
                ),
            )
        return hit[1]

    def rank(p: EinsumPlan, floors: Floors = (None, None, None)) -> Rank:
        """The plan's key; with `floors`, a lower bound on the key of the plan with the
        cheapest reshards (each reshard's floor where given, else its own time)."""
        times, flops = measure(p)
        comm = 0.0
        for t, low in zip(times[:3], floors, strict=True):
            comm += low if low is not None else t
        if shared is not None and (floors[2] is not None or left_to_sum(p, shared, reducible)):
            comm -= floors[2] if floors[2] is not None else times[2]  # the sum's, once
        collectives = len(p.collectives) if floors == (None, None, None) else 0
        # With every size known, rank by time (comms + compute: under the exact model the
        # local product's roofline time, the larger of its math and its HBM traffic, as
        # the report's ops count it); otherwise by communication alone, which gives the
        # book's defaults and matches the conditions reported.
        total = comm + max(flops / c if c and numeric else 0.0, times[3])
        if numeric:
            return (0, round(total, 15), flops, collectives)
        # Symbolic sizes: the book's rule for each axis's case first, then cost at the
        # typical sizes (the report lists the alternatives and when each would win).
        departures = book_departures(p, lv.layout, rv.layout, contract, requested)
        return (departures, round(total, 15), flops, collectives)

    ranks = caches.ranks.setdefault(shape, {})

    def objective(p: EinsumPlan) -> Rank:
        hit = ranks.get(id(p))
        if hit is None or hit[0] is not p:
            hit = ranks[id(p)] = (p, rank(p))
        return hit[1]

    search = caches.searches.get(shape)
    if search is None:
        pricings = (
            st.pricing(lv.dtype, lv.dims),
            st.pricing(rv.dtype, rv.dims),
            st.pricing(dtype, out_dims),
        )
        # Branch and bound needs the ranking and the reshards priced alike (every dim
        # declared) and one plan chosen by numbers; where a chooser may pick any plan at a
        # point (symbolic sizes), every plan's reshards are searched.
        bounded = numeric and all(st.declared(d) for d in (*lv.dims, *rv.dims))
        search = caches.searches[shape] = search_plans(
            lv.layout,
            rv.layout,
            contract,
            out_dims,
            requested,
            tuple(st.mesh),
            st.divisible,
            keep_partial,
            st.known_sizes(),
            objective,
            pricings=pricings,
            floor=rank if bounded else None,
            idle=st.idle_axes,
            # every size known or not (a bound size plans as a declared one), except
            # where each contraction keeps the plans of a planner without the
            # whole-program objective (`--objective statement`)
            wide=declared or st.ctx.options.objective != "statement",
            hint=hint,
        )

    def comms(p: EinsumPlan) -> float:
        return sum(measure(p)[0][:3])

    def local(p: EinsumPlan) -> float:
        times, flops = measure(p)
        return max(flops / c if c and numeric else 0.0, times[3])

    return Ranking(search, objective, shape, comms, local)


def with_copies(
    st: LoweringState,
    candidates: tuple[Candidate, ...],
    search: PlanSearch,
    lv: Value,
    rv: Value,
    sources: list[tuple[int, Value, Ranking]],
    links: Links,
    c: float | None,
) -> tuple[Candidate, ...]:
    """`candidates` (the plans of `search`, from the operands as they are), each with the
    copies it looks at where it is the cheapest of them (`Candidate.copies`), then the plans
    from each copy of `sources` (`copy_sources`), numbered on after them, in one list."""
    index = {(side, u.id): k for k, (side, u, _) in enumerate(sources, 1)}
    copies = (copies_of(st, lv, 4), copies_of(st, rv, 4))
    looks: dict[tuple[tuple[Step, ...], tuple[Step, ...]], tuple[int, ...]] = {}
    own = []
    for cand, p in zip(candidates, search.plans, strict=True):
        first = (p.lhs_steps[:1], p.rhs_steps[:1])
        if first not in looks:
            found = looked_at(st, (lv, rv), copies, first)
            looks[first] = tuple(
                index[x] for x in ((side, u.id) for side, u in found) if x in index
            )
        own.append(dataclasses.replace(cand, copies=looks[first]) if looks[first] else cand)
    out = tuple(own)
    start = len(search.plans)
    for k, (side, u, r) in enumerate(sources, 1):
        ldt, rdt = (u.dtype, rv.dtype) if side == 0 else (lv.dtype, u.dtype)
        dt = promote(ldt, rdt)
        out += plan_candidates(st, r.search, ldt, rdt, dt, links, c, start, k)
        start += len(r.search.plans)
    return out


def from_source(
    order: int, search: PlanSearch, sources: list[tuple[int, Value, Ranking]]
) -> tuple[int, int]:
    """Candidate `order` of `with_copies` as (its source, its place in that source's search):
    0 for `search`, k for the k-th of `sources`."""
    for k, plans in enumerate((search.plans, *(r.search.plans for _, _, r in sources))):
        if order < len(plans):
            return k, order
        order -= len(plans)
    raise AssertionError("no such candidate")


def plan_candidates(
    st: LoweringState,
    search: PlanSearch,
    ldt: str,
    rdt: str,
    dt: str,
    links: Links,
    c: float | None,
    first: int = 0,
    source: int = 0,
) -> tuple[Candidate, ...]:
    """Every plan keyed as the numeric planner keys it, over the sizes left symbolic: time
    (communication, plus compute at the chip's peak) and FLOPs (`passes.symbolic_plans`),
    each marked where it takes a role beyond the book's cases (`PlanSearch.widened`).
    Numbered from `first`; `source`, what the plans read (`Candidate.source`)."""
    model, topo = st.ctx.model, st.topology
    memo, recipes = st.caches.candidates, st.caches.recipes
    w_hbm = hbm_rate(st)
    out = []
    for i, p in enumerate(search.plans):
        key = (
            p.lhs_steps,
            p.rhs_steps,
            p.out_steps,
            p.lhs_target,
            p.rhs_target,
            p.local_out,
            ldt,
            rdt,
            dt,
        )
        if key not in memo:
            comm = (
                steps_time(p.lhs_steps, ldt, st.size_expr, model, topo, links)
                + steps_time(p.rhs_steps, rdt, st.size_expr, model, topo, links)
                + steps_time(p.out_steps, dt, st.size_expr, model, topo, links)
            )
            flops = 2 * einsum_elements(p, st.size_expr)
            # The product's roofline time under the exact model with a chip, the larger of
            # its math and its HBM traffic, as the compile with the sizes known ranks it
            # (`plan_search`): the regions split where the Max changes the plan.
            local: Num = flops / c if c else 0
            if w_hbm is not None:
                traffic = einsum_bytes(p, ldt, rdt, st.size_expr) / w_hbm
                local = roofline(local, traffic)
            time = comm + local
            memo[key] = (as_expr(time), as_expr(flops))
        time, flops = memo[key]
        local = local_layout(p)
        blocks = (p.lhs_target, p.rhs_target, p.local_out) if w_hbm is not None else None
        rkey = (local, ldt, rdt, dt, blocks)
        recipe = recipes.get(rkey)
        if recipe is None:
            recipe = recipes[rkey] = recipe_of(st, local, (ldt, rdt, dt), links, c, blocks)
        out.append(
            Candidate(
                first + i,
                time,
                flops,
                len(p.collectives),
                (p.lhs_steps, p.rhs_steps, p.out_steps),
                recipe,
                search.widened[i],
                # the blocks the search checks divide where every size is known
                st.open_shards((p.lhs_target, p.rhs_target, p.local_out)),
                source,
            )
        )
    return tuple(out)


def recipe_of(
    st: LoweringState,
    local: Layout,
    dtypes: tuple[str, str, str],
    links: Links,
    c: float | None,
    blocks: tuple[Layout, Layout, Layout] | None = None,
) -> Recipe:
    """How `plan_candidates` priced a plan, with the chip's figures as symbols where the chip (or
    `--set`) gives them a number (`passes.symbolic_plans.symbolic_time`); `blocks`, the
    operands' and the result's blocks whose HBM traffic the product's time counts (None: not
    counted)."""
    assert st.figures is not None  # hw_numbers ran
    values = st.figures[1]
    syms = HardwareSymbols(frozenset(st.dims))
    w = tuple((lv, syms.w(lv) if syms.w(lv).name in values else links.w[lv]) for lv in LEVELS)
    t = tuple((lv, syms.t(lv) if syms.t(lv).name in values else links.t[lv]) for lv in LEVELS)
    rate = syms.flops(dtypes[2]) if c else None
    hbm = None if blocks is None else (blocks, syms.w_hbm)
    return Recipe(dtypes, local, st.ctx.model, st.topology, w, t, rate, hbm)


def hbm_rate(st: LoweringState) -> float | None:
    """W_hbm for ranking plans, or None: the exact model with a chip (or a binding) ranks
    a plan by its reshards and its local product's roofline time, the larger of its math
    and its HBM traffic (the report's op time); the book's model by communication and
    math alone, as the book's answers do."""
    if st.ctx.model != "exact":
        return None
    st.hw_numbers("f32")
    assert st.figures is not None
    w = st.figures[1].get(HardwareSymbols(frozenset(st.dims)).w_hbm.name)
    return float(w) if w else None


def einsum_bytes(p: EinsumPlan, ldt: str, rdt: str, size_of: SizeOf) -> Num:
    """Bytes the local product reads and writes per device, as the report counts them
    (`passes.derive_cost`): both operands in their targets and the result."""
    return (
        local_bytes(p.lhs_target, ldt, size_of)
        + local_bytes(p.rhs_target, rdt, size_of)
        + local_bytes(p.local_out, promote(ldt, rdt), size_of)
    )


def local_layout(p: EinsumPlan) -> Layout:
    """The local product's block: every dim once, with the axes it is sharded over."""
    seen: dict[str, tuple[str, ...]] = {}
    for lay in (p.lhs_target, p.rhs_target):
        for d in lay.dims:
            seen.setdefault(d.dim, d.axes)
    return Layout(tuple(DimSharding(d, a) for d, a in seen.items()))


def einsum_elements(p: EinsumPlan, size_of: SizeOf) -> Num:
    """Multiply-adds per device of the local product: every dim once, at its shard size."""
    return local_elements(local_layout(p), size_of)


def record_decision(
    st: LoweringState,
    ranked: list[EinsumPlan],
    ranking: Ranking,
    numeric: bool,
    line: int,
    e: Contract,
    lv: Value,
    rv: Value,
    dtype: str,
    target: str,
    search: tuple[int, int] | None = None,
    candidates: tuple[Candidate, ...] = (),
    ordinal: int = -1,
    joint: JointPick | None = None,
) -> None:
    """The decision record: the distinct plans (at most three, best first), each with its
    communication time in SymPy and, where sizes are symbolic, the relation under which it
    would move fewer bytes than the chosen one. Nothing when there is nothing to explain.
    The alternatives of a ranking met before (the same plans in the same order: a
    repeated statement shape) are reused. None at all where the compile explains nothing
    (`InsertCollectives.explain`): pricing the alternatives in SymPy is a sixth of a plan's
    time."""
    if not st.explain:
        return
    # The ranking's statement shape fixes the objective the alternatives are priced by; its
    # plans, by identity, live in the shape's search (`PlanCaches.searches`) for the lowering.
    memo_key = (ranking.key, tuple(map(id, ranked)), numeric, search is None)
    rankings = st.caches.rankings
    if memo_key not in rankings:
        rankings[memo_key] = _alternatives(
            st, ranked, ranking.objective, numeric, lv, rv, dtype, search is None
        )
    made = rankings[memo_key]
    if made is None:
        return
    alts, moves_nothing = made
    st.decisions.append(
        Decision(
            line,
            target,
            lv.array,
            rv.array,
            e.dims,
            alts,
            numeric,
            st.chip is not None,
            search,
            moves_nothing,
            candidates,
            ordinal,
            (joint.joint, joint.alone) if joint else None,
        )
    )


def _alternatives(
    st: LoweringState,
    ranked: list[EinsumPlan],
    objective: Callable[[EinsumPlan], Rank],
    numeric: bool,
    lv: Value,
    rv: Value,
    dtype: str,
    uncapped: bool,
) -> tuple[tuple[Alternative, ...], bool] | None:
    distinct: list[EinsumPlan] = []
    seen: set[Signature] = set()
    for p in ranked:
        sig = plan_signature(p)
        if sig not in seen:
            seen.add(sig)
            distinct.append(p)
        if len(distinct) == 3:
            break
    if (len(distinct) < 2 or not distinct[0].collectives) and uncapped:
        return None  # one candidate, or the chosen plan moves nothing: nothing to explain
    syms = HardwareSymbols(frozenset(st.dims))
    sym_links = syms.links()
    t_syms = {syms.t(lv): 0 for lv in LEVELS}

    def sym_cost(p: EinsumPlan) -> sp.Expr:
        total = sp.Integer(0)
        for steps, dt in ((p.lhs_steps, lv.dtype), (p.rhs_steps, rv.dtype), (p.out_steps, dtype)):
            total += steps_time(steps, dt, size_symbol, st.ctx.model, st.topology, sym_links)
        return total

    def key(p: EinsumPlan) -> StepsKey:
        return (p.lhs_steps, p.rhs_steps, p.out_steps, lv.dtype, rv.dtype, dtype)

    chosen_key = key(distinct[0])
    memo = st.caches.alternatives
    # Bandwidth terms only (latencies zero): the relation compares bytes moved.
    bw_best = None if numeric else sym_cost(distinct[0]).subs(t_syms)
    alts = []
    for i, p in enumerate(distinct):
        memo_key = (key(p), chosen_key if i and bw_best is not None else None)
        if memo_key not in memo:
            cost = sym_cost(p)
            wins: sp.Basic | None = None
            if i and bw_best is not None:
                rel = False if bw_best == 0 else less_than(cost.subs(t_syms), bw_best)
                wins = sp.true if rel is True else sp.false if rel is False else rel
            memo[memo_key] = (cost, wins)
        cost, wins = memo[memo_key]
        alts.append(
            Alternative(
                p.lhs_steps, p.rhs_steps, p.out_steps, cost, float(objective(p)[1]), i == 0, wins
            )
        )
    return tuple(alts), bool(bw_best == 0)
