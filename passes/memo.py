"""Every process-wide memo of shardc, named, typed and bounded, in one place; `clear()` empties
them all and `stats()` counts their hits and misses.

Building and simplifying SymPy formulas is most of a compile's time, and the same formulas come
back: a program repeats statement shapes, `Report.at` and the regions lower one program again
per choice of plans, a sweep or a derive compiles it once per point, and a notebook or the
language server compiles a small edit of the same program again. Each table below holds the
results of a pure function: the result depends only on the key (expressions, sizes, the
topology, the chip's figures as numbers or symbols, the cost model), and results are immutable
(SymPy expressions, frozen dataclasses), so a hit returns the very object a call would build.
Nothing a key leaves out can change a result, so entries never go stale; each table keeps its
`maxsize` most recently used entries.

The caches of one compile are not here: they are fields of the object the compile passes
around (`passes.lower.state.PlanCaches`, `shardc.driver.caches.Memo`). The tables are listed,
with what each holds, in docs/benchmarks.md ("What is cached"); tests/project/test_layers.py
checks that no other module of `passes`, the driver, the tools or the CLI keeps a cache of its
own.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import sympy as sp

    from shardc.passes.cost_model import CollectiveTime, Links, Num
    from shardc.passes.layout_cost import Pricing
    from shardc.passes.reshard import Step

MAX_ENTRIES = 50_000
"""Entries a table keeps unless it says otherwise."""

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(slots=True)
class Entry(Generic[V]):
    """A table's value and the clock's reading at its last use."""

    value: V
    used: int


@dataclass(eq=False, slots=True)
class Table(Generic[K, V]):
    """One named memo of at most `maxsize` entries. Each entry keeps the time of its last use
    (a counter); past `maxsize`, the least recently used tenth goes at once, so a hit costs
    one hash of its key (a reordered dict would hash it twice, a third of a lookup's time).

    >>> t: Table[str, int] = Table("doc-table", 2, "a doctest's")
    >>> t["a"], t["b"] = 1, 2
    >>> t.get("a"), t.get("z")
    (1, None)
    >>> t["c"] = 3  # "b" was used least recently
    >>> sorted(t.data), (t.hits, t.misses)
    (['a', 'c'], (1, 1))
    """

    name: str
    maxsize: int
    holds: str
    """What an entry is: the function it remembers and its key."""
    data: dict[K, Entry[V]] = field(default_factory=dict, repr=False)
    clock: Iterator[int] = field(default_factory=itertools.count, repr=False)
    hits: int = 0
    misses: int = 0

    def get(self, key: K, default: V | None = None) -> V | None:
        """The entry under `key` (now its most recent use), else `default`."""
        entry = self.data.get(key)
        if entry is None:
            self.misses += 1
            return default
        self.hits += 1
        entry.used = next(self.clock)
        return entry.value

    def __setitem__(self, key: K, value: V) -> None:
        data = self.data
        data[key] = Entry(value, next(self.clock))
        if len(data) > self.maxsize:
            drop = max(1, self.maxsize // 10)
            for k in heapq.nsmallest(drop, data, key=lambda k: data[k].used):
                del data[k]

    def __len__(self) -> int:
        return len(self.data)

    def clear(self) -> None:
        self.data.clear()


TABLES: dict[str, Table[Any, Any]] = {}
"""Every table, by name, in the order declared below."""


def _table(name: str, holds: str, maxsize: int = MAX_ENTRIES) -> Table[Any, Any]:
    assert name not in TABLES, name
    t: Table[Any, Any] = Table(name, maxsize, holds)
    TABLES[name] = t
    return t


# ---- passes ----------------------------------------------------------------------------------
SIZE_SYMBOL: Table[str, sp.Symbol] = _table(
    "symbols.size-symbol", "a size's SymPy symbol (positive integer), by name", 4096
)
FIGURE_SYMBOL: Table[tuple[str, str], sp.Symbol] = _table(
    "symbols.figure-symbol", "a chip figure's SymPy symbol, by name and sign", 4096
)
COLLECTIVE_TIME: Table[Hashable, CollectiveTime] = _table(
    "cost_model.collective_time",
    "a collective's time per level, by the op, its bytes, its "
    "axes and their sizes, the model, the topology and the link figures",
)
PERMUTE_PAIRS: Table[Hashable, tuple[tuple[str, ...], list[Any]] | None] = _table(
    "permute_cost.pairs",
    "a CollectivePermute's sending axes and device pairs, by the two layouts and the axis sizes",
)
PERMUTE_TIME: Table[Hashable, CollectiveTime | None] = _table(
    "permute_cost.permute_time",
    "a CollectivePermute's time, by its bytes, the two layouts, "
    "the axis sizes, the model, the topology and the link figures",
)
PERMUTE_NEAR: Table[Hashable, tuple[list[Any], tuple[float, float], tuple[float, float]]] = _table(
    "permute_cost.nearest",
    "a permute into finer blocks' nearest-holder pairs and the costliest send of those and of "
    "the fixed pairs, by each sharded dim's axes in the two layouts, the axis sizes, the model "
    "and the topology",
)
CROSSOVER: Table[Hashable, sp.Expr] = _table(
    "derive_cost.crossover",
    "a collective's crossover size (a `cancel`), by its latency, bytes and bandwidth formulas",
)
RESHARD_IN_ORDER: Table[Hashable, tuple[Step, ...] | None] = _table(
    "reshard.in-order", "a reshard's fixed-order plan, by the two layouts and their axes' sizes"
)
RESHARD_PLAN: Table[Hashable, tuple[Step, ...] | None] = _table(
    "reshard.plan",
    "a reshard's searched plan, by the two layouts, the axis sizes and the "
    "`Pricing` (dtype, declared dims, model, topology, link figures)",
)
RESHARD_FLOOR: Table[Hashable, float | None] = _table(
    "reshard.floor", "a lower bound on a reshard's time, keyed as `reshard.plan`"
)
RESHARD_COSTS: Table[Hashable, tuple[Links, dict[tuple[object, ...], float]]] = _table(
    "reshard_search.costs",
    "the reshard search's links and step times (by kind, axes and V), "
    "by model, topology, link figures and axis sizes",
)
RESHARD_BYTES: Table[tuple[Pricing, tuple[str, ...]], float] = _table(
    "reshard_search.bytes", "an array's whole bytes, by its `Pricing` and dims"
)
ELEMENTS: Table[Hashable, Num] = _table(
    "layout_cost.elements", "a block's element count, by each dim's size and its axes' sizes"
)
SEPARATE: Table[Hashable, sp.Rel] = _table(
    "conditions.separate",
    "a condition between two formulas, by the formulas and which of their symbols are hardware",
)
LESS_THAN: Table[Hashable, sp.Rel | bool] = _table(
    "conditions.less_than", "the relation under which one formula is below another, by the two"
)
CANDIDATE_FORMULAS: Table[Hashable, sp.Basic] = _table(
    "regions.candidate-formulas",
    "one object per distinct formula of a plan's time, FLOPs or blocks, by formula: the tables "
    "keyed by formula then find it by identity, not by comparing two equal trees",
    20_000,
)
FREE_SYMBOLS: Table[Hashable, frozenset[sp.Symbol]] = _table(
    "regions.free-symbols",
    "a formula's free symbols (SymPy walks the whole formula for them on each ask), by formula",
)
LAMBDA_FUNCTIONS: Table[Hashable, tuple[tuple[str, ...], Callable[..., Any]]] = _table(
    "regions.functions",
    "a formula compiled by `lambdify` with its arguments, by formula and modules",
    20_000,
)
FLOAT_FUNCTIONS: Table[Hashable, tuple[tuple[str, ...], Any]] = _table(
    "regions.float-functions",
    "a formula's arguments and its `math` function (or its number, where it has no symbol), "
    "by formula",
    20_000,
)
SCALED_MAX: Table[Hashable, Any] = _table(
    "regions.scaled-max",
    "a roofline Max times a positive number, as the Max of its scaled arguments, by the two",
)
LAMBDA_PRINTERS: Table[str, Any] = _table(
    "regions.printers", "`lambdify`'s printer that keeps every digit of a Float, by modules", 8
)
REGION_SAMPLES: Table[Hashable, dict[str, Any]] = _table(
    "regions.samples",
    "the sample of sizes regions are found over, by the sizes' names and the mesh axes",
    256,
)

# ---- the driver ------------------------------------------------------------------------------
REPORT_VALUES: Table[Hashable, float | None] = _table(
    "report.values", "a formula's number, by the formula and the values of its symbols"
)
REPORT_FUNCTIONS: Table[Hashable, Callable[..., Any]] = _table(
    "report.functions",
    "the generated function that evaluates a list of formulas together, by the list",
    256,
)
EVALUATE_RECIPES: Table[Hashable, tuple[Any, ...]] = _table(
    "evaluate.recipes", "how a formula is evaluated in numpy, by formula"
)
FORMULA_TEXT: Table[Hashable, str] = _table(
    "formulas.text", "a formula's text, by the expression and its type"
)
FORMULA_LATEX: Table[Hashable, str] = _table(
    "formulas.latex", "a formula's LaTeX, by the expression and its type"
)
STR_TERMS: Table[Hashable, str] = _table(
    "formulas.str-terms", "a printed subterm's text, by the subterm and its type"
)
LATEX_TERMS: Table[Hashable, str] = _table(
    "formulas.latex-terms", "a printed subterm's LaTeX, by the subterm and its type"
)
CODE_TERMS: Table[Hashable, str] = _table(
    "formulas.code-terms", "a printed subterm's numpy code, by the subterm and its type"
)
PRINTERS: Table[str, Any] = _table(
    "formulas.printers", "the text, LaTeX and code printers (built on first use), by kind", 8
)
DECISION_REGIONS: Table[Hashable, tuple[Any, ...]] = _table(
    "decisions.regions", "the regions where each plan of a decision wins, by its candidates", 4096
)
RELATION_TEXT: Table[Hashable, str] = _table(
    "decisions.relation-text", "a region's bound solved for its size, by the relation", 4096
)
TIDY_MAX: Table[Hashable, Any] = _table(
    "decisions.tidy-max",
    "a roofline Max with its floats as small fractions or six figures, by the Max and its floats",
    4096,
)
USER_EXPR_PARSER: Table[str, Any] = _table(
    "user-expr.parser", "the parser of user expressions (`--where`, `--minimize`), built once", 1
)

# ---- the tools -------------------------------------------------------------------------------
EPOCH_COMPOSITIONS: Table[Hashable, Any] = _table(
    "epoch.compositions",
    "the ordered sums of 0..most in `parts` parts (a read-only array), by (most, parts)",
    256,
)


def typed(x: Any) -> tuple[type, Any]:
    """A key part that keeps `2`, `2.0` and `Integer(2)` apart (equal, but they print and
    combine differently)."""
    return (type(x), x)


def memoized(table: Table[Any, Any], key: Callable[..., Hashable]) -> Callable[[F], F]:
    """Memoize a pure function in `table` under `key(*args, **kwargs)`.

    >>> calls = []
    >>> @memoized(Table("doc-square", 8, "squares"), lambda x: typed(x))
    ... def square(x):
    ...     calls.append(x)
    ...     return x * x
    >>> square(3), square(3), square(3.0), calls
    (9, 9, 9.0, [3, 3.0])
    """
    data = table.data
    clock = table.clock

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            k = key(*args, **kwargs)
            entry = data.get(k)
            if entry is None:
                table.misses += 1
                hit = fn(*args, **kwargs)
                table[k] = hit
                return hit
            table.hits += 1
            entry.used = next(clock)
            return entry.value

        return wrapper  # type: ignore[return-value]

    return decorate


def clear() -> None:
    """Empty every table and zero its counts: the next compile runs cold."""
    for t in TABLES.values():
        t.clear()
        t.hits = t.misses = 0


def sizes() -> dict[str, int]:
    """Entries per table, by name."""
    return {name: len(t) for name, t in TABLES.items()}


@dataclass(frozen=True, slots=True)
class Stats:
    """One table's counts since the last `clear()`."""

    name: str
    hits: int
    misses: int
    size: int
    maxsize: int


def stats() -> tuple[Stats, ...]:
    """Each table's hits, misses and entries (for benchmarks: `bench_warm.py`)."""
    return tuple(Stats(t.name, t.hits, t.misses, len(t), t.maxsize) for t in TABLES.values())


__all__ = [
    "MAX_ENTRIES",
    "TABLES",
    "Entry",
    "Stats",
    "Table",
    "clear",
    "memoized",
    "sizes",
    "stats",
    "typed",
]
