"""Plan choices that depend on sizes left symbolic.

With every size of a contraction known, the planner ranks its plans by one key: the time `T`
(communication, plus compute at the chip's peak when there is a chip; the planning figures of
`passes.symbols.planning_figures` otherwise), rounded to 1e-15 s, then FLOPs, then the number
of collectives, then the order the search enumerates them in (`plan_key`). Where sizes are
symbolic the same key is a function of them: each plan's `T` and FLOPs become SymPy formulas over
the free sizes (a `Candidate`), hardware figures staying numbers.

This module evaluates those keys: at one point (`AtPoint`, the plan a compile with those sizes
bound chooses), and over a fixed sample of points (`winners`, the plans that are cheapest
somewhere: the report's regions, each with the relations that bound it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import sympy as sp

from shardc.lang import input_limits
from shardc.lang.input_limits import MAX_REGIONS
from shardc.passes.memo import (
    CANDIDATE_FORMULAS,
    FLOAT_FUNCTIONS,
    FREE_SYMBOLS,
    LAMBDA_FUNCTIONS,
    LAMBDA_PRINTERS,
    REGION_SAMPLES,
    SCALED_MAX,
    memoized,
    typed,
)

if TYPE_CHECKING:
    from shardc.passes.context import Model


@dataclass(frozen=True, slots=True)
class Candidate:
    """One plan of a contraction, keyed as the planner keys it, over the free sizes."""

    order: int
    """Its place in the search's enumeration (the last tie-break)."""
    time: sp.Expr
    flops: sp.Expr
    collectives: int
    steps: tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]] = ((), (), ())
    """Its reshard steps on the left operand, the right operand and the result."""
    recipe: Recipe | None = field(default=None, compare=False)
    """How `time` was priced, to price it again with every size and figure a symbol
    (`symbolic_time`): a region's boundary as a formula."""
    widened: bool = False
    """Whether it gives an axis a role beyond the book's cases (`PlanSearch.widened`): a
    decision lists such plans only where one ranks first; the whole-program search ranks
    them with the others (`passes.objective.ranked`)."""
    shards: tuple[tuple[sp.Expr, sp.Expr], ...] = field(default=(), compare=False)
    """Each block its layouts cut whose size depends on a free size, as (the dim's size, the
    number of shards): a plan runs at a point only where each divides (`divides`), as a
    compile with those sizes bound plans only layouts whose shards divide their dims."""
    source: int = 0
    """What it reads: 0, the operands as they are; k > 0, the k-th copy of an operand that an
    earlier reshard made (`passes.lower.contract.copy_sources`)."""
    copies: tuple[int, ...] = ()
    """For a plan of the operands as they are (`source` 0): the copies looked at, in order,
    where it is the cheapest of those plans (`sourced`)."""

    def __post_init__(self) -> None:
        # The searches evaluate each formula at thousands of points, each evaluation two
        # lookups keyed by the formula (`free_symbols`, `_function`); each lowering builds its
        # formulas anew, and a dict compares an equal key that is another object tree by tree
        # (SymPy's `__eq__`). One object per formula makes those lookups identity hits.
        object.__setattr__(self, "time", shared(self.time))
        object.__setattr__(self, "flops", shared(self.flops))
        if self.shards:
            shards = tuple((shared(n), shared(d)) for n, d in self.shards)
            object.__setattr__(self, "shards", shards)


@dataclass(frozen=True, slots=True)
class Recipe:
    """What a candidate's time is made of besides its steps: the dtypes of the operands and
    the result, the local product's block (`local`: each dim with its axes), the cost model,
    the topology, the chip's figures by level (`w`, `t`: a symbol where the chip or `--set`
    gives a number, else the planning default, a number) and the FLOP/s rate's symbol (None:
    no chip, communication alone)."""

    dtypes: tuple[str, str, str]
    local: Any
    model: Model
    topology: Any
    w: tuple[tuple[str, Any], ...]
    t: tuple[tuple[str, Any], ...]
    rate: sp.Symbol | None
    hbm: tuple[tuple[Any, Any, Any], sp.Symbol] | None = None
    """The operands' and the result's blocks and W_hbm's symbol where the product's time is
    its roofline time, the larger of its math and its HBM traffic (the exact model with a
    chip); None: math alone."""


def symbolic_time(c: Candidate, sizes: Mapping[str, int] | None = None) -> sp.Expr | None:
    """`c.time` with the chip's figures as symbols (`W_ici`, `t_hop`, `C`) and every size a
    symbol, or the sizes in `sizes` as their numbers (a mesh axis's number decides its ring);
    None without a recipe. The same functions price it as the lowering did, so at the
    figures and sizes the compile used it is `c.time` (`boundary` checks that).

    >>> symbolic_time(Candidate(0, sp.Integer(0), sp.Integer(0), 0)) is None
    True
    """
    r = c.recipe
    if r is None:
        return None
    from shardc.passes.cost_model import Links
    from shardc.passes.layout_cost import local_bytes, local_elements, steps_time
    from shardc.passes.symbols import as_expr, size_symbol

    known = sizes or {}

    def size_of(name: str) -> Any:
        return known[name] if name in known else size_symbol(name)

    links = Links(dict(r.w), dict(r.t))
    total: Any = 0
    for steps, dtype in zip(c.steps, r.dtypes, strict=True):
        total = total + steps_time(steps, dtype, size_of, r.model, r.topology, links)
    local: Any = 2 * local_elements(r.local, size_of) / r.rate if r.rate is not None else 0
    if r.hbm is not None:
        (lhs, rhs, out), w_hbm = r.hbm
        moved = sum(
            local_bytes(b, dt, size_of) for b, dt in zip((lhs, rhs, out), r.dtypes, strict=True)
        )
        local = roofline(local, moved / w_hbm)
    return as_expr(total + local)


def roofline(math: Any, traffic: Any) -> sp.Expr:
    """`Max(math, traffic)` of a product's math and HBM times, expanded and left unevaluated
    where a size is free: SymPy's comparison of two polynomials in positive sizes (which it
    cannot order) cost seconds per program.

    >>> roofline(sp.Integer(2), sp.Integer(3)), roofline(sp.Symbol("B"), 2 * (sp.Symbol("B") + 1))
    (3, Max(B, 2*B + 2))
    """
    from shardc.passes.symbols import as_expr

    return _unevaluated(expanded(as_expr(math)), expanded(as_expr(traffic)))


def _unevaluated(*args: sp.Expr) -> sp.Expr:
    """`Max(*args)`, unevaluated where an argument has a free symbol (`roofline`)."""
    if all(a.is_number for a in args):
        return sp.Max(*args)
    return sp.Max(*args, evaluate=False)


def replaced(e: sp.Basic, swap: Mapping[sp.Basic, sp.Basic]) -> sp.Basic:
    """`e.xreplace(swap)`, a Max with a free size (`roofline`) and a relation holding one
    rebuilt unevaluated: SymPy would try to order their arguments, seconds per program.

    >>> B = sp.Symbol("B", positive=True)
    >>> replaced(roofline(B, 2 * B + 1) < sp.Float(0.5) * B, {sp.Float(0.5): sp.Rational(1, 2)})
    Max(B, 2*B + 1) < B/2
    """
    if not e.has(sp.Max):
        return e.xreplace(swap)
    if e in swap:
        return swap[e]
    args = tuple(replaced(a, swap) for a in e.args)
    if args == e.args:
        return e
    if isinstance(e, sp.Max):
        return _unevaluated(*args)
    if isinstance(e, sp.core.relational.Relational):
        return e.func(*args, evaluate=False)
    return e.func(*args)


def plan_key(time: float, flops: float, collectives: int) -> tuple[float, float, int]:
    """The planner's ranking key of a plan with every size known (lower is better).

    >>> plan_key(1.0000000000000002e-3, 8.0, 1) == plan_key(1e-3, 8.0, 1)
    True
    """
    return (round(time, 15), flops, collectives)


class Chooser(Protocol):
    """Picks the plan of a contraction whose ranking depends on symbolic sizes."""

    def choose(self, ordinal: int, candidates: Sequence[Candidate]) -> int | None:
        """The `order` of the plan to emit for the `ordinal`-th contraction of the program, or
        None for the book's default."""
        ...


@memoized(LAMBDA_PRINTERS, lambda modules: modules)
def _printer(modules: str) -> Any:
    """`lambdify`'s own printer for `modules`, except that a Float prints every digit of its
    double (`repr`), not 15: `1.33333333333333*J` at J=3 gives 15.99999999999999 where the
    planner, computing in doubles, gets 16.0, and an exact tie between plans would break
    differently at a point than in a compile with the point's sizes bound.

    >>> J = sp.Symbol("J")
    >>> sp.lambdify([J], 12 * J / sp.Float(9.0) + 12, printer=_printer("math"))(3.0)
    16.0
    """
    from sympy.printing.numpy import NumPyPrinter
    from sympy.printing.pycode import PythonCodePrinter

    base = NumPyPrinter if modules == "numpy" else PythonCodePrinter

    class Printer(base):  # type: ignore[valid-type, misc]
        def _print_Float(self, expr: sp.Float) -> str:
            return repr(float(expr))

    return Printer(
        {
            "fully_qualified_modules": False,
            "inline": True,
            "allow_unknown_functions": True,
            "user_functions": {},
        }
    )


# No docstring for the generated function where SymPy can leave it out (1.13 on): it prints
# the whole formula again, a third of a `lambdify` of a roofline time.
_NO_DOCSTRING = (
    {"docstring_limit": 0} if "docstring_limit" in inspect.signature(sp.lambdify).parameters else {}
)


def shared(expr: sp.Expr) -> sp.Expr:
    """The one object `Candidate` keeps for a formula equal to `expr` (`expr` itself the
    first time).

    >>> B = sp.Symbol("B")
    >>> shared(2 * B + 1) is shared(2 * B + 1), shared(2.0 * B) == shared(2 * B)
    (True, False)
    """
    found = CANDIDATE_FORMULAS.get(expr)
    if found is None:
        CANDIDATE_FORMULAS[expr] = found = expr
    return found


@memoized(FREE_SYMBOLS, lambda expr: expr)
def free_symbols(expr: sp.Basic) -> frozenset[sp.Symbol]:
    """`expr.free_symbols`, asked once per formula: the searches evaluate the same candidate
    times at many points, and SymPy walks the whole formula for its symbols on each ask."""
    return frozenset(expr.free_symbols)


@memoized(LAMBDA_FUNCTIONS, lambda expr, modules: (expr, modules))
def _function(expr: sp.Expr, modules: str) -> tuple[tuple[str, ...], Callable[..., Any]]:
    syms = tuple(sorted(free_symbols(expr), key=lambda s: s.name))
    return (
        tuple(s.name for s in syms),
        sp.lambdify(syms, expr, modules=modules, printer=_printer(modules), **_NO_DOCSTRING),
    )


@memoized(FLOAT_FUNCTIONS, lambda expr: expr)
def _in_floats(expr: sp.Expr) -> tuple[tuple[str, ...], Callable[..., Any] | float]:
    """`_function(expr, "math")`, or `expr`'s number where it has no free symbol: one lookup
    for `evaluate`, which the searches call millions of times."""
    return _function(expr, "math") if free_symbols(expr) else ((), float(expr))


def evaluate(expr: sp.Expr, point: Mapping[str, float]) -> float | None:
    """`expr` at `point` (a number per size name), in floats; None when a size is missing."""
    names, fn = _in_floats(expr)
    if isinstance(fn, float):
        return fn
    try:
        return float(fn(*[float(point[n]) for n in names]))
    except KeyError:
        return None


def divides(c: Candidate, point: Mapping[str, float]) -> bool:
    """Whether every block `c`'s layouts cut divides its dim at `point` (`Candidate.shards`;
    a size `point` lacks: yes)."""
    for size, shards in c.shards:
        n, d = evaluate(size, point), evaluate(shards, point)
        if n is not None and d is not None and n % d:
            return False
    return True


COPY_MARGIN = 1e-9
"""A copy of an operand replaces the operand only where its cheapest plan is faster than the
operand's own by more than this fraction (`passes.lower.contract.cached_operands`)."""


def sourced(
    candidates: Sequence[Candidate], point: Mapping[str, float], whole: bool = False
) -> Sequence[Candidate] | None:
    """The candidates of what a compile at `point` plans from (`Candidate.source`): the
    operands as they are, or the copy that the operands' cheapest plan looks at
    (`Candidate.copies`) whose own cheapest plan is fastest, by more than `COPY_MARGIN`
    where it is the operands' (`passes.lower.contract.cached_operands`, which chooses so
    with the sizes known). None where a size has no value. With `whole`, as `AtPoint.whole`.

    >>> a = Candidate(0, sp.Integer(2), sp.Integer(1), 1, copies=(1,))
    >>> b = Candidate(1, sp.Integer(1), sp.Integer(1), 1, source=1)
    >>> [c.order for c in sourced([a, b], {})], [c.order for c in sourced([a], {})]
    ([1], [0])
    """
    if all(c.source == 0 for c in candidates):
        return candidates
    least: dict[int, float] = {}
    own: tuple[tuple[tuple[float, float, int], int], Candidate] | None = None
    for c in candidates:
        if whole and not divides(c, point):
            continue
        t, f = evaluate(c.time, point), evaluate(c.flops, point)
        if t is None or f is None:
            return None
        key = plan_key(t, f, c.collectives)
        least[c.source] = min(least.get(c.source, key[0]), key[0])
        if c.source == 0 and (own is None or (key, c.order) < own[0]):
            own = ((key, c.order), c)
    pick = 0
    if own is not None:
        bar = least[0] * (1 - COPY_MARGIN)
        for k in own[1].copies:
            if k in least and least[k] < bar:
                pick, bar = k, least[k]
    return [c for c in candidates if c.source == pick]


@dataclass
class AtPoint:
    """The plan a compile with the sizes of `point` bound would choose, at every contraction."""

    point: Mapping[str, float]
    whole: bool = False
    """Whether the point is one a compile runs at (`Report.at`): plans whose blocks do not
    divide there are skipped, as that compile's search never forms them. A region's sample
    point (any whole size) keeps every plan, or the regions would split at each divisor."""

    def choose(self, ordinal: int, candidates: Sequence[Candidate]) -> int | None:
        best: tuple[tuple[float, float, int], int] | None = None
        mine = sourced(candidates, self.point, self.whole)
        if mine is None:
            return None
        for c in mine:
            if self.whole and not divides(c, self.point):
                continue  # not a plan a compile at the point can run
            t, f = evaluate(c.time, self.point), evaluate(c.flops, self.point)
            if t is None or f is None:
                return None
            key = (plan_key(t, f, c.collectives), c.order)
            if best is None or key < best:
                best = key
        return None if best is None else best[1]


# ---- regions over a sample of points -------------------------------------------------------
SAMPLES = 4096
"""Points per sample; sizes spread over 2**0 .. 2**36 (mesh axes 2**0 .. 2**12), log-uniform."""


@memoized(REGION_SAMPLES, lambda names, mesh: (names, mesh))
def _sample(names: tuple[str, ...], mesh: frozenset[str]) -> dict[str, Any]:
    """`sample_points`, kept (read only) for the next decision over the same sizes."""
    return sample_points(names, mesh)


def sample_points(
    names: Sequence[str], mesh: frozenset[str] = frozenset(), n: int = SAMPLES
) -> dict[str, Any]:
    """A fixed, quasi-random sample (a Halton sequence) of whole sizes for `names`."""
    import numpy as np

    primes = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53)
    idx = np.arange(1, n + 1)
    out: dict[str, Any] = {}
    for k, name in enumerate(sorted(names)):
        base = primes[k % len(primes)]
        u = np.zeros(n)
        f, i = 1.0, idx.copy()
        while i.any():
            f /= base
            u += f * (i % base)
            i //= base
        top = 12 if name in mesh else 36
        out[name] = np.rint(2.0 ** (u * top))
    return out


def winners(candidates: Sequence[Candidate], points: Mapping[str, Any]) -> Any:
    """The `order` of the winning candidate at each sample point (numpy array)."""
    import numpy as np

    size = len(next(iter(points.values()))) if points else 1

    def values(expr: sp.Expr) -> Any:
        if not free_symbols(expr):
            return np.full(size, float(expr))
        names, fn = _function(expr, "numpy")
        return np.broadcast_to(np.asarray(fn(*[points[n] for n in names]), dtype=float), size)

    cands = sorted(candidates, key=lambda c: c.order)
    t = np.round(np.vstack([values(c.time) for c in cands]), 15)
    if any(c.source for c in cands):
        t = np.where(_sourced(cands, t, values), t, np.inf)
    ok = t == t.min(axis=0)
    f = np.where(ok, np.vstack([values(c.flops) for c in cands]), np.inf)
    ok &= f == f.min(axis=0)
    m = np.where(ok, np.array([[c.collectives] for c in cands], dtype=float), np.inf)
    ok &= m == m.min(axis=0)
    orders = np.array([c.order for c in cands])
    return orders[ok.argmax(axis=0)]


def _sourced(cands: Sequence[Candidate], t: Any, values: Callable[[sp.Expr], Any]) -> Any:
    """Which of `cands` (by `order`, their rounded times `t`) read what a compile at each
    point plans from (`sourced`): a boolean array, a row per candidate."""
    import numpy as np

    source = np.array([c.source for c in cands])
    own = source == 0
    # the operands' cheapest plan at each point, keyed as `winners` keys plans
    tt = np.where(own[:, None], t, np.inf)
    ok = tt == tt.min(axis=0)
    f = np.where(ok, np.vstack([values(c.flops) for c in cands]), np.inf)
    ok &= f == f.min(axis=0)
    m = np.where(ok, np.array([[c.collectives] for c in cands], dtype=float), np.inf)
    ok &= m == m.min(axis=0)
    first = ok.argmax(axis=0)
    pick = np.zeros(t.shape[1], dtype=np.int64)
    bar = tt.min(axis=0) * (1 - COPY_MARGIN)
    looked = {k for c in cands for k in c.copies}
    for k in sorted(looked):
        mine = source == k
        if not mine.any():
            continue
        at = np.where(mine[:, None], t, np.inf).min(axis=0)
        seen = np.array([k in c.copies for c in cands])[first]
        take = seen & (at < bar)
        pick[take] = k
        bar = np.where(take, at, bar)
    return source[:, None] == pick[None, :]


def cheaper(a: sp.Expr, b: sp.Expr) -> sp.Basic | bool:
    """`a < b` as a relation between two sums of positive terms, the common monomial factor of
    `b - a` divided out (sizes are positive); True/False when the sign is fixed. A cheaper
    `passes.conditions.less_than` for times with floating-point coefficients.

    >>> B, D = sp.symbols("B D", positive=True)
    >>> cheaper(2.0 * B * D, B * D + 3.0 * B**2)
    1.0*D < 3.0*B
    """
    maxes = (a.atoms(sp.Max) | b.atoms(sp.Max)) if a.has(sp.Max) or b.has(sp.Max) else set()
    # Each Max (a product's roofline time) an opaque positive term while the sides are
    # expanded and scaled: SymPy expanding and ordering inside them cost seconds a program.
    hide = {m: sp.Dummy() for m in maxes}
    show = {d: m for m, d in hide.items()}
    diff = expanded(b.xreplace(hide) - a.xreplace(hide))  # > 0 where a is cheaper
    terms = sp.Add.make_args(diff)
    free = diff.free_symbols
    syms = free - set(show)
    if not free:
        return bool(diff > 0)
    sizes = free_symbols(a) | free_symbols(b)  # a Max may hold sizes the rest does not
    if show and len(sizes) == 1 and free & set(show):
        solved = _half_line(diff.xreplace(show), next(iter(sizes)))
        if solved is not None:
            return solved
    powers = [sp.Mul(*t.as_coeff_mul()[1]).as_powers_dict() for t in terms]
    common = {s: min(p.get(s, 0) for p in powers) for s in syms}
    factor = sp.Mul(*[s**e for s, e in common.items() if e])
    pos: list[sp.Expr] = []
    neg: list[sp.Expr] = []
    for t in terms:
        t = expanded(t / factor) if factor is not sp.S.One else t
        (neg if t.could_extract_minus_sign() else pos).append(t)
    if not neg:
        return True
    if not pos:
        return False
    # Scale so a size term has coefficient 1, on the smaller side where it has one (a term
    # outside any Max where there is one).
    sized = [t for t in (*neg, *pos) if t.free_symbols & syms]
    lead = next((t for t in sized if not t.free_symbols & set(show)), sized[0] if sized else neg[0])
    scale = abs(lead.as_coeff_Mul()[0])
    lhs = expanded(sp.Add(*[-t for t in neg]) / scale)
    rhs = expanded(sp.Add(*pos) / scale)
    if show:  # unevaluated: SymPy cannot order the sides (`replaced`)
        return sp.StrictLessThan(_shown(lhs, show), _shown(rhs, show), evaluate=False)
    return lhs < rhs


def expanded(e: sp.Expr) -> sp.Expr:
    """`sp.expand(e)`, without its walk where `e` is a sum of monomials, which `expand` leaves
    as it is: most of `cheaper`'s time went to expanding what SymPy had expanded already (a
    number times a sum distributes as it is built).

    >>> B, D = sp.symbols("B D", positive=True)
    >>> expanded(sp.Float(0.5) * (B * D + 3 * B)), expanded((B + 1) ** 2)
    (0.5*B*D + 1.5*B, B**2 + 2*B + 1)
    """
    if all(_monomial(t) for t in sp.Add.make_args(e)):
        return e
    return sp.expand(e)


def _monomial(e: sp.Expr) -> bool:
    """Whether `e` is a number, a symbol, an integer power of one, or a product of those: a term
    `expand` leaves as it is."""
    if e.is_Mul:
        return all(_factor(f) for f in e.args)
    return _factor(e)


def _factor(e: sp.Expr) -> bool:
    if e.is_Number or e.is_Symbol:
        return True
    return bool(e.is_Pow and e.base.is_Symbol and e.exp.is_Integer)


def _shown(e: sp.Expr, show: Mapping[sp.Basic, sp.Basic]) -> sp.Expr:
    """`e` with each hidden Max (`cheaper`) back, a positive coefficient moved into its
    arguments so that a roofline term reads like the others.

    >>> B, m = sp.Symbol("B", positive=True), sp.Dummy(positive=True)
    >>> _shown(B + m / 2, {m: roofline(4 * B, B + 6)})
    B + Max(2*B, B/2 + 3)
    """
    out = []
    for t in sp.Add.make_args(e):
        coeff, rest = t.as_coeff_Mul()
        if rest in show and coeff > 0:
            out.append(_scaled(coeff, show[rest]))
        else:
            out.append(t.xreplace(show))
    return sp.Add(*out)


@memoized(SCALED_MAX, lambda coeff, m: (typed(coeff), m))
def _scaled(coeff: sp.Expr, m: sp.Basic) -> sp.Expr:
    """`coeff * m` for a positive number `coeff` and a Max, as the Max of its arguments times
    `coeff` (`_shown`): a region's bounds scale the same roofline term alike, a third as many
    distinct terms as bounds hold.

    >>> B = sp.Symbol("B", positive=True)
    >>> _scaled(sp.Rational(1, 2), roofline(4 * B, B + 6))
    Max(2*B, B/2 + 3)
    """
    return _unevaluated(*(expanded(coeff * u) for u in m.args))


def _half_line(diff: sp.Expr, x: sp.Symbol) -> sp.Basic | bool | None:
    """Where `diff > 0` for a size `x > 0`, `diff` linear in `x` but for Max terms of linear
    arguments (products' roofline times): `c < x`, `x < c`, True or False where that is the
    whole set (found between the points where a Max changes argument); None otherwise.

    >>> B = sp.Symbol("B", positive=True)
    >>> _half_line(B + sp.Max(B / 10, 16 + B / 30) - sp.Max(B / 10, 263 + B / 400) - 7659, B)
    7659 < B
    """
    maxes = diff.atoms(sp.Max)
    cuts: set[sp.Expr] = set()
    for m in maxes:
        for i, u in enumerate(m.args):
            for v in m.args[i + 1 :]:
                root = _root(sp.expand(u - v), x)
                if root is None:
                    return None
                if root is not sp.nan and root > 0:
                    cuts.add(root)

    def at(lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
        """`diff` between `lo` and `hi`, each Max its argument there."""
        mid = (lo + hi) / 2 if hi is not sp.oo else 2 * lo + 1
        taken = {}
        for m in maxes:
            values = [float(a.xreplace({x: mid})) for a in m.args]
            taken[m] = m.args[values.index(max(values))]
        return sp.expand(diff.xreplace(taken))

    points = sorted(cuts, key=float)
    edges = [sp.Integer(0), *points, sp.oo]
    for lo, hi in zip(edges, edges[1:], strict=False):
        root = _root(at(lo, hi), x)
        if root is None:
            return None
        if root is not sp.nan and lo < root and (hi is sp.oo or root < hi):
            cuts.add(root)
    points = sorted(cuts, key=float)
    edges = [sp.Integer(0), *points, sp.oo]
    signs = []
    for lo, hi in zip(edges, edges[1:], strict=False):
        mid = (lo + hi) / 2 if hi is not sp.oo else 2 * lo + 1
        signs.append(float(diff.xreplace({x: mid})) > 0)
    changes = [k for k in range(1, len(signs)) if signs[k] != signs[k - 1]]
    if not changes:
        return signs[0]
    if len(changes) > 1:
        return None
    c = points[changes[0] - 1]
    return c < x if signs[-1] else x < c


def _root(e: sp.Expr, x: sp.Symbol) -> sp.Expr | None:
    """The root of `e`, linear in `x`: nan where `e` does not depend on `x`; None where it is
    not linear."""
    if not e.has(x):
        return sp.nan
    if not e.is_polynomial(x):
        return None
    poly = sp.Poly(e, x)
    if poly.degree() != 1:
        return None
    slope, rest = poly.all_coeffs()
    return -rest / slope


def exact(e: sp.Basic) -> sp.Basic:
    """`e` with each floating-point number (a chip figure folded into a plan's time) as the
    exact rational of its shortest decimal, which gives the same double back: a boundary
    reads `765940063476563/100000000000 < B`, not `7659.40063476563 < 1.0*B`.

    >>> B = sp.Symbol("B", positive=True)
    >>> exact(sp.Float(0.5) * B < sp.Float(7659.40063476563))
    B/2 < 765940063476563/100000000000
    """
    floats = e.atoms(sp.Float)
    if not floats:
        return e
    return replaced(e, {f: sp.Rational(repr(float(f))) for f in floats})


@dataclass(frozen=True, slots=True)
class Region:
    """Where one plan is the cheapest: it beats each other winner (`bounds`, simplified
    relations over the free sizes); `share` is the fraction of the sample it wins."""

    order: int
    bounds: tuple[sp.Basic, ...]
    share: float

    @property
    def condition(self) -> sp.Basic:
        if not self.bounds:
            return sp.true
        if len(self.bounds) > 1 and any(b.has(sp.Max) for b in self.bounds):
            # as built, where a bound holds a Max: SymPy sorts and canonicalizes the bounds
            # otherwise, seconds for a program (`replaced`)
            return sp.And._from_args(self.bounds)
        return sp.And(*self.bounds)


@dataclass(frozen=True, slots=True)
class RegionFinder:
    """Regions of a decision's candidates over a sample of the free sizes (one sample per set
    of size names and mesh axes, `passes.memo.REGION_SAMPLES`)."""

    mesh: frozenset[str] = frozenset()

    def regions(self, candidates: Sequence[Candidate]) -> tuple[Region, ...]:
        names = tuple(
            sorted(
                {s.name for c in candidates for s in (free_symbols(c.time) | free_symbols(c.flops))}
            )
        )
        if not names:
            return ()
        won = winners(candidates, _sample(names, self.mesh))
        import numpy as np

        orders, counts = np.unique(won, return_counts=True)
        if len(orders) < 2:
            return ()
        by_order = {c.order: c for c in candidates}
        out = []
        for o, k in zip(orders.tolist(), counts.tolist(), strict=True):
            me = by_order[o]
            bounds = []
            for other in orders.tolist():
                if other == o:
                    continue
                rel = cheaper(me.time, by_order[other].time)
                if rel is not True:
                    bounds.append(sp.false if rel is False else rel)
            out.append(Region(o, tuple(dict.fromkeys(bounds)), k / len(won)))
        return tuple(sorted(out, key=lambda r: -r.share))


# ---- variants: the whole program in each region ------------------------------------------
class Branch(Exception):
    """Raised by `OnSample` where the winners of a choice differ across the sample points that
    reach it: the enumeration lowers once per winner."""

    def __init__(self, ordinal: int, candidates: Sequence[Candidate], orders: list[int]):
        super().__init__(ordinal)
        self.ordinal, self.candidates, self.orders = ordinal, candidates, orders


@dataclass
class OnSample:
    """A chooser over a sample of points: at each choice it keeps the points whose winner is
    the plan `forced` names (or the only winner left), and raises `Branch` where several
    plans win on the points left."""

    points: Mapping[str, Any]
    forced: Mapping[int, int]
    mask: Any = None
    bounds: list[sp.Basic] = field(default_factory=list)
    path: list[tuple[tuple[Candidate, ...], int]] = field(default_factory=list)
    """Each choice made on the sample, in order: its candidates and the plan picked."""
    sides: dict[sp.Basic, tuple[Candidate, Candidate]] = field(default_factory=dict)
    """Each bound's two plans: the one picked, and the one it is cheaper than there."""

    def bound(self, me: Candidate, other: Candidate) -> None:
        """Where `me` is cheaper than `other`, as a relation over the free sizes."""
        rel = cheaper(me.time, other.time)
        if rel is not True:
            rel = sp.false if rel is False else rel
            self.bounds.append(rel)
            self.sides.setdefault(rel, (me, other))

    def choose(self, ordinal: int, candidates: Sequence[Candidate]) -> int | None:
        import numpy as np

        names = {s.name for c in candidates for s in (free_symbols(c.time) | free_symbols(c.flops))}
        if not names <= self.points.keys():
            return None
        won = winners(candidates, self.points)
        if self.mask is None:
            self.mask = np.ones(len(won), dtype=bool)
        present = sorted(set(won[self.mask].tolist()))
        if ordinal in self.forced:
            pick = self.forced[ordinal]
            me = next(c for c in candidates if c.order == pick)
            for other in present:
                if other != pick:
                    self.bound(me, next(c for c in candidates if c.order == other))
        elif len(present) == 1:
            pick = present[0]
        elif not present:
            return None
        else:
            raise Branch(ordinal, candidates, present)
        self.mask = self.mask & (won == pick)
        self.path.append((tuple(candidates), pick))
        return pick


@dataclass
class Majority(OnSample):
    """A chooser over a sample of points that never branches: where several plans win on the
    points left, it takes the one that wins on most of them (ties: the lower `order`). The
    program it lowers is the one a compile at each point still in `mask` chooses, and `bounds`
    is the region it holds in. `splits` counts the plans it set aside: the program has at least
    `1 + splits` regions on the sample (each plan set aside wins at some point, which lies in
    another region)."""

    splits: int = 0

    def choose(self, ordinal: int, candidates: Sequence[Candidate]) -> int | None:
        import numpy as np

        names = {s.name for c in candidates for s in (free_symbols(c.time) | free_symbols(c.flops))}
        if not names <= self.points.keys():
            return None
        if self.mask is None:
            self.mask = np.ones(len(next(iter(self.points.values()))), dtype=bool)
        # Only the points still in the region matter (fewer at every choice).
        at = np.flatnonzero(self.mask)
        won = winners(candidates, {k: v[at] for k, v in self.points.items()})
        orders, counts = np.unique(won, return_counts=True)
        if not len(orders):
            return None
        pick = int(orders[np.argmax(counts)])  # np.unique sorts: the first maximum is lowest
        if len(orders) > 1:
            self.splits += len(orders) - 1
            me = next(c for c in candidates if c.order == pick)
            for other in orders.tolist():
                if other != pick:
                    self.bound(me, next(c for c in candidates if c.order == other))
        self.mask = self.mask.copy()
        self.mask[at[won != pick]] = False
        self.path.append((tuple(candidates), pick))
        return pick


@dataclass(frozen=True, slots=True)
class Variant:
    """The program lowered with one plan per choice: `forced` names the plans where the sample
    split, `bounds` the relations that hold there, `share` the fraction of the sample."""

    forced: tuple[tuple[int, int], ...]
    bounds: tuple[sp.Basic, ...]
    share: float
    result: Any
    path: tuple[tuple[tuple[Candidate, ...], int], ...] = ()
    """The choices the sample made on the way, in order (`OnSample.path`): a point is in this
    variant exactly where each of them has the plan picked as its winner (`classify`)."""
    sides: tuple[tuple[Candidate, Candidate], ...] = ()
    """Each bound's two plans (`OnSample.sides`), in the order of `bounds`."""
    solved: tuple[Any, ...] | None = None
    """Each bound solved (`shardc.driver.boundaries.Boundary`), once the driver has."""

    @property
    def condition(self) -> sp.Basic:
        if not self.bounds:
            return sp.true
        if len(self.bounds) > 1 and any(b.has(sp.Max) for b in self.bounds):
            # as built, where a bound holds a Max: SymPy sorts and canonicalizes the bounds
            # otherwise, seconds for a program (`replaced`)
            return sp.And._from_args(self.bounds)
        return sp.And(*self.bounds)


@dataclass(frozen=True)
class TooMany:
    """`variants` stopped before every region was found: `past` names the limit, "regions"
    (more than its cap), "statements" (`REGIONS_STATEMENTS` lowered) or "seconds" (the CPU
    net, `REGIONS_NET_SECONDS`)."""

    past: str


def variants(
    lower: Callable[[Chooser], Any],
    names: Sequence[str],
    mesh: frozenset[str] = frozenset(),
    cap: int = MAX_REGIONS,
    points: Mapping[str, Any] | None = None,
    statements: int = 1,
) -> tuple[Variant, ...] | TooMany:
    """Every region of the whole program on the sample (`sample_points`, or `points`: an array
    of values per size name, e.g. a sweep's grid): lower once per combination of winners that
    some point reaches (a choice's winners depend on the layouts earlier choices made).
    `TooMany` when there are more than `cap`, when the lowerings would pass
    `REGIONS_STATEMENTS` (each one counted as the program's `statements`), or past
    `REGIONS_NET_SECONDS` of CPU time (the limits as `shardc.lang.input_limits` holds them at
    the call)."""
    import time

    budget = input_limits.REGIONS_STATEMENTS
    net = input_limits.REGIONS_NET_SECONDS
    start = time.process_time()
    if points is None:
        points = sample_points(names, mesh)
    todo: list[dict[int, int]] = [{}]
    out: list[Variant] = []
    spent = 0
    while todo:
        spent += max(1, statements)
        if spent > budget:
            return TooMany("statements")
        if time.process_time() - start > net:
            return TooMany("seconds")
        forced = todo.pop()
        chooser = OnSample(points, forced)
        try:
            result = lower(chooser)
        except Branch as b:
            todo.extend({**forced, b.ordinal: o} for o in reversed(b.orders))
            if len(out) + len(todo) > cap:
                return TooMany("regions")
            continue
        share = float(chooser.mask.mean()) if chooser.mask is not None else 1.0
        if share > 0:
            bounds = tuple(dict.fromkeys(chooser.bounds))
            out.append(
                Variant(
                    tuple(sorted(forced.items())),
                    bounds,
                    share,
                    result,
                    tuple(chooser.path),
                    tuple(chooser.sides[b] for b in bounds),
                )
            )
    return tuple(sorted(out, key=lambda v: -v.share))


def classify(found: Sequence[Variant], points: Mapping[str, Any]) -> Any:
    """The index in `found` of the variant each point is in (numpy int array; -1 where none
    is: a region the enumeration's sample did not reach). Exact: a point is in a variant where
    every choice on its path has the variant's plan as the winner there, as a compile with the
    point's sizes bound would choose (`AtPoint`).

    A variant without a path (its program made no choice that depends on these sizes) holds
    every point."""
    import numpy as np

    size = len(next(iter(points.values()))) if points else 1
    out = np.full(size, -1, dtype=np.int64)
    for k, v in enumerate(found):
        mask = out < 0
        if not v.path and v.bounds:  # drawn by its bounds (`driver.objective_regions.partition`)
            for b in v.bounds:
                names, fn = _function(b, "numpy")
                mask &= np.broadcast_to(
                    np.asarray(fn(*[points[n] for n in names]), dtype=bool), size
                )
        for candidates, pick in v.path:
            if not mask.any():
                break
            mask &= winners(candidates, points) == pick
        out[mask] = k
    return out


__all__ = [
    "AtPoint",
    "Branch",
    "Candidate",
    "Chooser",
    "Majority",
    "OnSample",
    "Recipe",
    "Region",
    "RegionFinder",
    "TooMany",
    "Variant",
    "classify",
    "evaluate",
    "sourced",
    "exact",
    "free_symbols",
    "plan_key",
    "sample_points",
    "symbolic_time",
    "variants",
    "winners",
]
