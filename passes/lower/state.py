"""The lowering's state: the sizes, values and ops emitted so far, and the planner's memos
(`PlanCaches`, typed). One `LoweringState` is made per lowering and passed to every part of it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shardc.lang.input_limits import MAX_DERIVED_NAME
from shardc.lang.layout import Layout
from shardc.lang.source import Span
from shardc.lang.syntax import Times
from shardc.passes.context import Context
from shardc.passes.cost_model import Links
from shardc.passes.einsum_plan import EinsumPlan, PlanSearch
from shardc.passes.ir import Alternative, Collective, Decision, LocalSlice, Op, Topology, Value
from shardc.passes.layout_cost import Pricing
from shardc.passes.reshard import Step
from shardc.passes.sizes import size_of
from shardc.passes.symbols import HardwareSymbols, as_expr, planning_figures, size_symbol

if TYPE_CHECKING:
    import sympy as sp

    from shardc.hardware import Chip
    from shardc.passes.lower.elementwise import Alignment
    from shardc.passes.symbolic_plans import Chooser, Recipe


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
    return f"{text[: MAX_DERIVED_NAME - tail - 1]}…{text[-tail:]}"


TYPICAL_DIM = 4096
TYPICAL_AXIS = 4
"""Where a size is symbolic, plans are ranked as if dims were 4096 and mesh axes 4; the report
then lists the alternatives with the condition under which each would win."""


Blocks = tuple[tuple[str, ...], ...]
"""Each dim's mesh axes, by position: where one term of a sum holds its blocks (the terms may
name a dim differently, `In[T->S]`)."""

SearchKey = tuple[
    Layout,
    Layout,
    str,
    str,
    tuple[str, ...],
    tuple[str, ...],
    "Layout | None",
    bool,
    "Layout | None",
    "frozenset[Blocks] | None",
    frozenset[str],
]
"""A contraction's statement shape, as the plan search sees it: the operands' layouts and
dtypes, the contracted dims, the output dims, the request, whether partial sums are kept, the
chain's hint and, for one term of a sum, where its earlier terms left their blocks for the
sum to gather and the mesh axes the sum reduces anyway (`contract.plan_search`)."""

Rank = tuple[int, float, float, int]
"""A plan's key in the ranking, smallest first (`contract.plan_search`)."""

Measure = tuple[tuple[float, float, float, float], float]
"""A plan's three reshard times, its local product's HBM time, and its FLOPs."""

StepsKey = tuple[tuple[Step, ...], tuple[Step, ...], tuple[Step, ...], str, str, str]
"""A plan's reshards on the left operand, the right one and the result, with their dtypes."""


@dataclass(slots=True)
class PlanCaches:
    """The planner's memos for one lowering. Within a lowering the sizes, topology, chip and
    cost model are fixed, so each key holds everything else a result depends on; programs
    repeat statement shapes, and searching and pricing in SymPy dominated planning before
    (docs/benchmarks.md, "What is cached")."""

    searches: dict[SearchKey, PlanSearch] = field(default_factory=dict)
    """The plan search of each statement shape."""
    ranks: dict[SearchKey, dict[int, tuple[EinsumPlan, Rank]]] = field(default_factory=dict)
    """Each plan's rank within its statement shape's search, by identity with the plan itself.
    `id()` keys on purpose: the search asks for every rank many times and a plan's hash is a
    dozen Python calls. Keyed by the plan's value instead, `shardc plan --card llama3-70b --hw
    tpu-v5p --chips 8960 --batch 4Mi` took 6% more CPU (paired median ratio 0.94, 4.40 s
    against 4.65 s, `benchmarks/bench_plan_paired.py --repeat 5`, 2026-11-27; docs/benchmarks.md,
    "What is cached"). Safe because each entry holds the plan: while the entry lives the plan
    is not freed, so no other object can get its id, and the lookup checks `entry[0] is plan`
    (tests/passes/test_memo.py pins it)."""
    measured: dict[SearchKey, dict[int, tuple[EinsumPlan, Measure]]] = field(default_factory=dict)
    """Each plan's reshard, HBM and FLOP figures, keyed as `ranks`."""
    seconds: dict[tuple[tuple[Step, ...], str], float] = field(default_factory=dict)
    """A reshard's time by its steps and dtype."""
    flops: dict[tuple[Layout, Layout], float] = field(default_factory=dict)
    """A local product's FLOPs by its operands' targets."""
    hbm: dict[tuple[Layout, Layout, Layout, str, str], float] = field(default_factory=dict)
    """A local product's HBM time by its operands' targets, its result and the dtypes."""
    candidates: dict[
        tuple[
            tuple[Step, ...],
            tuple[Step, ...],
            tuple[Step, ...],
            Layout,
            Layout,
            Layout,
            str,
            str,
            str,
        ],
        tuple[sp.Expr, sp.Expr],
    ] = field(default_factory=dict)
    """A plan's time and FLOPs over the symbolic sizes (`contract.plan_candidates`), by its
    steps, its operands' targets, its result's block and the dtypes."""
    recipes: dict[tuple[Layout, str, str, str, tuple[Layout, Layout, Layout] | None], Recipe] = (
        field(default_factory=dict)
    )
    """How a plan's local product was priced (`contract.recipe_of`), by its block, the dtypes
    and the blocks whose HBM traffic its time counts."""
    alignments: dict[tuple[object, ...], list[Alignment]] = field(default_factory=dict)
    """An elementwise op's candidate layouts by its operands, request and consumer
    (`elementwise._alignments`)."""
    summed: dict[
        tuple[object, ...],
        tuple[Layout | None, float | None, tuple[tuple[Layout, float], ...]],
    ] = field(default_factory=dict)
    """The layout a sum runs in by its operand, dims and request, and what the sum costs from
    there (`walk.summed_layout`); then the layouts `walk.leanest_sums` weighs, each with its
    measure."""
    reads: dict[tuple[object, ...], list[list[Step]]] = field(default_factory=dict)
    """An array's options before a statement that reads it, by its layout, dtype, the request
    and the later reads (`resharding.read_options`)."""
    moves: dict[tuple[Layout, Layout, str], float | None] = field(default_factory=dict)
    """A reshard's time by its source and target layouts and dtype, None where no plan makes
    it (`resharding.reads_cost`)."""
    rankings: dict[
        tuple[SearchKey, tuple[int, ...], bool, bool], tuple[tuple[Alternative, ...], bool] | None
    ] = field(default_factory=dict)
    """A ranking's alternatives for the decision record, by its statement shape and its plans
    in order, by identity: they live in `searches` (`contract.record_decision`)."""
    alternatives: dict[tuple[StepsKey, StepsKey | None], tuple[sp.Expr, sp.Basic | None]] = field(
        default_factory=dict
    )
    """An alternative's time in SymPy and the relation under which it beats the chosen plan."""
    rates: dict[str, float | None] = field(default_factory=dict)
    """The chip's matmul rate for planning, by dtype (`LoweringState.hw_numbers`)."""
    pricings: dict[tuple[str, tuple[str, ...]], Pricing] = field(default_factory=dict)
    """How the reshard planner prices each (dtype, dims) (`LoweringState.pricing`)."""


@dataclass(slots=True)
class LoweringState:
    """What the statement walk has seen and emitted, passed to every part of the lowering: the
    one mutable object of the pass, which ends with it (`walk.insert_collectives`)."""

    ctx: Context
    chooser: Chooser | None = None
    """Picks the plan where the ranking depends on symbolic sizes (None: the book's default)."""
    chip: Chip | None = None
    """The chip (`Unit.chip`): planning reads its link figures and rates."""
    topology: Topology | None = None
    """Where each mesh axis lives (`Unit.topology`)."""
    bindings: Mapping[str, float] = field(default_factory=dict)
    """The validated bindings (`Unit.bindings`): sizes bound with `--set`."""
    explain: bool = True
    idle_axes: bool = True
    """The pass's own switches (`passes.pipeline.InsertCollectives`)."""
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
    params: set[str] = field(default_factory=set)
    array_times: dict[str, Times] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    """`B = A` with nothing to do: B names A's blocks (alias -> the array it names)."""
    choices: int = 0
    sized_choices: int = 0
    """Choice points met so far (contractions and elementwise alignments): a chooser's ordinal."""
    statement: int = 0
    """The index of the statement being lowered (`walk.walk`)."""
    last_read: dict[str, int] = field(default_factory=dict)
    """By array name: the index of the last statement that reads it (`walk.walk`)."""
    read_in: dict[str, list[tuple[int, Layout]]] = field(default_factory=dict)
    """By array name: the statements whose left-hand side states a layout and whose right-hand
    side reads the array unrenamed outside a contraction (elementwise ops, calls, reshards),
    each with that layout (`walk.walk`): where a later statement will want the array, as
    `resharding.shared_options` weighs a copy both can slice."""
    summed_in: dict[str, list[tuple[int, Layout]]] = field(default_factory=dict)
    """By array name: the statements that sum the array unrenamed into a stated layout, each
    with the layout the sum runs in without moving its result (the stated one, the summed
    dims whole; `walk.walk`): where `walk._sum_there` weighs a copy a later sum can slice."""
    reshard_statements: int = 0
    """Reshard statements met so far: their choice points' ordinals (`resharding.shared_reshard`)
    count apart from the contractions', so a choice present in one lowering and not another
    shifts no contraction's ordinal."""
    resharded: dict[tuple[str, Layout], Value] = field(default_factory=dict)
    """An array brought to a layout, by (the value's id, the layout) (`resharding.apply_steps`)."""
    read_copies: set[str] = field(default_factory=set)
    """The ids of the copies `resharding.shared_reads` made: a product reads one even where its
    cheapest plan leaves that operand as it is (`contract.cached_operands`)."""
    copies: dict[str, list[Value]] = field(default_factory=dict)
    """By value id: the copies `apply_steps` made of it in one step (`cached_source`)."""
    figures: tuple[Links, dict[str, float | sp.Expr]] | None = None
    """The chip's link figures and figure values for planning (`hw_numbers`), once per run."""
    size_cache: dict[str, float | None] = field(default_factory=dict)
    """`known`'s answers; the walk empties it when a `mesh` or `dim` statement changes them."""
    caches: PlanCaches = field(default_factory=PlanCaches)
    term_gathers: set[Blocks] = field(default_factory=set)
    """Where the terms of the sum being lowered so far left their blocks for the sum to gather
    (`contract.contract`); emptied by each statement that is not a term."""
    term_reduced: set[str] = field(default_factory=set)
    """The mesh axes whose partial sums the sum being lowered reduces anyway: held by two of
    its terms as they stand (`contract.natural_partials`), or left by an earlier term
    (`contract.contract`); emptied by each statement that is not a term."""

    # ---- sizes -------------------------------------------------------------------------------
    def known(self, name: str) -> float | None:
        """The size of a dim or mesh axis as a number (`--set` applied), None when symbolic."""
        try:
            return self.size_cache[name]
        except KeyError:
            pass
        v = size_of(name, self.dims if name in self.dims else self.mesh, self.bindings)
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
        """The program gives `dim` a number, or `--set` binds every size the program leaves
        symbolic (`walk.as_declared`); a dim bound while others stay free stays symbolic."""
        return self.dims.get(dim) is not None

    def pricing(self, dtype: str, dims: Sequence[str]) -> Pricing:
        """How the reshard planner prices an array's steps: the chip's link figures, and each
        dim at its size where the program declares one (`declared`), else at TYPICAL_DIM,
        even when a binding gives it a size: a reshard's plan must be the same in a report
        with a size left symbolic and in the compile that binds it (`Report.at`), as the plans
        of a contraction are (`passes.symbolic_plans`)."""
        key = (dtype, tuple(dims))
        hit = self.caches.pricings.get(key)
        if hit is None:  # one object per array shape: the planner's memo key compares by identity
            known = {d: v for d in dims if self.declared(d) and (v := self.known(d)) is not None}
            hit = self.caches.pricings[key] = Pricing.of(
                dtype,
                known,
                float(TYPICAL_DIM),
                self.ctx.model,
                self.topology,
                self.hw_numbers(dtype)[0],
            )
        return hit

    def all_known(self, names: Iterable[str]) -> bool:
        return all(self.known(n) is not None for n in names)

    def all_declared(self, names: Iterable[str]) -> bool:
        """Every name is a dim or mesh axis the program gives a number (`--set` aside)."""
        return all((self.dims if n in self.dims else self.mesh).get(n) is not None for n in names)

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

    def open_shards(self, layouts: Iterable[Layout]) -> tuple[tuple[sp.Expr, sp.Expr], ...]:
        """The blocks of `layouts` whose divisibility a free size decides, as (the dim's size,
        the number of shards) formulas (`passes.symbolic_plans.Candidate.shards`)."""
        out: dict[tuple[str, tuple[str, ...]], tuple[sp.Expr, sp.Expr]] = {}
        for layout in layouts:
            for d in layout.dims:
                key = (d.dim, d.axes)
                if d.axes and key not in out and not self.all_known((d.dim, *d.axes)):
                    shards = as_expr(math.prod(self.size_expr(a) for a in d.axes))
                    out[key] = (as_expr(self.size_expr(d.dim)), shards)
        return tuple(out.values())

    def hw_numbers(self, dtype: str) -> tuple[Links, float | None]:
        """Link figures and C for planning (passes.symbols.planning_figures), once per run."""
        if self.figures is None:
            self.figures = planning_figures(
                self.chip, self.bindings, frozenset(self.dims), self.ctx.options.matmul_precision
            )
        links, values = self.figures
        rates = self.caches.rates
        if dtype not in rates:
            c = values.get(HardwareSymbols(frozenset(self.dims)).flops(dtype).name)
            rates[dtype] = None if c is None else float(c)
        return links, rates[dtype]

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

    def ordered(self, axes: Iterable[str]) -> tuple[str, ...]:
        order = list(self.mesh)
        return tuple(sorted(axes, key=lambda a: order.index(a) if a in order else len(order)))
