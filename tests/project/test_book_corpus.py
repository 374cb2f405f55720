"""The book-problem corpus (tests/data/book-problems.yaml) against the compiler.

Every entry of kind collective-time, memory, flops, hbm-roofline, matmul-strategy,
parallelism-condition and transformer-count is in ENTRIES: a list of checks, each compiling a
program of tests/book/ and comparing one corpus item with what the report (or `shardc derive`,
dsl/tools/derive.py) says, or the reason the language cannot express the entry yet. A numeric
check compares the `book` model with the item's `value` (the entry's tolerance; 1e-9 where it is
0) and the `recomputed` value within 1e-3 (the `exact` model unless the check says why not); a
symbolic check asks `simplify(ours - theirs) == 0` after mapping the corpus's names to ours.
A check marked `known` is a discrepancy of the compiler: the entry is an xfail (strict) until it
is fixed. docs/book-corpus.md lists every entry with its status; `test_summary` keeps the two in
step and prints the counts.
"""

from __future__ import annotations

import functools
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
import sympy as sp
import yaml

import shardc
from shardc.driver import decisions
from shardc.driver.report import Report
from shardc.lang.syntax import DTYPES
from shardc.passes.graph import ops_in_order
from shardc.passes.ir import Einsum
from shardc.passes.layout_cost import global_elements
from shardc.passes.symbols import size_symbol
from shardc.tools.derive import (
    Derivation,
    Pass,
    derive,
    infer_backward_line,
    passes,
)
from shardc.tools.derive_solve import partner_power_of_two, round_power_of_two, solve_for
from tests.paths import ROOT

BOOK = ROOT / "tests" / "book"
DOC = ROOT / "docs" / "book-corpus.md"
KINDS = (
    "collective-time",
    "memory",
    "flops",
    "hbm-roofline",
    "matmul-strategy",
    "parallelism-condition",
    "transformer-count",
)
CORPUS = {
    p["id"]: p
    for p in yaml.safe_load(
        (ROOT / "tests" / "data" / "book-problems.yaml").read_text(encoding="utf-8")
    )["problems"]
    if p["kind"] in KINDS
}
RECOMPUTED_REL = 1e-3
EXACT_REL = 1e-9
YEAR_S = 365.25 * 86400
oo = sp.oo


# ---- checks ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Range:
    """An expected value given as a range (tolerance_note: 'range check')."""

    low: float
    high: float


@dataclass(frozen=True)
class Check:
    """One corpus item against one extraction from a compiled program.

    `expect` replaces the corpus's value where that is a sentence (the replacement is transcribed
    from it; `note` says how); `recomputed` replaces the corpus's recomputation where that is
    wrong (`note` says why). `subs` maps the corpus's symbol names to ours (a string is parsed
    over the program's names, a callable gets the report); `against` picks the item's formula
    ("sympy" or "condition"). `limit` names a corpus symbol that
    goes to infinity: ours/theirs must tend to 1. `proportional`: ours/theirs must not depend on
    the corpus's symbols. `known`: a known discrepancy of the compiler (the check must fail).
    `only_recomputed`: why the book's value is not compared (its arithmetic is wrong, or the
    item's value is a sentence another check transcribes); the recomputation still is.
    """

    item: str
    program: str
    get: Callable[[Report], Any]
    model: str = "book"
    rmodel: str | None = "exact"
    hw: str | None = None
    set: Mapping[str, float] = field(default_factory=dict)
    subs: Mapping[str, Any] = field(default_factory=dict)
    expect: Any = None
    recomputed: float | None = None
    limit: str | None = None
    proportional: bool = False
    symbolic: bool = False
    against: str = "sympy"
    note: str = ""
    known: str = ""
    only_recomputed: str = ""


def num(item, program, get, **kw) -> Check:
    """A numeric (or exact: lists, strings, booleans) check against `value` and `recomputed`."""
    return Check(item, program, get, **kw)


def sym(item, program, get, **kw) -> Check:
    """A symbolic check: compares with the item's `sympy` (or `expect`, formula strings)."""
    return Check(item, program, get, rmodel=None, symbolic=True, **kw)


@dataclass(frozen=True)
class Entry:
    checks: tuple[Check, ...]
    unchecked: Mapping[str, str] = field(default_factory=dict)
    """Corpus items no check covers, and why."""

    @property
    def known(self) -> list[str]:
        return [c.known for c in self.checks if c.known]


def entry(*checks: Check, unchecked: Mapping[str, str] | None = None) -> Entry:
    return Entry(checks, unchecked or {})


class KnownDiscrepancy(Exception):
    """A check marked `known` failed, as expected: the entry is an xfail."""


# ---- compiling and reading reports ---------------------------------------------------------------
@functools.cache
def _compile(
    program: str, model: str, hw: str | None, bindings: tuple, objective: str | None = None
) -> Report:
    source = program if "\n" in program else BOOK / f"{program}.shard"  # text: a variant
    extra = {} if objective is None else {"objective": objective}
    return shardc.compile(source, hw=hw, model=model, set=dict(bindings), **extra)


def compiled(check: Check, model: str) -> Report:
    return _compile(check.program, model, check.hw, tuple(sorted(check.set.items())))


def colls(r: Report):
    return [c for c in r.ops if c.kind == "collective"]


def einsums(r: Report):
    return [c for c in r.ops if c.kind == "einsum"]


def coll(r: Report, key: int | str):
    """The collective at position `key`, or the one producing array `key`."""
    if isinstance(key, int):
        return colls(r)[key]
    (c,) = [c for c in colls(r) if c.dst.split("[")[0] == key]
    return c


def ein(r: Report, key: int | str):
    if isinstance(key, int):
        return einsums(r)[key]
    (c,) = [c for c in einsums(r) if c.array == key]
    return c


def arr(r: Report, name: str):
    (a,) = [a for a in r.cost.arrays if a.name == name]
    return a


def value_of(r: Report, name: str):
    return [v for v in r.program.arrays if v.array == name][-1]


def local_shape(r: Report, name: str) -> list:
    """Each dim of the array's block: its size over the sizes of the axes sharding it."""
    out = []
    for d in value_of(r, name).layout.dims:
        e = size_symbol(d.dim) / sp.Mul(*[size_symbol(a) for a in d.axes])
        v = r.value(e)
        out.append(e if v is None else int(v))
    return out


def copy_bytes(r: Report, name: str) -> sp.Expr:
    """Bytes of one whole copy of an array."""
    v = value_of(r, name)
    return global_elements(v.layout, size_symbol) * sp.nsimplify(DTYPES[v.dtype])


def einsum_local(r: Report, c) -> dict[str, int]:
    """The local size of every dim of an einsum, from its operands' layouts."""
    op = dict(ops_in_order(r.program))[c.index]
    assert isinstance(op, Einsum)
    out = {}
    for v in (op.lhs, op.rhs):
        for d in v.layout.dims:
            e = size_symbol(d.dim) / sp.Mul(*[size_symbol(a) for a in d.axes])
            out.setdefault(d.dim, int(r.value(e)))
    return out


def error_code(text: str) -> str | None:
    """The first diagnostic's code when `text` does not compile."""
    try:
        shardc.compile(text)
    except shardc.CompileError as err:
        return err.diagnostics[0].code
    return None


def cond(r: Report, name: str = "compute-vs-hbm"):
    (c,) = [c for c in r.conditions if c.name == name]
    return c.relation


def hw(r: Report, name: str) -> sp.Symbol:
    """A hardware symbol of the report (C, C_int8, W_hbm, W_ici, W_nvlink, t_hop)."""
    return r.parse(name)


def hops(r: Report, c) -> sp.Expr:
    return c.t_latency / hw(r, "t_hop")


def per_hop(r: Report, c) -> sp.Expr:
    """The bandwidth term of one hop: the bandwidth term over the hop count."""
    return c.t_bandwidth / hops(r, c)


def moved(r: Report, c) -> sp.Expr:
    """Bytes through each device's link(s): the bandwidth term times the level's bandwidth."""
    (level,) = [lv for lv, _ in c.levels]
    return sp.cancel(c.t_bandwidth * hw(r, f"W_{level}"))


def sent_words(r: Report, ops, word: int = 2) -> sp.Expr:
    """Words each device sends over all the runs of `ops` (a `repeat` block's count times)."""
    return sp.Add(*[moved(r, c) * c.count for c in ops]) / word


def words_per_device(r: Report, ops, word: int = 2) -> sp.Expr:
    return sp.Add(*[moved(r, c) for c in ops]) / word


def devices(r: Report) -> sp.Expr:
    return sp.Mul(*[size_symbol(a) for a in r.program.mesh_axes])


def threshold(
    r: Report, var: str, large: tuple[str, ...] = (), subs: Mapping | None = None, rel=None
) -> sp.Expr:
    """The size `var` at which T_math = T_hbm, with the `large` dims taken to infinity."""
    rel = rel if rel is not None else cond(r)
    lhs, rhs = rel.lhs, rel.rhs
    if subs:
        lhs = lhs.subs(
            {r.parse(k): r.parse(v) if isinstance(v, str) else v for k, v in subs.items()}
        )
    for d in large:
        lhs = sp.limit(lhs, size_symbol(d), oo)
    (sol,) = sp.solve(sp.Eq(lhs, rhs), size_symbol(var))
    return sol


def step_text(r: Report, c, rename: Mapping[str, str] | None = None) -> str:
    """An op as the corpus writes it: `AllGather_X(A[I, J_X]) -> A[I, J]`, `A · B -> C`."""
    text = f"{c.src} -> {c.dst}"
    if c.kind == "collective":
        ir = dict(ops_in_order(r.program))[c.index]
        sub = "".join(c.axes) if all(len(a) == 1 for a in c.axes) else ",".join(c.axes)
        if ir.dim is not None:
            sub = "{" + ",".join((*c.axes, ir.dim)) + "}"
        text = f"{c.op}_{sub}({c.src}) -> {c.dst}"
    for old, new in (rename or {}).items():
        text = re.sub(rf"\b{old}\[", f"{new}[", text)
    return text


def steps(r: Report, rename: Mapping[str, str] | None = None, lines=None) -> list[str]:
    return [
        step_text(r, c, rename)
        for c in r.ops
        if c.kind in ("collective", "einsum") and (lines is None or c.line in lines)
    ]


def typical(r: Report) -> Report:
    """The report at the planner's typical sizes (every symbolic dim 4096, mesh axis 4)."""
    free = {
        n: 4 if n in r.program.mesh_axes else 4096
        for n, v in r.program.dims_and_mesh.items()
        if v is None and n not in r.bindings
    }
    return r.at(**free) if free else r


def signature(c) -> str:
    """`[A_X, B] -> [A, B]`: an op's layouts without the array names."""
    return re.sub(r"[A-Za-z0-9_·+]+\[", "[", f"{c.src} -> {c.dst}")


def chosen(r: Report, target: str) -> str:
    (d,) = [d for d in r.decisions if d.target == target]
    return decisions.plan_text(d, d.chosen)


def same(a, b) -> bool:
    """Symbolic identity; where `simplify` cannot decide (Max, floor), equality at 20 random
    points (sizes: integers 1-99; hardware quantities: positive reals)."""
    diff = sp.sympify(a) - sp.sympify(b)
    if sp.simplify(diff) == 0:
        return True
    rng = random.Random(0)
    free = sorted(diff.free_symbols, key=lambda s: s.name)
    for _ in range(20):
        point = {s: rng.randint(1, 99) if s.is_integer else rng.uniform(0.1, 10) for s in free}
        scale = abs(complex(sp.sympify(a).subs(point))) + abs(complex(sp.sympify(b).subs(point)))
        if abs(complex(diff.subs(point))) > 1e-9 * max(scale, 1e-300):
            return False
    return bool(free)


def wraps(r: Report) -> list[bool]:
    return [
        r.program.topology.phys(p).wrap for link in r.program.topology.links for p in link.physical
    ]


def ring_busiest_link(n: int, shard: float, kind: str) -> float:
    """Brute force: bytes over the busiest directed link of a bidirectional ring of n chips.

    kind "gather": every chip's shard reaches every other chip, forwarded both ways, the chip
    opposite fed half from each side; "alltoall": every chip sends shard/n to every other chip
    the short way (ties split).
    """
    load: Counter = Counter()
    for s in range(n):
        for step in (1, -1):
            served = {}  # distance -> share of the data going this way
            for d in range(n):
                here, there = (d - s) * step % n, (s - d) * step % n
                if d != s and here <= there:
                    served[here] = 1.0 if here < there else 0.5
            for k in range(max(served, default=0)):
                beyond = [f for dist, f in served.items() if dist > k]
                link = ((s + step * k) % n, step)
                load[link] += shard * max(beyond) if kind == "gather" else shard / n * sum(beyond)
    return max(load.values())


def brute_ratio(r: Report, c, kind: str, sizes: tuple[int, ...] = (3, 4, 5, 6, 7, 8)) -> list:
    """The exact model's bandwidth term over the brute-force ring time (W_ici = 1: each
    direction 1/2) for rings of 3-8 chips; dims A, B of 840 (divisible by all)."""
    out = []
    for n in sizes:
        shard = 2 * 840 * 840 / n
        # (value(..., W_ici=1) gives None without a chip: docs/book-corpus.md, findings)
        out.append(
            r.value(c.t_bandwidth.subs(hw(r, "W_ici"), 1), X=n, A=840, B=840)
            / (ring_busiest_link(n, shard, kind) / 0.5)
        )
    return out


def opt_time(r: Report, e, c=None) -> sp.Expr:
    """The sharding chapter's strategy time: max(T_math, bandwidth term of its collective)."""
    return e.t_math if c is None else sp.Max(e.t_math, c.t_bandwidth)


# ---- derivations (dsl/tools/derive.py): the book's accounting of a training step -----------------
BOOK_ACC = (
    "the book's accounting (dsl/tools/derive.py: the pass with the most communication per "
    "FLOP, ICI axes as full rings); its recomputation is the book's own formula, so "
    "the book model is used for both"
)
_DERIVATIONS: dict[tuple, Derivation] = {}


def derived(r: Report, optimize: str | None = None) -> Derivation:
    """`shardc derive` of a report (X traded with Y over N devices when `optimize`)."""
    key = (id(r), optimize)  # reports live in _compile's cache: ids are stable
    if key not in _DERIVATIONS:
        _DERIVATIONS[key] = derive(r, optimize=optimize, partner="Y" if optimize else None)
    return _DERIVATIONS[key]


def dcond(r: Report, name: str = "compute-bound", optimize: str | None = None) -> sp.Rel:
    (c,) = [c for c in derived(r, optimize).conditions if c.name == name]
    return c.relation


def dsolved(
    r: Report, var: str, name: str = "compute-bound", optimize: str | None = None
) -> sp.Expr:
    """A derived condition solved for `var` (a size or a monomial such as B/X): its threshold."""
    s = solve_for(dcond(r, name, optimize), var)
    assert s is not None, f"{name} cannot be solved for {var}"
    return s.expr


def optimum(r: Report, overlap: str = "sum") -> sp.Expr:
    (o,) = [o for o in derived(r, "X").optima if o.overlap == overlap]
    return o.expr


def at_optimum(r: Report, expr: sp.Expr, overlap: str = "sum") -> sp.Expr:
    """`expr` with X = X_opt and Y = N / X_opt."""
    x, y, n = size_symbol("X"), size_symbol("Y"), size_symbol("N")
    return sp.simplify(sp.sympify(expr).subs({x: optimum(r, overlap), y: n / optimum(r, overlap)}))


def step_pass(r: Report, name: str) -> Pass:
    """The forward or backward pass, priced as the book prices it (full rings)."""
    (p,) = [p for p in passes(r, infer_backward_line(r), "book") if p.name == name]
    return p


def group(p: Pass, r: Report, *axes: str) -> sp.Expr:
    """A pass's communication over exactly these mesh axes."""
    return p.groups(r.program.mesh_axes)[axes]


def ring_bytes(r: Report, t: sp.Expr) -> sp.Expr:
    """Cost-equivalent bytes (the book's table): a time priced on rings times W_ici (an
    AllReduce of V counts 2V)."""
    return sp.cancel(t * hw(r, "W_ici"))


def holds_at(r: Report, rel: sp.Rel, **sizes: float) -> bool:
    """`lhs > rhs` at these sizes (bound here rather than with --set, where a batch that the
    devices do not divide would be S004)."""
    return r.value(rel.lhs, **sizes) > r.value(rel.rhs, **sizes)


def split(r: Report, text: str, n: int, overlap: str = "sum", **sizes: float) -> str:
    """X_opt at N = n rounded to a power of two, and the partner's power of two beside it."""
    x = round_power_of_two(r.value(optimum(r, overlap), N=n, **sizes), n)
    return text.format(x=x, y=partner_power_of_two(x, n))


def variant(program: str, *edits: tuple[str, str]) -> str:
    """A tests/book program with text replaced (another mesh, dtype...)."""
    text = (BOOK / f"{program}.shard").read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text, f"{program}: no {old!r}"
        text = text.replace(old, new)
    return text


def pod_chips(r: Report) -> int:
    return math.prod(int(n) for n in r.chip.pod_shape.split("x"))


# ---- transformer counts --------------------------------------------------------------------------
def elements(r: Report, *names: str) -> sp.Expr:
    return sp.Add(*[global_elements(value_of(r, n).layout, size_symbol) for n in names])


def weight_einsums(r: Report, *weights: str):
    """The matmuls of these weights (all parameters by default): forward, input gradient and
    weight gradient."""
    names = weights or r.program.params
    return [
        e for e in einsums(r) if any(f"{w}[" in e.src or e.dst.startswith(f"d{w}[") for w in names)
    ]


def flops(ops) -> sp.Expr:
    return sp.Add(*[e.flops for e in ops])


def attention_einsums(r: Report):
    """The dot-product attention matmuls (no weight), forward and backward."""
    weighted = {e.index for e in weight_einsums(r)}
    return [e for e in einsums(r) if e.index not in weighted]


@functools.cache
def card_counts(name: str):
    """A model card (dsl/tools/models/cards) compiled part by part by shardc.models.counts."""
    from shardc.tools.models import load
    from shardc.tools.models.counts import count

    return count(load(name))


def card_checks(
    card: str, program_set: Mapping[str, float], vocab_erratum: str = ""
) -> tuple[Check, ...]:
    """The same parameter counts from the model card's generated programs."""
    note = f"the model card {card} (dsl/tools/models), its layer and head programs compiled"
    groups = (
        ("ffw_params", "mlp"),
        ("attention_params", "attention"),
        ("vocab_params", "embeddings"),
    )
    return (
        *[
            num(
                item,
                "tfm-param-count",
                lambda r, g=g: card_counts(card).params_by_group[g],
                set=program_set,
                note=note,
                only_recomputed=vocab_erratum if item == "vocab_params" else "",
            )
            for item, g in groups
        ],
        num(
            "total_params",
            "tfm-param-count",
            lambda r: card_counts(card).params,
            set=program_set,
            note=note,
        ),
    )


FFW = ("W_in1", "W_in2", "W_out")
ATTN = ("W_Q", "W_K", "W_V", "W_O")


def selfattn(expr: sp.Expr) -> sp.Expr:
    """Keys and values from the same tokens as the queries: S = T."""
    return sp.sympify(expr).subs(size_symbol("S"), size_symbol("T"))


def mha(r: Report, expr: sp.Expr) -> sp.Expr:
    """tests/book/tfm-block as multi-head self-attention: G = 1 (N = K heads), S = T."""
    return selfattn(expr).subs(size_symbol("G"), 1)


def attention_threshold(r: Report) -> sp.Expr:
    """T above which the attention matmuls cost more FLOPs than the weights' (MHA, F = 4D,
    N H = D): solved from the relation the two counts make."""
    subs = {
        size_symbol("F"): 4 * size_symbol("D"),
        size_symbol("H"): size_symbol("D") / size_symbol("K"),
    }
    rel = sp.StrictGreaterThan(
        mha(r, flops(attention_einsums(r))).subs(subs), mha(r, flops(weight_einsums(r))).subs(subs)
    )
    s = solve_for(rel, "T")
    assert s is not None and s.rel == ">"
    return s.expr


def cost_table(program: str, backward: str | None = None, note: str = "") -> tuple[Check, ...]:
    """The training chapter's per-layer table: FLOPs per chip, and bytes forward and backward as the
    table counts them (communication time on rings times W_ici: an AllReduce of V is 2V)."""
    how = "the pass's collectives priced on rings, times W_ici (an AllReduce of V is 2V)"
    return (
        sym(
            "compute_per_layer",
            program,
            lambda r: sp.Add(*[e.flops_per_device for e in einsums(r)]),
            note="every matmul of the step, forward and backward, per chip",
        ),
        sym(
            "comms_forward",
            program,
            lambda r: ring_bytes(r, step_pass(r, "forward").t_comms),
            note=how,
        ),
        sym(
            "comms_backward",
            program,
            lambda r: ring_bytes(r, step_pass(r, "backward").t_comms),
            expect=backward,
            note=note or how,
        ),
    )


MIXED = (
    ("train-mlp-fsdp-tp-3d", 2, 1, "M_X = 2: X over two torus axes, Y over one"),
    ("train-mlp-fsdp-tp", 1, 1, "one axis each"),
)
"""The FSDP + TP programs: (program, M_X, M_Y, note)."""
OVERLAP_NAME = {"sum": "summed (the book)", "max": "overlapped (the revised training chapter)"}
Q1 = {"L": 64, "D": 4096, "F": 16384, "V": 32000, "N": 32, "K": 32, "H": 128}
"""The transformer-math chapter Question 1: N H = D = 4096 (32 heads of 128), MHA (K = N)."""
LLAMA2 = {"L": 40, "D": 5120, "F": 13824, "N": 40, "K": 40, "H": 128, "V": 32000}
LLAMA3 = {"L": 80, "D": 8192, "F": 28672, "N": 64, "K": 8, "H": 128, "V": 128256}


# ---- the table ----------------------------------------------------------------------------------
LINE_IS_ONE_WAY = (
    "a `nowrap` line is priced as the sharding chapter Pop Quiz 2 prices it, X-1 hops at W_ici/2 "
    "(one direction): the book's one-direction ring for AllGather/ReduceScatter"
)
NO_ONE_WAY_A2A = (
    "the model has no one-direction ring: a `nowrap` line's AllToAll uses both "
    "directions (D^2/4 chunks cross its middle link), the book's one-way ring sends "
    "D(D-1)/2 chunk-hops"
)
EPOCH = "the Epoch AI paper counts (N-1)/N of each word; the book model drops that factor"
SET_V5E_TEXT = {"W_hbm": 8.2e11}

ENTRIES: dict[str, Entry | str] = {
    # ---- collective-time ------------------------------------------------------------------------
    "tpu-q5-ici-point-to-point": entry(
        num("bytes", "tpu-q5-ici-point-to-point", lambda r: r.value(coll(r, "B").comm_bytes)),
        num("hops", "tpu-q5-ici-point-to-point", lambda r: r.value(hops(r, coll(r, "B")))),
        num(
            "first_byte_latency",
            "tpu-q5-ici-point-to-point",
            lambda r: r.value(coll(r, "B").t_latency),
            note="the latency term: 6 hops of t_hop",
        ),
        num(
            "transfer_time",
            "tpu-q5-ici-point-to-point",
            lambda r: r.value(coll(r, "B").t_bandwidth),
            note="the bandwidth term: two ports (right, down) at W_ici/2 = 4.5e10 each",
        ),
        num(
            "transfer_time",
            "tpu-q5-ici-point-to-point",
            lambda r: r.value(coll(r, "B").time),
            rmodel="book",
            note="the book model's time, max(latency, bandwidth terms); the exact "
            "model adds the 6 us (the caveat's ~192 us)",
        ),
        *[
            sym(
                "transfer_time",
                "tpu-q5-ici-point-to-point",
                lambda r: coll(r, "B").t_bandwidth,
                model=m,
                subs={"V": lambda r: coll(r, "B").comm_bytes, "W_uni": "W_ici/2"},
            )
            for m in ("book", "exact")
        ],
        num(
            "inputs.hardware.wraparound",
            "tpu-q5-ici-point-to-point",
            wraps,
            note="the chip's rule: a v5e axis of 4 does not wrap",
        ),
        num(
            "inputs.hardware.ici_bw_uni",
            "tpu-q5-ici-point-to-point",
            lambda r: r.value(hw(r, "W_ici") / 2),
            note="one direction of a link: W_ici / 2",
        ),
        num(
            "inputs.hardware.ici_latency_per_hop_s",
            "tpu-q5-ici-point-to-point",
            lambda r: r.value(hw(r, "t_hop")),
        ),
    ),
    "shard-allgather-ring-cost-model": entry(
        sym(
            "t_hop",
            "shard-allgather-ring-cost-model",
            lambda r: per_hop(r, coll(r, "G1")),
            subs={"V": lambda r: coll(r, "G1").comm_bytes},
        ),
        sym(
            "t_total_bandwidth_bound",
            "shard-allgather-ring-cost-model",
            lambda r: coll(r, "G1").t_bandwidth,
            subs={"V": lambda r: coll(r, "G1").comm_bytes},
        ),
        sym(
            "t_total_with_latency",
            "shard-allgather-ring-cost-model",
            lambda r: coll(r, "G1").time,
            subs={"V": lambda r: coll(r, "G1").comm_bytes, "T_min": "t_hop"},
        ),
        sym(
            "t_total_multi_axis",
            "shard-allgather-ring-cost-model",
            lambda r: coll(r, "G2").time,
            subs={
                "V": lambda r: coll(r, "G2").comm_bytes,
                "T_min": "t_hop",
                "X_1": "X",
                "X_2": "Y",
                "N_axes": 2,
            },
        ),
        sym(
            "unidirectional_form",
            "shard-allgather-ring-cost-model",
            lambda r: coll(r, "G3").t_bandwidth,
            subs={"V": lambda r: coll(r, "G3").comm_bytes, "W_uni": "W_ici/2", "X": "L"},
            note=LINE_IS_ONE_WAY,
        ),
        sym(
            "unidirectional_form",
            "shard-allgather-ring-cost-model",
            lambda r: coll(r, "G3").t_bandwidth,
            model="exact",
            subs={"V": lambda r: coll(r, "G3").comm_bytes, "W_uni": "W_ici/2", "X": "L"},
            note="the exact model prices the line alike",
        ),
        sym(
            "unidirectional_hops",
            "shard-allgather-ring-cost-model",
            lambda r: (hops(r, coll(r, "G3")), hops(r, coll(r, "G1"))),
            model="exact",
            expect=("L - 1", "floor(X/2)"),
            note="hop counts of the text: N-1 hops one way (a line), floor(N/2) both ways",
        ),
    ),
    "shard-latency-bound-threshold": entry(
        num(
            "latency_bound_buffer",
            "shard-latency-bound-threshold",
            lambda r: r.value(coll(r, 0).crossover_bytes / size_symbol("X")),
        ),
        sym(
            "latency_bound_buffer",
            "shard-latency-bound-threshold",
            lambda r: coll(r, 0).crossover_bytes / size_symbol("X"),
            subs={"W_uni": "W_ici/2", "T_min": "t_hop"},
        ),
    ),
    "shard-allgather-empirical-v5e": entry(
        num(
            "per_device_shard_at_peak",
            "shard-allgather-empirical-v5e",
            lambda r: r.value(arr(r, "A").bytes_per_device),
        ),
        num(
            "inputs.hardware.wraparound",
            "shard-allgather-empirical-v5e",
            wraps,
            note="the chip's rule: on a v5e only the axis of 16 wraps",
        ),
        unchecked={
            "achieved_fraction_of_peak": "measured (a profile), not a model quantity",
            "array_size_at_peak": "read off a measured plot",
        },
    ),
    "shard-popquiz2-allgather-time": entry(
        num(
            "a_bytes_per_device",
            "shard-popquiz2-allgather-time",
            lambda r: r.value(arr(r, "A").bytes_per_device),
        ),
        num(
            "a_bytes_total",
            "shard-popquiz2-allgather-time",
            lambda r: r.value(coll(r, 0).comm_bytes),
        ),
        num(
            "a_time_if_bidirectional_ring",
            "shard-popquiz2-allgather-time-ring",
            lambda r: r.value(coll(r, 0).time),
            rmodel="book",
            note="the recomputation is V/W_bidi; the exact model's ring is 3/4 V/W + 2 hops",
        ),
        num(
            "a_time_no_wraparound",
            "shard-popquiz2-allgather-time",
            lambda r: r.value(coll(r, 0).time),
            rmodel="book",
            note="the recomputation is the bandwidth term; the exact model adds 3 us of hops",
        ),
        num(
            "b_bytes_per_device",
            "shard-popquiz2-allgather-time",
            lambda r: r.value(arr(r, "A").bytes_per_device),
            set={"E": 256, "F": 256},
        ),
        num(
            "b_hop_bandwidth_time",
            "shard-popquiz2-allgather-time",
            lambda r: r.value(per_hop(r, coll(r, 0))),
            set={"E": 256, "F": 256},
        ),
        num(
            "b_time",
            "shard-popquiz2-allgather-time",
            lambda r: r.value(coll(r, 0).time),
            set={"E": 256, "F": 256},
            rmodel="book",
            note="3 hops of latency; the exact model adds the 2.2 us bandwidth term",
        ),
        num(
            "b_time",
            "shard-popquiz2-allgather-time",
            lambda r: r.op_bound(coll(r, 0)),
            set={"E": 256, "F": 256},
            expect="latency",
            rmodel=None,
            note="the text: 'latency bound'",
        ),
        unchecked={"a_measured": "measured (680 us in a profile)"},
    ),
    "shard-collective-cost-summary": entry(
        *[
            sym(
                item,
                "shard-collective-cost-summary",
                lambda r, t=target: coll(r, t).t_bandwidth,
                subs={"V": lambda r, t=target: coll(r, t).comm_bytes, "N_axes": n},
            )
            for item, target, n in (
                ("allgather", "AG1", 1),
                ("allgather", "AG2", 2),
                ("allgather", "AG3", 3),
                ("reducescatter", "RS1", 1),
                ("reducescatter", "RS2", 2),
                ("reducescatter", "RS3", 3),
                ("allreduce", "AR1", 1),
                ("allreduce", "AR2", 2),
                ("allreduce", "AR3", 3),
            )
        ],
        num(
            "allgather",
            "shard-collective-cost-summary",
            lambda r: brute_ratio(r, coll(r, "AG1"), "gather"),
            model="exact",
            rmodel=None,
            expect=[1] * 6,
            note="a control: the exact model against a brute-force ring of 3-8",
        ),
        sym(
            "alltoall_1d",
            "shard-collective-cost-summary",
            lambda r: coll(r, "AA1").t_bandwidth,
            subs={"V": "2*A*B"},
        ),
        num(
            "alltoall_1d",
            "shard-collective-cost-summary",
            lambda r: brute_ratio(r, coll(r, "AA1"), "alltoall"),
            model="exact",
            rmodel=None,
            expect=[1] * 6,
            note="the exact model against a brute-force ring of 3-8 chips (X/4 too low)",
        ),
        num(
            "signatures",
            "shard-collective-cost-summary",
            lambda r: {
                c.op: signature(c)
                for c in (coll(r, "AG1"), coll(r, "RS1"), coll(r, "AR1"), coll(r, "AA1"))
            },
        ),
    ),
    "shard-alltoall-cost": entry(
        sym(
            "t_nd",
            "shard-alltoall-cost",
            lambda r: coll(r, "T3").t_bandwidth,
            subs={"V": "2*I*J", "A": "X", "B": "Y", "C": "Z", "N": "X*Y*Z"},
        ),
        sym(
            "t_nd",
            (BOOK / "shard-alltoall-cost.shard")
            .read_text(encoding="utf-8")
            .replace("T3[I, J_XYZ] = A3", "T3 = AllToAll_{X,Y,Z,J}(A3)"),
            lambda r: coll(r, "T3").t_bandwidth,
            subs={"V": "2*I*J", "A": "X", "B": "Y", "C": "Z", "N": "X*Y*Z"},
        ),
        sym(
            "t_1d",
            "shard-alltoall-cost",
            lambda r: coll(r, "T1").t_bandwidth,
            subs={"V": "2*I*J", "N": "X"},
        ),
        num(
            "chunks_sent_per_device",
            "shard-alltoall-cost",
            lambda r: [
                r.value(
                    moved(r, coll(r, "T1"))
                    / (2 * size_symbol("I") * size_symbol("J") / size_symbol("X") ** 2),
                    X=n,
                )
                for n in (2, 4, 8)
            ],
            model="exact",
            rmodel=None,
            expect=[1, 4, 16],
            note="N^2/4 chunks of V/N^2 at N = 2, 4, 8 (the footnote's even ring)",
        ),
        unchecked={
            "mean_hops_1d_torus": "the model has no per-chunk hop count (N/4 is "
            "chunks_sent_per_device / N)"
        },
    ),
    "shard-q2-allgather-allreduce-v4p": entry(
        *[
            num(
                item,
                "shard-q2-allgather-allreduce-v4p",
                lambda r, t=t: r.value(coll(r, t).time),
                rmodel="book",
                note="the recomputation is the sharding chapter's bandwidth formula; the exact "
                "model's ring factor and hops give 19.5, 47.7 and 12.7 us",
            )
            for item, t in (
                ("t_allgather_x", "G1"),
                ("t_allgather_xy", "G2"),
                ("t_allreduce_z", "R"),
            )
        ],
        *[
            sym(item, "shard-q2-allgather-allreduce-v4p", lambda r, t=t: coll(r, t).t_bandwidth)
            for item, t in (
                ("t_allgather_x", "G1"),
                ("t_allgather_xy", "G2"),
                ("t_allreduce_z", "R"),
            )
        ],
    ),
    "shard-q3-latency-bound-allgather": entry(
        num(
            "bytes_total",
            "shard-q3-latency-bound-allgather",
            lambda r: r.value(coll(r, 0).comm_bytes),
        ),
        num(
            "bytes_per_device",
            "shard-q3-latency-bound-allgather",
            lambda r: r.value(arr(r, "A").bytes_per_device),
        ),
        num("hops", "shard-q3-latency-bound-allgather", lambda r: r.value(hops(r, coll(r, 0)))),
        num(
            "time",
            "shard-q3-latency-bound-allgather",
            lambda r: r.value(coll(r, 0).time),
            rmodel="book",
            note="the exact model adds the 2 ns bandwidth term to the 2 us",
        ),
        sym(
            "time",
            "shard-q3-latency-bound-allgather",
            lambda r: coll(r, 0).time,
            subs={"V": lambda r: coll(r, 0).comm_bytes, "T_min": "t_hop"},
        ),
    ),
    "shard-q10-alltoall-factor-of-4": entry(
        *[
            sym(
                "uni_allgather_scalars_per_link",
                "shard-q10-alltoall-factor-of-4",
                lambda r: (moved(r, coll(r, "GL")) / 2 / 2).subs(
                    size_symbol("J"), size_symbol("I")
                ),
                model=m,
                subs={"N": "I", "D": "Ln"},
                note=f"{LINE_IS_ONE_WAY}; W_uni = W_ici/2, 2 bytes a scalar",
            )
            for m in ("book", "exact")
        ],
        num(
            "bidi_allgather_speedup",
            "shard-q10-alltoall-factor-of-4",
            lambda r: r.value(coll(r, "GL").t_bandwidth / coll(r, "G").t_bandwidth),
            set={"R": 16, "Ln": 16},
            model="exact",
            note=f"{LINE_IS_ONE_WAY}; the book model's ring drops (D-1)/D and its line keeps it "
            "(Pop Quiz 2), so its ratio is 2(D-1)/D",
        ),
        num(
            "bidi_ratio_allgather_over_alltoall",
            "shard-q10-alltoall-factor-of-4",
            lambda r: r.value(coll(r, "G").t_bandwidth / coll(r, "T").t_bandwidth),
            set={"R": 16, "Ln": 16},
            rmodel="book",
            note="at D = 16 in the book model; the exact model's ratio is 4(D-1)/D = 3.75 for "
            "an even ring (the book's 4 is the large-D limit)",
        ),
        unchecked={
            "uni_alltoall_scalars_per_link": NO_ONE_WAY_A2A,
            "uni_ratio_alltoall_over_allgather": NO_ONE_WAY_A2A,
            "bidi_alltoall_speedup": NO_ONE_WAY_A2A,
        },
    ),
    "epoch-allreduce-lower-bound": entry(
        sym(
            "words_received_per_gpu_per_word",
            "epoch-allreduce-lower-bound",
            lambda r: moved(r, coll(r, "C")) / coll(r, "C").comm_bytes,
            model="exact",
            subs={"N_K": "N"},
            note=EPOCH,
        ),
        *[
            sym(
                item,
                "epoch-allreduce-lower-bound",
                lambda r, t=t: words_per_device(r, [coll(r, t)]) * devices(r),
                model="exact",
                subs={n: "N"},
                note=EPOCH,
            )
            for item, t, n in (
                ("total_words_k_sharded", "C", "N_K"),
                ("total_words_i_sharded", "dB", "N_I"),
                ("total_words_j_sharded", "dA", "N_J"),
            )
        ],
    ),
    "epoch-multidim-slicing-traffic": entry(
        sym(
            "inter_gpu_words",
            "epoch-multidim-slicing-traffic",
            lambda r: words_per_device(r, colls(r)) * devices(r),
            model="exact",
            subs={"N_I": "NI", "N_J": "NJ", "N_K": "NK"},
            note=EPOCH,
        ),
        sym(
            "intra_gpu_words",
            "epoch-multidim-slicing-traffic",
            lambda r: sp.Add(*[e.hbm_bytes for e in einsums(r)]) / 2 * devices(r),
            subs={"N_I": "NI", "N_J": "NJ", "N_K": "NK"},
            note="each product reads its two blocks and writes one (f16 words)",
        ),
        sym(
            "shape_dependence",
            "epoch-multidim-slicing-traffic",
            lambda r: (
                sp.Add(*[e.hbm_bytes for e in einsums(r)])
                / 2
                * devices(r)
                / (3 * size_symbol("I") * size_symbol("J") * size_symbol("K"))
            ),
            subs={"Ip": "I/NI", "Jp": "J/NJ", "Kp": "K/NK"},
            note="Eq. 4: the DRAM words are 3 I J K (1/I' + 1/J' + 1/K')",
        ),
        unchecked={
            "optimum": "a minimisation of Eq. 4 over the split, not a cost the compiler reports"
        },
    ),
    "epoch-data-parallel-traffic": entry(
        sym(
            "per_weight_matrix",
            "epoch-data-parallel-traffic",
            lambda r: words_per_device(r, [coll(r, "dW1")]) * devices(r),
            model="exact",
            subs={"d_ff": "dff", "d_model": "dmodel", "N_DP": "N"},
            note=EPOCH,
        ),
        sym(
            "total",
            "epoch-data-parallel-traffic",
            lambda r: words_per_device(r, colls(r)) * devices(r),
            model="exact",
            subs={"d_ff": "dff", "d_model": "dmodel", "N_DP": "N", "L": 1, "E": 1},
            note=f"one block, one expert (L = E = 1: no layer repetition in the language); {EPOCH}",
        ),
        sym(
            "per_worker",
            "epoch-data-parallel-traffic",
            lambda r: words_per_device(r, colls(r)),
            model="exact",
            subs={"N_p": "2*dff*dmodel", "N_DP": "N"},
            note="N_p = 2 L E d_ff d_model at L = E = 1",
        ),
    ),
    "epoch-tensor-parallel-traffic": entry(
        sym(
            "per_worker_general",
            "epoch-tensor-parallel-traffic",
            lambda r: words_per_device(r, colls(r)),
            model="exact",
            subs={"L": 1, "N_m": "Nm", "N_f": "Nf", "d_ff": "dff", "d_model": "dmodel"},
            note=f"one MLP block (L = 1), forward and backward; {EPOCH}",
        ),
        sym(
            "per_worker_2d_opt",
            "epoch-tensor-parallel-traffic",
            lambda r: words_per_device(r, colls(r)).subs(
                {
                    size_symbol("Nm"): r.parse("sqrt(N_TP*dmodel/dff)"),
                    size_symbol("Nf"): r.parse("sqrt(N_TP*dff/dmodel)"),
                }
            ),
            model="exact",
            subs={"L": 1, "d_ff": "dff", "d_model": "dmodel"},
            limit="N_TP",
            note="square weight shards (d_ff/Nf = d_model/Nm), ratio -> 1 as N_TP grows",
        ),
        sym(
            "table1_total",
            "epoch-tensor-parallel-traffic",
            lambda r: (words_per_device(r, colls(r)) * devices(r)).subs(
                {
                    size_symbol("Nm"): r.parse("sqrt(N_TP*dmodel/dff)"),
                    size_symbol("Nf"): r.parse("sqrt(N_TP*dff/dmodel)"),
                }
            ),
            model="exact",
            subs={"L": 1, "d_ff": "dff", "d_model": "dmodel"},
            limit="N_TP",
            note="per worker times N_TP, square shards, ratio -> 1 as N_TP grows",
        ),
    ),
    "epoch-pipeline-expert-traffic": entry(
        sym(
            "pp_per_token_per_pass",
            "epoch-pipeline-expert-traffic",
            lambda r: sent_words(r, [coll(r, "Y")]).subs(
                {size_symbol("b"): 1, size_symbol("i"): 1}
            ),
            model="exact",
            subs={"N_PP": "PP", "d_model": "dmodel"},
            note="the forward Sends alone, per token (b = 1), without interleaving (i = 1)",
        ),
        sym(
            "pp_per_step",
            "epoch-pipeline-expert-traffic",
            lambda r: sent_words(r, colls(r)),
            model="exact",
            subs={"N_PP": "PP", "d_model": "dmodel"},
            note="a Send +1 per stage boundary and the gradients' Send -1 (derived by "
            "`backward`), repeated N_PP i - 1 times; one device's words, the Epoch AI "
            "paper's total",
        ),
        sym(
            "ep_per_step",
            "epoch-pipeline-expert-traffic-experts",
            lambda r: sent_words(r, colls(r)) * devices(r),
            model="exact",
            subs={"b": "bo*bi", "d_model": "dmodel", "N_EP": "E"},
            note=f"uniform routing as an AllToAll of the tokens grouped by destination, and back "
            f"in `backward`, at each of the L - 1 boundaries; {EPOCH}",
        ),
        unchecked={
            "ep_per_token_appendix": "Appendix 8.1.2 counts only the expert boundaries "
            "no pipeline boundary covers, L - N_PP i, with both schemes combined; the "
            "corpus marks it inconsistent with Table 1's L - 1, which ep_per_step "
            "checks"
        },
    ),
    # ---- memory ---------------------------------------------------------------------------------
    "shard-example-local-shape": entry(
        num("local_shape", "shard-example-local-shape", lambda r: local_shape(r, "A")),
        num(
            "fraction_per_device",
            "shard-example-local-shape",
            lambda r: r.value(arr(r, "A").bytes_per_device / copy_bytes(r, "A")),
        ),
        sym(
            "fraction_per_device",
            "shard-example-local-shape",
            lambda r: arr(r, "A").bytes_per_device / copy_bytes(r, "A"),
        ),
    ),
    "shard-popquiz-2d-one-axis": entry(
        num("local_shape", "shard-popquiz-2d-one-axis", lambda r: local_shape(r, "A")),
        num(
            "bytes_per_device",
            "shard-popquiz-2d-one-axis",
            lambda r: r.value(arr(r, "A").bytes_per_device),
        ),
        sym(
            "bytes_per_device", "shard-popquiz-2d-one-axis", lambda r: arr(r, "A").bytes_per_device
        ),
        num(
            "hbm_load_time",
            "shard-popquiz-2d-one-axis",
            lambda r: r.value(arr(r, "A").bytes_per_device / hw(r, "W_hbm")),
            set={"W_hbm": 3.4e12},
            note="the problem's 3.4e12 B/s",
        ),
    ),
    "shard-popquiz-int8-replicated-memory": entry(
        num("local_shape", "shard-popquiz-int8-replicated-memory", lambda r: local_shape(r, "A")),
        num(
            "bytes_per_device",
            "shard-popquiz-int8-replicated-memory",
            lambda r: r.value(arr(r, "A").bytes_per_device),
        ),
        sym(
            "bytes_per_device",
            "shard-popquiz-int8-replicated-memory",
            lambda r: arr(r, "A").bytes_per_device,
        ),
        num(
            "replicas",
            "shard-popquiz-int8-replicated-memory",
            lambda r: r.value(arr(r, "A").bytes_total / copy_bytes(r, "A")),
        ),
        num(
            "bytes_total",
            "shard-popquiz-int8-replicated-memory",
            lambda r: r.value(arr(r, "A").bytes_total),
        ),
        sym(
            "bytes_total", "shard-popquiz-int8-replicated-memory", lambda r: arr(r, "A").bytes_total
        ),
    ),
    "shard-summary-32-way": entry(
        num(
            "shards_along_I",
            "shard-summary-32-way",
            lambda r: r.value(size_symbol("I") / local_shape(r, "A")[0]),
        ),
        sym("local_shape", "shard-summary-32-way", lambda r: local_shape(r, "A")[0]),
    ),
    "shard-q1-replication-ratio": entry(
        num(
            "ratio",
            "shard-q1-replication-ratio",
            lambda r: r.value(arr(r, "A").bytes_total / copy_bytes(r, "A")),
        ),
        sym(
            "ratio",
            "shard-q1-replication-ratio",
            lambda r: arr(r, "A").bytes_total / copy_bytes(r, "A"),
        ),
        num(
            "local_fraction",
            "shard-q1-replication-ratio",
            lambda r: r.value(arr(r, "A").bytes_per_device / copy_bytes(r, "A")),
        ),
    ),
    "tfm-gradient-checkpointing-memory": entry(
        num(
            "activations_full",
            "tfm-gradient-checkpointing-memory",
            lambda r: r.value(arr(r, "Full").bytes_total),
        ),
        num(
            "activations_block_remat",
            "tfm-gradient-checkpointing-memory",
            lambda r: r.value(arr(r, "Ckpt").bytes_total),
        ),
        sym(
            "flops_block_remat",
            "tfm-gradient-checkpointing-memory",
            lambda r: (
                sp.Add(*[e.flops for e in einsums(r)]),
                sp.Add(*[e.flops for e in einsums(r)[:3]]),
            ),
            expect=("8*BT*D*F", "6*BT*D*F"),
            note="8ND vs 6ND with N = D*F parameters and BT tokens: forward, two backward "
            "matmuls, and the recomputed forward",
        ),
        unchecked={"big_matmuls_only": "qualitative (which tensors to save)"},
    ),
    "tfm-kv-cache-size": entry(
        num("kv_cache_bytes", "tfm-kv-cache-size", lambda r: r.value(arr(r, "kv").bytes_total)),
    ),
    "train-dp-max-model-adam": entry(
        num(
            "bytes_per_param",
            "train-dp-max-model-adam",
            lambda r: r.value(r.totals["memory_per_device_bytes"] / size_symbol("P")),
        ),
        num(
            "max_params",
            "train-dp-max-model-adam",
            lambda r: r.chip.hbm_bytes / r.value(r.totals["memory_per_device_bytes"], P=1),
        ),
        num(
            "max_params",
            "train-dp-max-model-adam",
            lambda r: [
                bool(_compile("train-dp-max-model-adam", "book", None, (("P", p),)).warnings)
                for p in (9.5e9, 9.7e9)
            ],
            expect=[False, True],
            rmodel=None,
            note="K001 (memory over HBM) starts between 9.5e9 and 9.7e9",
        ),
    ),
    "train-q2-llama2-13b-memory": entry(
        num(
            "params_plus_optimizer",
            "train-q2-llama2-13b-memory",
            lambda r: r.value(sum(arr(r, n).bytes_total for n in ("params", "mu", "nu"))),
        ),
        num(
            "activations",
            "train-q2-llama2-13b-memory",
            lambda r: r.value(sum(arr(r, n).bytes_total for n in ("ck1", "ck2", "ck3"))),
        ),
    ),
    "train-q3a-llama2-13b-pure-dp": entry(
        num(
            "replicated_state_per_chip",
            "train-q3a-llama2-13b-pure-dp",
            lambda r: r.value(r.totals["memory_per_device_bytes"]),
        ),
        num(
            "pure_dp_possible",
            "train-q3a-llama2-13b-pure-dp",
            lambda r: (
                not r.warnings and r.value(r.totals["memory_per_device_bytes"]) <= r.chip.hbm_bytes
            ),
        ),
    ),
    "llama3-70b-min-chips-memory": entry(
        num(
            "params_bytes",
            "llama3-70b-min-chips-memory",
            lambda r: r.value(arr(r, "params").bytes_total),
        ),
        num(
            "optimizer_bytes",
            "llama3-70b-min-chips-memory",
            lambda r: r.value(arr(r, "mu").bytes_total + arr(r, "nu").bytes_total),
        ),
        num(
            "checkpoint_bytes",
            "llama3-70b-min-chips-memory",
            lambda r: r.value(arr(r, "ck").bytes_total),
        ),
        num(
            "total_bytes",
            "llama3-70b-min-chips-memory",
            lambda r: r.value(r.totals["memory_per_device_bytes"]),
        ),
        num(
            "min_chips",
            "llama3-70b-min-chips-memory",
            lambda r: r.value(r.totals["memory_per_device_bytes"]) / r.chip.hbm_bytes,
        ),
        num(
            "training_days_on_min_chips",
            "llama3-70b-min-chips-memory",
            lambda r: (
                _compile("llama3-70b-total-training-flops", "book", None, ()).value("t_math_s")
                / math.ceil(r.value(r.totals["memory_per_device_bytes"]) / r.chip.hbm_bytes)
                / 0.4
                / 86400
            ),
            recomputed=6.3e24 / (226 * 4.59e14 * 0.4) / 86400,
            note="the 6.3e24 FLOPs (one chip's T_math) on the 226 chips the state needs (225.7 "
            "rounded up) at 40% MFU: 1757 days; the corpus's recomputation 1752.18 scales "
            "the book's rounded 44 days by 8960/225",
        ),
    ),
    "llama3-70b-memory-per-chip": entry(
        num(
            "bytes_per_chip",
            "llama3-70b-memory-per-chip",
            lambda r: r.value(r.totals["memory_per_device_bytes"], N=8960),
            recomputed=(70e9 * 10 + 2 * 8192 * 4e6 * 4 * 80) / 8960,
            note="the corpus's recomputation 2.41071e9 divides the book's rounded 21.6e12; the "
            "exact total 21.67152e12 / 8960 is 2.418696e9",
        ),
        num(
            "bytes_per_chip_12_ckpt",
            "llama3-70b-memory-per-chip",
            lambda r: r.value(r.totals["memory_per_device_bytes"], N=8960),
            set={"Nck": 12},
        ),
    ),
    # ---- flops -----------------------------------------------------------------------------------
    "roofline-flops-time-h100-v6e": entry(
        num("t_math_h100", "roofline-flops-time-h100-v6e", lambda r: r.value("t_math_s")),
        num(
            "t_math_v6e",
            "roofline-flops-time-h100-v6e",
            lambda r: r.value("t_math_s"),
            hw="tpu-v6e",
            set={"C": 9.1e14},
            note="the text's 9.1e14 FLOP/s",
        ),
    ),
    "tfm-counting-dots-matmul": entry(
        sym("dot_flops", "tfm-counting-dots-matmul", lambda r: ein(r, "d").flops),
        sym("matvec_flops", "tfm-counting-dots-matmul", lambda r: ein(r, "v").flops),
        sym("matmul_flops", "tfm-counting-dots-matmul", lambda r: ein(r, "C").flops),
        sym(
            "matmul_data",
            "tfm-counting-dots-matmul",
            lambda r: (arr(r, "A").bytes_total + arr(r, "B").bytes_total) / 2,
            note="elements of A and B (bf16)",
        ),
        sym(
            "backward_flops",
            "tfm-counting-dots-matmul",
            lambda r: ein(r, "dB").flops + ein(r, "dA").flops,
        ),
        sym(
            "train_flops",
            "tfm-counting-dots-matmul",
            lambda r: ein(r, "C").flops + ein(r, "dB").flops + ein(r, "dA").flops,
        ),
    ),
    "tfm-general-contraction-flops": entry(
        sym("flops", "tfm-general-contraction-flops", lambda r: ein(r, "Out").flops),
        num(
            "no_contraction_note",
            "tfm-general-contraction-flops",
            lambda r: r.value(
                next(c for c in r.ops if c.op == "*").flops / copy_bytes(r, "Prod") * 2,
                **dict.fromkeys("GHIJKL", 3),
            ),
            expect=1,
            note="an elementwise product counts 1 FLOP an element, no factor 2",
        ),
    ),
    "tfm-q2-sharded-matmul-flops": entry(
        sym("theoretical_flops", "tfm-q2-sharded-matmul-flops", lambda r: ein(r, 0).flops),
        sym(
            "total_flops_all_devices",
            "tfm-q2-sharded-matmul-flops",
            lambda r: ein(r, 0).flops_per_device * devices(r),
        ),
        sym(
            "flops_per_device", "tfm-q2-sharded-matmul-flops", lambda r: ein(r, 0).flops_per_device
        ),
        num(
            "output_state",
            "tfm-q2-sharded-matmul-flops",
            lambda r: (ein(r, 0).dst, coll(r, 0).op, coll(r, 0).axes),
            expect=("C[B_X, F]{U_Y}", "AllReduce", ("Y",)),
            note="the local product keeps partial sums over Y; the bare C = ... reduces them",
        ),
    ),
    "tfm-q3-einsum-flops": entry(
        sym("flops", "tfm-q3-einsum-flops", lambda r: ein(r, "C").flops),
    ),
    "tfm-q7-deepseek-v3-mfu": entry(
        num("model_flops", "tfm-q7-deepseek-v3-mfu", lambda r: r.value("flops")),
        num(
            "mfu",
            "tfm-q7-deepseek-v3-mfu",
            lambda r: r.value("t_math_s") / (2.79e6 * 3600),
            set={"C_fp8": 1.513e15},
            note="T_math at the H800's FP8 rate over the 2.79e6 GPU-hours",
        ),
        unchecked={"available_flops": "a budget (GPU-hours times peak), not a program quantity"},
    ),
    "llama3-70b-flops-per-token": entry(
        num("flops_per_token", "llama3-70b-flops-per-token", lambda r: r.value("flops")),
        num("time_per_token_one_chip", "llama3-70b-flops-per-token", lambda r: r.value("t_math_s")),
    ),
    "llama3-70b-total-training-flops": entry(
        num("total_flops", "llama3-70b-total-training-flops", lambda r: r.value("flops")),
        num(
            "single_chip_years",
            "llama3-70b-total-training-flops",
            lambda r: r.value("t_math_s") / YEAR_S,
        ),
    ),
    "llama3-70b-full-pod-training-time": entry(
        num(
            "seconds",
            "llama3-70b-full-pod-training-time",
            lambda r: r.value("t_math_s") / 0.4,
            note="T_math over the 40% MFU",
        ),
        num(
            "days", "llama3-70b-full-pod-training-time", lambda r: r.value("t_math_s") / 0.4 / 86400
        ),
    ),
    "epoch-falcon-180b-matmul": entry(
        num(
            "matmul_shape",
            "epoch-falcon-180b-matmul",
            lambda r: [einsum_local(r, ein(r, 0))[d] for d in ("Dm", "Dff", "T")],
            note="the local sizes of d_model, d_ff and the tokens in the einsum",
        ),
        num("mac", "epoch-falcon-180b-matmul", lambda r: r.value(ein(r, 0).flops_per_device / 2)),
        num("time", "epoch-falcon-180b-matmul", lambda r: r.value("t_math_s")),
    ),
    # ---- hbm-roofline ----------------------------------------------------------------------------
    "roofline-v5e-critical-intensity": entry(
        num(
            "intensity_accel",
            "roofline-v5e-critical-intensity",
            lambda r: r.value(cond(r).rhs),
            set=SET_V5E_TEXT,
            note="the text's 8.2e11 B/s",
        ),
        sym("intensity_accel", "roofline-v5e-critical-intensity", lambda r: cond(r).rhs),
        sym(
            "intensity_accel",
            "roofline-v5e-critical-intensity",
            lambda r: cond(r).lhs / cond(r).rhs,
            against="condition",
            subs={"flops": lambda r: ein(r, 0).flops, "bytes": lambda r: ein(r, 0).hbm_bytes},
            note="the condition flops/bytes > C/W_hbm, as lhs / rhs",
        ),
    ),
    "roofline-dot-product-intensity": entry(
        sym(
            "flops",
            "roofline-dot-product-intensity",
            lambda r: ein(r, 0).flops,
            expect="2*N",
            note="shardc counts 2 FLOPs a multiply-add (the book 'Counting dots': x.y is 2P), not "
            "N multiplies + N-1 adds; the corpus asks tests to fix one convention",
        ),
        sym("bytes", "roofline-dot-product-intensity", lambda r: ein(r, 0).hbm_bytes),
        num(
            "intensity",
            "roofline-dot-product-intensity",
            lambda r: float(sp.limit(ein(r, 0).flops / ein(r, 0).hbm_bytes, size_symbol("N"), oo)),
            expect=0.5,
            note="the value's limit '-> 1/2'",
        ),
        num(
            "bound",
            "roofline-dot-product-intensity",
            lambda r: r.holds(cond(r)),
            set={"N": 1e6},
            expect=False,
            note="not compute-bound (0.5 < 240)",
        ),
    ),
    "roofline-matmul-critical-batch": entry(
        sym("flops", "roofline-matmul-critical-batch", lambda r: ein(r, 0).flops),
        sym("bytes", "roofline-matmul-critical-batch", lambda r: ein(r, 0).hbm_bytes),
        sym("intensity", "roofline-matmul-critical-batch", lambda r: cond(r).lhs),
        num(
            "critical_batch",
            "roofline-matmul-critical-batch",
            lambda r: r.value(threshold(r, "B", ("D", "F"))),
            set=SET_V5E_TEXT,
            note="B at which the intensity, with D and F large, reaches C/W_hbm (8.2e11 B/s)",
        ),
    ),
    "roofline-q1-int8-matmul": entry(
        sym(
            "bytes_loaded",
            "roofline-q1-int8-matmul",
            lambda r: arr(r, "X").bytes_total + arr(r, "Y").bytes_total,
        ),
        sym("bytes_written", "roofline-q1-int8-matmul", lambda r: arr(r, "Z").bytes_total),
        sym("ops", "roofline-q1-int8-matmul", lambda r: ein(r, 0).flops),
        sym("intensity", "roofline-q1-int8-matmul", lambda r: cond(r).lhs),
        num("int8_hbm_intensity", "roofline-q1-int8-matmul", lambda r: r.value(cond(r).rhs)),
        num(
            "critical_batch",
            "roofline-q1-int8-matmul",
            lambda r: r.value(threshold(r, "B", ("D", "F"))),
        ),
        sym("t_math", "roofline-q1-int8-matmul", lambda r: r.totals["t_math_s"]),
        sym("t_comms", "roofline-q1-int8-matmul", lambda r: r.totals["t_hbm_s"]),
        sym(
            "bounds",
            "roofline-q1-int8-matmul",
            lambda r: (r.totals["t_lower_s"], r.totals["t_upper_s"]),
            expect=(
                "Max(2*B*D*F/C_int8, (B*D + D*F + B*F)/W_hbm)",
                "2*B*D*F/C_int8 + (B*D + D*F + B*F)/W_hbm",
            ),
            note="T_comms here is the HBM time; the program has no collective",
        ),
    ),
    "roofline-q2-int8-weights-bf16-activations": entry(
        sym("intensity", "roofline-q2-int8-weights-bf16-activations", lambda r: cond(r).lhs),
        num(
            "critical_batch",
            "roofline-q2-int8-weights-bf16-activations",
            lambda r: r.value(threshold(r, "B", ("D", "F"))),
            set=SET_V5E_TEXT,
        ),
    ),
    "roofline-q4-per-example-weights": entry(
        sym("flops", "roofline-q4-per-example-weights", lambda r: ein(r, 0).flops),
        sym("bytes", "roofline-q4-per-example-weights", lambda r: ein(r, 0).hbm_bytes),
        sym("intensity", "roofline-q4-per-example-weights", lambda r: cond(r).lhs),
        num(
            "intensity",
            "roofline-q4-per-example-weights",
            lambda r: float(
                sp.limit(sp.limit(cond(r).lhs, size_symbol("D"), oo), size_symbol("F"), oo)
            ),
            expect=2,
            note="the value's '~2', with D and F large",
        ),
        num(
            "bound",
            "roofline-q4-per-example-weights",
            lambda r: (r.holds(cond(r)), size_symbol("B") in cond(r).lhs.free_symbols),
            set={"B": 1e6, "D": 1e6, "F": 1e6},
            expect=(False, False),
            note="never compute-bound, whatever B: the intensity does not depend on B",
        ),
    ),
    "roofline-q5-h100-critical-batch": entry(
        num(
            "critical_batch",
            "roofline-q5-h100-critical-batch",
            lambda r: r.value(threshold(r, "B", ("D", "F"))),
            set={"C": 1e15},
            note="the text's 1e15 FLOP/s",
        ),
    ),
    "tpu-vmem-required-intensity": entry(
        num(
            "required_intensity",
            "tpu-vmem-required-intensity",
            lambda r: r.value(cond(r).rhs),
            set={"W_hbm": 22 * 8.1e11},
            expect=Range(10, 20),
            note="VMEM as the memory the matmul streams from, at 22x the HBM bandwidth",
        ),
    ),
    "tpu-q1-llm-sampling-latency": entry(
        num(
            "bytes_total", "tpu-q1-llm-sampling-latency", lambda r: r.value(arr(r, "W").bytes_total)
        ),
        num(
            "bytes_per_chip",
            "tpu-q1-llm-sampling-latency",
            lambda r: r.value(arr(r, "W").bytes_per_device),
        ),
        num(
            "load_time",
            "tpu-q1-llm-sampling-latency",
            lambda r: r.value("t_hbm_s"),
            set={"W_hbm": 1.23e12},
            note="the answer's 1.23e12 B/s; the token's activations add 3e-5 of the bytes",
        ),
    ),
    "tpu-q3-pcie-operational-intensity": entry(
        sym(
            "condition",
            "tpu-q3-pcie-operational-intensity",
            lambda r: cond(r).lhs / cond(r).rhs,
            subs={"W_pcie": "W_hbm"},
            note="PCIe as the memory the matmul streams from (W_hbm = W_pcie)",
        ),
        num(
            "critical_batch",
            "tpu-q3-pcie-operational-intensity",
            lambda r: r.value(threshold(r, "B", ("D",), subs={"F": "4*D"})),
            set={"W_hbm": 1.5e10},
            note="F = 4D, D large",
        ),
    ),
    "tpu-q4-int8-matmul-latency": entry(
        num(
            "flops",
            "tpu-q4-int8-matmul-latency",
            lambda r: r.value(ein(r, 0).flops / size_symbol("B")),
            expect=1.3e8,
            note="the coefficient of B",
        ),
        sym("flops", "tpu-q4-int8-matmul-latency", lambda r: ein(r, 0).flops / size_symbol("B")),
        sym(
            "t_math",
            "tpu-q4-int8-matmul-latency",
            lambda r: r.totals["t_math_s"],
            subs={"C": "C_int8"},
        ),
        sym(
            "t_comms",
            "tpu-q4-int8-matmul-latency",
            lambda r: r.totals["t_hbm_s"],
            subs={"W": "W_hbm"},
        ),
        num(
            "critical_batch_hbm", "tpu-q4-int8-matmul-latency", lambda r: r.value(threshold(r, "B"))
        ),
        num(
            "critical_batch_vmem",
            "tpu-q4-int8-matmul-latency",
            lambda r: r.value(threshold(r, "B")),
            set={"W_hbm": 22 * 8.1e11},
            note="VMEM at 22x the HBM bandwidth",
        ),
    ),
    "tfm-q4-attention-arithmetic-intensity": entry(
        sym(
            "bytes",
            "tfm-q4-attention-arithmetic-intensity",
            lambda r: sum(arr(r, n).bytes_total for n in ("Q", "Kc", "V", "Out")),
            note="Q, K and V read and the output written; shardc's own einsum bytes also "
            "count the logits written and read back (no fusion)",
        ),
        sym(
            "flops",
            "tfm-q4-attention-arithmetic-intensity",
            lambda r: sp.Add(*[e.flops for e in einsums(r)]),
        ),
        sym(
            "intensity",
            "tfm-q4-attention-arithmetic-intensity",
            lambda r: (
                sp.Add(*[e.flops for e in einsums(r)])
                / sum(arr(r, n).bytes_total for n in ("Q", "Kc", "V", "Out"))
            ),
        ),
        sym(
            "prefill_intensity",
            "tfm-q4-attention-arithmetic-intensity",
            lambda r: (
                sp.Add(*[e.flops for e in einsums(r)])
                / sum(arr(r, n).bytes_total for n in ("Q", "Kc", "V", "Out"))
            ).subs(size_symbol("S"), size_symbol("T")),
        ),
        sym(
            "generation_intensity",
            "tfm-q4-attention-arithmetic-intensity",
            lambda r: (
                sp.Add(*[e.flops for e in einsums(r)])
                / sum(arr(r, n).bytes_total for n in ("Q", "Kc", "V", "Out"))
            ).subs(size_symbol("T"), 1),
        ),
        unchecked={
            "compute_bound_context": "ambiguous (S = 240 only for G >> 1; the corpus caveat)"
        },
    ),
    "tfm-q8-moe-critical-batch": entry(
        sym(
            "condition",
            "tfm-q8-moe-critical-batch",
            lambda r: (
                sp.limit(sp.limit(cond(r).lhs, size_symbol("D"), oo), size_symbol("F"), oo)
                / cond(r).rhs
            ).subs({size_symbol("Cap"): r.parse("k*B/E"), hw(r, "W_hbm"): hw(r, "C") / 240}),
            note="Cap = kB/E tokens per expert (uniform routing); C/W_hbm pinned at 240",
        ),
        sym(
            "critical_batch_formula",
            "tfm-q8-moe-critical-batch",
            lambda r: (threshold(r, "Cap", ("D", "F")) * r.parse("E/k")).subs(
                hw(r, "W_hbm"), hw(r, "C") / 240
            ),
        ),
        num(
            "critical_batch_deepseek",
            "tfm-q8-moe-critical-batch",
            lambda r: r.value(threshold(r, "Cap", ("D", "F")) * 256 / 8),
            set={"W_hbm": 1.97e14 / 240},
            note="E = 256, k = 8; C/W_hbm pinned at 240",
        ),
    ),
    "epoch-h100-matmul-balance": entry(
        num(
            "intensity",
            "epoch-h100-matmul-balance",
            lambda r: r.value(cond(r).rhs / 2),
            set={"C_int8": 2e15},
            note="C_int8/W_hbm over 2 FLOPs a MAC",
        ),
        sym(
            "balance_condition",
            "epoch-h100-matmul-balance",
            lambda r: r.totals["t_hbm_s"] / r.totals["t_math_s"],
            expect="(1/M + 1/N + 1/K)/(W_dram/C_mac)",
            subs={"W_dram": "W_hbm", "C_mac": "C_int8/2"},
            note="the balance T_hbm = T_math, as T_hbm/T_math = lhs/rhs",
        ),
        num(
            "square_size",
            "epoch-h100-matmul-balance",
            lambda r: r.value(threshold(r, "M", subs={"N": "M", "K": "M"})),
            set={"C_int8": 2e15},
        ),
    ),
    # ---- matmul-strategy -------------------------------------------------------------------------
    "shard-jax-example-local-shapes": entry(
        num("local_shape_A", "shard-jax-example-local-shapes", lambda r: local_shape(r, "A")),
        num("local_shape_B", "shard-jax-example-local-shapes", lambda r: local_shape(r, "Bm")),
        num("local_shape_C", "shard-jax-example-local-shapes", lambda r: local_shape(r, "C")),
        num(
            "implied_collective",
            "shard-jax-example-local-shapes",
            lambda r: "; then local ".join(steps(r)),
        ),
        num(
            "allgather_bytes_per_group",
            "shard-jax-example-local-shapes",
            lambda r: r.value(coll(r, 0).comm_bytes),
        ),
    ),
    "shard-case1-no-communication": entry(
        num("collectives", "shard-case1-no-communication", lambda r: colls(r)),
        num("output_sharding", "shard-case1-no-communication", lambda r: ein(r, 0).dst),
        sym("local_flops", "shard-case1-no-communication", lambda r: ein(r, 0).flops_per_device),
    ),
    "shard-case2-allgather-contracting": entry(
        num(
            "collectives",
            "shard-case2-allgather-contracting",
            lambda r: steps(r),
            expect=["AllGather_X(A[I, J_X]) -> A[I, J]", "A[I, J] ·_J B[J, K] -> C[I, K]"],
            note="the corpus's list without its ' (local)' remark",
        ),
        sym("t_comms", "shard-case2-allgather-contracting", lambda r: coll(r, 0).t_bandwidth),
        num(
            "alternative",
            "shard-case2-allgather-contracting",
            lambda r: [
                decisions.plan_text(r.decisions[0], a)
                for a in r.decisions[0].alternatives
                if not a.chosen
            ],
            expect=["slice B over X, local einsum, AllReduce_X(C)"],
            note="the compiler's words for 'local partial matmul + AllReduce_X of C'",
        ),
    ),
    "shard-case3-allreduce-or-reducescatter": entry(
        num("local_result", "shard-case3-allreduce-or-reducescatter", lambda r: ein(r, "C").dst),
        num(
            "replicated_output",
            "shard-case3-allreduce-or-reducescatter",
            lambda r: [step_text(r, coll(r, "C"))],
        ),
        sym(
            "replicated_output",
            "shard-case3-allreduce-or-reducescatter",
            lambda r: coll(r, "C").t_bandwidth,
        ),
        num(
            "sharded_output",
            "shard-case3-allreduce-or-reducescatter",
            lambda r: [step_text(r, coll(r, "C2"), {"C2": "C"})],
        ),
        sym(
            "sharded_output",
            "shard-case3-allreduce-or-reducescatter",
            lambda r: coll(r, "C2").t_bandwidth,
        ),
        num(
            "decomposition",
            "shard-case3-allreduce-or-reducescatter",
            lambda r: (signature(coll(r, "S")), signature(coll(r, "G"))),
            expect=("[I_X, J]{U_Y} -> [I_X, J_Y]", "[I_X, J_Y] -> [I_X, J]"),
            note="the two steps the text gives, without array names",
        ),
        *[
            sym(
                "decomposition",
                "shard-case3-allreduce-or-reducescatter",
                lambda r: coll(r, "R").time - coll(r, "S").time - coll(r, "G").time,
                model=m,
                expect="0",
                note="AllReduce = ReduceScatter + AllGather in time",
            )
            for m in ("book", "exact")
        ],
        unchecked={"autodiff_duality": "the language has no backward pass to derive"},
    ),
    "shard-case4-same-axis-conflict": entry(
        num(
            "invalid_output",
            "shard-case4-same-axis-conflict",
            lambda r: error_code(
                (BOOK / "shard-case4-same-axis-conflict.shard").read_text(encoding="utf-8")
                + "C3[I_X, K_X] = A ·_J B\n"
            ),
            expect="S002",
            note="asking for C[I_X, K_X] is an error: X shards two dims",
        ),
        # With the sizes symbolic the report shows one region's plans (the plans depend on
        # them); the book's answers are the plans at typical sizes (dims 4096, 4 devices).
        num(
            "option_1",
            "shard-case4-same-axis-conflict",
            lambda r: steps(typical(r), {"C1": "C"}, lines={ein(r, "C1").line}),
        ),
        num(
            "option_2",
            "shard-case4-same-axis-conflict",
            lambda r: steps(typical(r), {"C2": "C"}, lines={ein(r, "C2").line}),
        ),
    ),
    "shard-q4-allgather-vs-allreduce-strategy": entry(
        sym(
            "t_strategy_1",
            "shard-q4-allgather-vs-allreduce-strategy",
            lambda r: opt_time(r, ein(r, "Z1"), coll(r, "Yg")),
        ),
        sym(
            "t_strategy_2",
            "shard-q4-allgather-vs-allreduce-strategy",
            lambda r: opt_time(r, ein(r, "Xa·Y"), coll(r, "Z2")),
        ),
        sym(
            "strategy_2_compute_bound_if",
            "shard-q4-allgather-vs-allreduce-strategy",
            lambda r: ein(r, "Xa·Y").t_math / coll(r, "Z2").t_bandwidth,
            note="T_math / T_comms of strategy 2 = lhs / rhs of the condition",
        ),
        sym(
            "strategy_1_comms_bound_if",
            "shard-q4-allgather-vs-allreduce-strategy",
            lambda r: ein(r, "Z1").t_math / coll(r, "Yg").t_bandwidth,
            note="T_math / T_comms of strategy 1 = lhs / rhs of the condition",
        ),
        sym(
            "small_batch_winner",
            "shard-q4-allgather-vs-allreduce-strategy",
            lambda r: coll(r, "Z2").t_bandwidth / coll(r, "Yg").t_bandwidth,
            note="strategy 2's comms / strategy 1's comms = lhs / rhs",
        ),
        num(
            "small_batch_winner",
            "shard-q4-allgather-vs-allreduce-strategy",
            lambda r: [
                chosen(
                    _compile(
                        "shard-q4-allgather-vs-allreduce-strategy",
                        "exact",
                        None,
                        (("B", 128), ("D", d), ("F", 32768), ("X", 8)),
                    ),
                    "Z3",
                )
                for d in (8192, 128)
            ],
            expect=[
                "slice Xa over X, local einsum, AllReduce_X(Z3)",
                "AllGather_X(Y), local einsum",
            ],
            note="the planner at B = 128 < 2550: strategy 2 for D = 8192 > 2B, 1 for D = 128",
        ),
        sym(
            "large_batch_winner",
            "shard-q4-allgather-vs-allreduce-strategy",
            lambda r: coll(r, "Z2").t_bandwidth / ein(r, "Z1").t_math,
            note="strategy 2's comms / strategy 1's compute = lhs / rhs",
        ),
        num(
            "large_batch_winner",
            "shard-q4-allgather-vs-allreduce-strategy",
            lambda r: [
                chosen(
                    _compile(
                        "shard-q4-allgather-vs-allreduce-strategy",
                        "exact",
                        None,
                        (("B", 8192), ("D", d), ("F", 32768), ("X", 8)),
                        "statement",
                    ),
                    "Z3",
                )
                for d in (8192, 4096)
            ],
            expect=[
                "slice Xa over X, local einsum, AllReduce_X(Z3)",
                "AllGather_X(Y), local einsum",
            ],
            # The book asks which strategy wins for the product alone (--objective statement);
            # the whole program's T_lower picks other plans for Z1 and Z3 together.
            note="the planner at B = 8192 > 2550: strategy 2 for D = 8192 > 5100, 1 for 4096",
        ),
    ),
    "shard-q5-min-latency-replicated-output": entry(
        num(
            "best",
            "shard-q5-min-latency-replicated-output",
            lambda r: (
                same(
                    opt_time(r, ein(r, "C1"), coll(r, "O1")),
                    opt_time(r, ein(r, "C2"), coll(r, "O2")),
                ),
                same(coll(r, "O3").t_bandwidth, 2 * coll(r, "O1").t_bandwidth),
            ),
            expect=(True, True),
            note="(1) and (2) tie; (3) moves twice the bytes",
        ),
        *[
            sym(
                "derived_costs",
                "shard-q5-min-latency-replicated-output",
                get,
                expect=text,
                note="the corpus's formula for " + key,
            )
            for key, get, text in (
                (
                    "opt1_opt2",
                    lambda r: opt_time(r, ein(r, "C1"), coll(r, "O1")),
                    "Max(2*I*J*K/(64*C), 2*I*K/(3*W_ici))",
                ),
                (
                    "opt1_opt2",
                    lambda r: opt_time(r, ein(r, "C2"), coll(r, "O2")),
                    "Max(2*I*J*K/(64*C), 2*I*K/(3*W_ici))",
                ),
                (
                    "opt3",
                    lambda r: opt_time(r, ein(r, "A3·B3"), coll(r, "O3")),
                    "Max(2*I*J*K/(64*C), 2*2*I*K/(3*W_ici))",
                ),
                ("opt4", lambda r: opt_time(r, ein(r, "O4")), "2*I*J*K/C"),
            )
        ],
    ),
    "shard-q9-reducescatter-instead-of-allgather": entry(
        sym(
            "comm_allgather_first",
            "shard-q9-reducescatter-instead-of-allgather",
            lambda r: coll(r, "G").t_bandwidth,
            proportional=True,
        ),
        sym(
            "comm_reducescatter_after",
            "shard-q9-reducescatter-instead-of-allgather",
            lambda r: coll(r, "O2").t_bandwidth,
            proportional=True,
        ),
        *[
            sym(
                "ratio",
                "shard-q9-reducescatter-instead-of-allgather",
                lambda r: coll(r, "G").t_bandwidth / coll(r, "O2").t_bandwidth,
                model=m,
            )
            for m in ("book", "exact")
        ],
        *[
            sym(
                "replicated_output_variant",
                "shard-q9-reducescatter-instead-of-allgather",
                lambda r: coll(r, "O3").t_bandwidth / coll(r, "O2").t_bandwidth,
                model=m,
                expect="2",
                note="an AllReduce costs twice the ReduceScatter",
            )
            for m in ("book", "exact")
        ],
    ),
    # ---- parallelism-condition ------------------------------------------------------------------
    "roofline-two-chip-sharded-contraction": entry(
        sym("t_math", "roofline-two-chip-sharded-contraction", lambda r: r.totals["t_math_s"]),
        sym(
            "t_comms",
            "roofline-two-chip-sharded-contraction",
            lambda r: coll(r, 0).t_bandwidth,
            subs={"W_uni": "W_ici/2"},
            note="an AllReduce over a ring of two: one neighbour, one direction (W_ici/2)",
        ),
        num(
            "intensity_threshold_D_over_2",
            "roofline-two-chip-sharded-contraction",
            lambda r: r.value(dsolved(r, "D") / 2),
            note="D/2 where T_math = T_comms (D solved from the derived condition)",
        ),
        num(
            "critical_D",
            "roofline-two-chip-sharded-contraction",
            lambda r: r.value(dsolved(r, "D")),
        ),
        sym(
            "critical_D",
            "roofline-two-chip-sharded-contraction",
            lambda r: dcond(r).lhs / dcond(r).rhs,
            against="condition",
            subs={"W_uni": "W_ici/2"},
            note="the condition D > 2C/W_uni, as lhs / rhs",
        ),
    ),
    "train-dp-compute-bound-condition": entry(
        num(
            "forward_comms",
            "train-mlp-dp",
            lambda r: float(ring_bytes(r, step_pass(r, "forward").t_comms)),
        ),
        sym("t_comms_backward", "train-mlp-dp", lambda r: step_pass(r, "backward").t_comms),
        sym("t_math_backward", "train-mlp-dp", lambda r: step_pass(r, "backward").math),
        sym(
            "compute_bound_condition",
            "train-mlp-dp",
            lambda r: dcond(r).lhs / dcond(r).rhs,
            against="condition",
            note="the derived condition (the backward pass), lhs / rhs",
        ),
        num(
            "allreduces_on_critical_path",
            "train-mlp-dp",
            lambda r: any(c.overlap == "" for c in colls(r) if c.op == "AllReduce"),
            note="both gradient AllReduces are marked async (off the critical path)",
        ),
    ),
    "train-dp-v5p-batch-thresholds": entry(
        num(
            "per_chip_batch_1axis",
            "train-mlp-dp",
            lambda r: r.value(dsolved(r, "B/X")),
            hw="tpu-v5p",
            set={"C": 4.6e14},
            rmodel="book",
            note=f"the problem's C = 4.6e14 (4.59e14 gives 2550 exactly); {BOOK_ACC}",
        ),
        num(
            "per_chip_batch_3axes",
            "train-mlp-dp-v5p-pod",
            lambda r: r.value(dsolved(r, "B/(X*Y*Z)")),
            set={"C": 4.6e14},
            rmodel="book",
            note="a v5p pod, 16x20x28 (every axis a ring): each AllReduce gets 3 W_ici",
        ),
        num(
            "pod_batch_3axes",
            "train-mlp-dp-v5p-pod",
            lambda r: r.value(dsolved(r, "B")),
            set={"C": 4.6e14},
            rmodel="book",
            note="B at which B/(X*Y*Z) reaches the threshold",
        ),
    ),
    "train-fsdp-compute-bound-condition": entry(
        sym("t_math_forward", "train-mlp-fsdp", lambda r: step_pass(r, "forward").math),
        sym("t_comms_forward", "train-mlp-fsdp", lambda r: step_pass(r, "forward").t_comms),
        sym(
            "compute_bound_condition",
            "train-mlp-fsdp",
            lambda r: dcond(r).lhs / dcond(r).rhs,
            against="condition",
            note="the derived condition (forward pass; the backward pass ties), lhs / rhs",
        ),
        num(
            "ici_intensity_v5p",
            "train-mlp-fsdp",
            lambda r: r.value(dsolved(r, "B/X")),
            hw="tpu-v5p",
            rmodel="book",
            note=BOOK_ACC,
        ),
        *[
            sym(
                "multi_axis_threshold",
                variant("train-mlp-fsdp", ("mesh X", f"mesh X {at}")),
                lambda r: dsolved(r, "B/X"),
                subs={"n_axes": n},
                note=f"X over {n} physical axes ({at}): each collective gets {n} W_ici",
            )
            for n, at in ((2, "@ici(x, y)"), (3, "@ici(x, y, z)"))
        ],
    ),
    "train-fsdp-deepseek-v2-scale": entry(
        num(
            "max_chips",
            "train-mlp-fsdp-3axes",
            lambda r: r.value(dsolved(r, "X")),
            set={"B": 40e6},
            rmodel="book",
            note=f"X solved from B/X > C/(3 W_ici) (850 a chip) at B = 40M; {BOOK_ACC}",
        ),
        num(
            "pods",
            "train-mlp-fsdp-3axes",
            lambda r: r.value(dsolved(r, "X")) / pod_chips(r),
            set={"B": 40e6},
            rmodel="book",
            note="over the v5p pod's 16x20x28 = 8960 chips",
        ),
    ),
    "train-fsdp-llama3-70b-16m-batch": entry(
        num("total_flops", "llama3-70b-total-training-flops", lambda r: r.value("flops")),
        num(
            "chips",
            "train-mlp-fsdp-3axes",
            lambda r: r.value(dsolved(r, "X")),
            set={"B": 16e6},
            rmodel="book",
            note=f"X solved at B = 16M; {BOOK_ACC}",
        ),
        num(
            "training_days",
            "train-mlp-fsdp-3axes",
            lambda r: (
                _compile("llama3-70b-total-training-flops", "book", None, ()).value("t_math_s")
                / r.value(dsolved(r, "X"))
                / 0.5
                / 86400
            ),
            set={"B": 16e6},
            rmodel="book",
            note="the 6.3e24 FLOPs (one chip's T_math) over the chips, at 50% MFU",
        ),
    ),
    "train-tp-compute-bound-condition": entry(
        sym("t_math", "train-mlp-tp", lambda r: step_pass(r, "forward").math),
        sym("t_comms", "train-mlp-tp", lambda r: step_pass(r, "forward").t_comms),
        sym(
            "compute_bound_condition",
            "train-mlp-tp",
            lambda r: dcond(r).lhs / dcond(r).rhs,
            against="condition",
            note="the derived condition (the forward pass), lhs / rhs",
        ),
        *[
            sym(
                "max_tp_degree",
                variant("train-mlp-tp", ("mesh Y", f"mesh Y {at}")),
                lambda r: dsolved(r, "Y"),
                subs={"n_axes": n, "alpha": "C/W_ici"},
                note=f"Y over {n} physical axes ({at or 'one'}): Y < n_axes F / alpha",
            )
            for n, at in ((1, ""), (2, "@ici(x, y)"))
        ],
        num(
            "int8_invariance",
            "train-mlp-tp",
            lambda r: (
                r.value(hw(r, "C_int8") / hw(r, "W_ici")),
                math.isclose(
                    r.value(dsolved(r, "Y"), F=30000),
                    r.value(
                        dsolved(
                            _compile(
                                variant(
                                    "train-mlp-tp",
                                    *[(f"bf16[{s}", f"int8[{s}") for s in ("B", "D", "F")],
                                ),
                                "book",
                                "tpu-v5p",
                                (),
                            ),
                            "Y",
                        ),
                        F=30000,
                    ),
                ),
            ),
            hw="tpu-v5p",
            expect=(5100.0, True),
            rmodel=None,
            note="transcribed: C_int8/W_ici on a v5p, and the int8 program (activations and "
            "weights int8, half the bytes at twice the rate) allows the same Y",
        ),
    ),
    "train-tp-model-examples": entry(
        *[
            num(
                item,
                "train-mlp-tp",
                lambda r: r.holds(dcond(r)),
                hw="tpu-v5p",
                set={"F": 30000, "Y": y},
                rmodel="book",
                note=f"LLaMA 3-70B, F = 30,000 at Y = {y}; the text says TPUv4p but uses "
                "v5p's 2550",
            )
            for item, y in (("llama_8way_ok", 8), ("llama_16way_ok", 16))
        ],
        num(
            "required_F_8way",
            "train-mlp-tp",
            lambda r: r.value(dsolved(r, "F")),
            hw="tpu-v5p",
            set={"Y": 8},
            rmodel="book",
            note=BOOK_ACC,
        ),
        num(
            "gemma_max_degree",
            "train-mlp-tp",
            lambda r: r.value(dsolved(r, "Y")),
            hw="tpu-v5p",
            set={"F": 50000},
            rmodel="book",
            note="Gemma 7B, F = 50,000",
        ),
    ),
    "train-mixed-xopt-example": entry(
        *[
            sym(
                "t_fsdp_comms",
                prog,
                lambda r: group(step_pass(r, "forward"), r, "X"),
                subs={"M_X": mx},
                note=note,
            )
            for prog, mx, _, note in MIXED
        ],
        *[
            sym(
                "t_mp_comms",
                prog,
                lambda r: group(step_pass(r, "forward"), r, "Y"),
                subs={"M_Y": my},
                note=note,
            )
            for prog, _, my, note in MIXED
        ],
        *[
            sym("t_math", prog, lambda r: step_pass(r, "forward").math, subs={"N": "X*Y"})
            for prog, *_ in MIXED
        ],
        *[
            sym(
                "x_opt_formula",
                prog,
                lambda r, o=o: optimum(r, o),
                subs={"M_X": mx, "M_Y": my},
                note=f"the derived optimum, communication {OVERLAP_NAME[o]}",
            )
            for prog, mx, my, _ in MIXED
            for o in ("sum", "max")
        ],
        num(
            "x_opt",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(optimum(r), N=64),
            set={"B": 48000, "F": 32768},
            rmodel="book",
            note=f"N = 64 (4x4x4), M_X/M_Y = 2 (the corpus's assumption); {BOOK_ACC}",
        ),
        num(
            "chosen",
            "train-mlp-fsdp-tp-3d",
            lambda r: split(r, "X = {x}, Y = {y}", 64),
            set={"B": 48000, "F": 32768},
            rmodel=None,
            note="X_opt rounded to a power of two, Y the rest",
        ),
    ),
    "train-mixed-fsdp-tp-condition-sum": entry(
        sym(
            "condition_at_xopt",
            "train-mlp-fsdp-tp-3d",
            lambda r: (
                at_optimum(r, step_pass(r, "forward").t_comms)
                / at_optimum(r, step_pass(r, "forward").math)
            ),
            against="condition",
            subs={"M_X": 2, "M_Y": 1, "alpha": "C/W_ici"},
            note="the condition 'comms < math' as lhs / rhs = T_comms / T_math at X_opt",
        ),
        sym(
            "ratio_math_over_comms",
            "train-mlp-fsdp-tp-3d",
            lambda r: (
                at_optimum(r, step_pass(r, "forward").math)
                / at_optimum(r, step_pass(r, "forward").t_comms)
            ),
            subs={"M_X": 2, "M_Y": 1, "alpha": "C/W_ici"},
        ),
        num(
            "min_batch_per_chip",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(dsolved(r, "B/N", "at-optimum-sum", "X")),
            set={"F": 32768},
            rmodel="book",
            note=f"M_X M_Y = 2 (X over two torus axes); {BOOK_ACC}",
        ),
        num(
            "pure_fsdp_min_batch_per_chip",
            "train-mlp-fsdp-3axes",
            lambda r: r.value(dsolved(r, "B/X")),
            rmodel="book",
            note="FSDP over the three axes of the torus",
        ),
        sym(
            "takeaway_formula",
            "train-mlp-fsdp-tp-3d",
            lambda r: dsolved(r, "B/N", "at-optimum-sum", "X"),
            subs={"alpha": "C/W_ici"},
        ),
    ),
    "train-mixed-fsdp-tp-condition-max": entry(
        sym(
            "t_comms",
            "train-mlp-fsdp-tp-3d",
            lambda r: sp.Max(
                *[
                    g.subs(size_symbol("Y"), size_symbol("N") / size_symbol("X"))
                    for g in step_pass(r, "forward").groups(r.program.mesh_axes).values()
                ]
            ),
            subs={"M_X": 2, "M_Y": 1},
            note="the forward pass's X and Y parts, Y = N/X",
        ),
        sym(
            "x_opt",
            "train-mlp-fsdp-tp-3d",
            lambda r: optimum(r, "max"),
            subs={"M_X": 2, "M_Y": 1},
            note="where the two parts take equal time",
        ),
        sym(
            "ratio_math_over_comms",
            "train-mlp-fsdp-tp-3d",
            lambda r: (
                at_optimum(r, step_pass(r, "forward").math, "max")
                / at_optimum(r, group(step_pass(r, "forward"), r, "X"), "max")
            ),
            subs={"M_X": 2, "M_Y": 1, "alpha": "C/W_ici"},
        ),
        num(
            "min_batch_per_chip",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(dsolved(r, "B/N", "at-optimum-max", "X")),
            set={"F": 32768},
            rmodel="book",
            note=BOOK_ACC,
        ),
        num(
            "gain_vs_fsdp",
            "train-mlp-fsdp-tp-3d",
            lambda r: (
                r.value(dsolved(_compile("train-mlp-fsdp-3axes", "book", None, ()), "B/X"))
                / r.value(dsolved(r, "B/N", "at-optimum-max", "X"))
            ),
            set={"F": 32768},
            rmodel="book",
            note="pure FSDP over three axes (850) over the mixed floor",
        ),
        sym(
            "takeaway_formula",
            "train-mlp-fsdp-tp-3d",
            lambda r: dsolved(r, "B/N", "at-optimum-max", "X"),
            subs={"alpha": "C/W_ici"},
        ),
    ),
    "train-mixed-v5p-4096-crossover-000": entry(
        num(
            "predicted_crossover_batch",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(dsolved(r, "B", "at-optimum-sum", "X"), N=4096),
            set={"F": 32768},
            rmodel="book",
            only_recomputed="the book's 1.6e10 is a typo: its own expression 4096 * 2 * 2550^2 "
            "/ (8192 * 4) is 1.63e6 (D = 8192 cancels)",
        ),
        unchecked={"observed_crossover_batch": "read off a plot (1.5e6)"},
    ),
    "train-mixed-v5p-4096-crossover-004": entry(
        num(
            "predicted_crossover_batch",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(dsolved(r, "B", "at-optimum-max", "X"), N=4096),
            set={"F": 32768},
            rmodel="book",
            note=f"D = 8192 cancels; {BOOK_ACC}",
        ),
        unchecked={"observed_crossover_batch": "read off a plot (6e5)"},
    ),
    "train-pods-llama3-70b-ici-limits": entry(
        num(
            "mp_limit_per_axis",
            "train-mlp-tp",
            lambda r: r.value(dsolved(r, "Y")),
            hw="tpu-v5p",
            set={"F": 30000},
            rmodel="book",
            expect=Range(11, 12),
            note="Y < F/2550 = 11.8: the book's 11 is its whole part (the largest Y)",
        ),
        num(
            "pure_fsdp_max_chips_bs2m",
            "train-mlp-fsdp-3axes",
            lambda r: r.value(dsolved(r, "X")),
            set={"B": 2e6},
            rmodel="book",
            note=BOOK_ACC,
        ),
        num(
            "mixed_min_batch_per_chip",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(dsolved(r, "B/N", "at-optimum-sum", "X")),
            set={"F": 30000},
            rmodel="book",
            note=BOOK_ACC,
        ),
        num(
            "mixed_max_chips",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(dsolved(r, "N", "at-optimum-sum", "X")),
            set={"F": 30000, "B": 4e6},
            rmodel="book",
            note="N solved at B = 4M (the corpus's note: the BS = 2M of the paragraph gives 4,614)",
        ),
        num(
            "recipe_bs_3_5m",
            "train-mlp-fsdp-tp-3d",
            lambda r: split(r, "X(FSDP) = {x}, Y(MP) = {y}", 8960),
            set={"F": 30000, "B": 3.5e6},
            rmodel=None,
            note="X_opt on 8960 chips rounded to a power of two, Y the rest",
        ),
        num(
            "recipe_bs_3_5m",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(optimum(r), N=8960),
            set={"F": 30000, "B": 3.5e6},
            rmodel="book",
            only_recomputed="the item's value is the recipe, which the check above compares; "
            "this one compares X_opt = 1446 with the recomputation",
        ),
    ),
    "train-pods-dcn-data-parallel-000": entry(
        num(
            "hosts",
            "train-pods-dcn",
            lambda r: pod_chips(r) / r.chip.chips_per_host,
            only_recomputed="the book's '~2000 hosts': a pod's 8960 chips / 4 = 2240",
        ),
        num(
            "pod_dcn_bw",
            "train-pods-dcn",
            lambda r: r.value(hw(r, "W_dcn") * size_symbol("X"), X=pod_chips(r)),
            only_recomputed="the book's 5e13 counts 2000 hosts; 2240 x 2.5e10 = 5.6e13",
        ),
        num(
            "pod_flops",
            "train-pods-dcn",
            lambda r: r.value(hw(r, "C") * size_symbol("X"), X=pod_chips(r)),
            only_recomputed="the book's '8k * 4.5e14 = 3.8e18' is 3.6e18; 8960 x 4.59e14 = 4.11e18",
        ),
        num(
            "min_batch_per_pod",
            "train-pods-dcn",
            lambda r: r.value(dsolved(r, "B/P", "compute-bound-dcn")),
            rmodel="book",
            note=f"the DCN part of the backward pass alone; {BOOK_ACC}",
        ),
        num(
            "takeaway_value",
            "train-pods-dcn",
            lambda r: r.value(dsolved(r, "B/P", "compute-bound-dcn")),
        ),
    ),
    "train-pods-dcn-data-parallel-004": entry(
        sym("t_math", "train-pods-dcn", lambda r: step_pass(r, "backward").math, subs={"N": "P*X"}),
        sym(
            "t_comms",
            "train-pods-dcn",
            lambda r: sp.Add(
                *[x for c in step_pass(r, "backward").comms for lv, x in c.levels if lv == "dcn"]
            ),
            subs={"M": "X"},
            note="the DCN part of the backward pass's AllReduces (M = X chips a pod)",
        ),
        sym(
            "condition",
            "train-pods-dcn",
            lambda r: dcond(r, "compute-bound-dcn").lhs / dcond(r, "compute-bound-dcn").rhs,
            against="condition",
            subs={"M": "X", "N": "P*X"},
        ),
        num(
            "c_over_w_dcn",
            "train-pods-dcn",
            lambda r: r.value(dsolved(r, "B/P", "compute-bound-dcn")),
            set={"C": 4.46e14},
            rmodel="book",
            note="the revised training chapter's C = 4.46e14",
        ),
        num("batch_per_pod", "train-pods-dcn", lambda r: r.value(r.parse("B/P"), B=2e6, P=2)),
        num(
            "batch_per_chip",
            "train-pods-dcn",
            lambda r: r.value(r.parse("B/(P*X)"), B=2e6, P=2, X=8960),
        ),
        num(
            "recipe_bs_1m",
            "train-mlp-fsdp-tp-3d",
            lambda r: split(r, "X(FSDP) = {x}, Y(TP) = {y}", 8960, "max"),
            set={"B": 1e6, "F": 30000},
            rmodel=None,
            expect="X(FSDP) = 1024, Y(TP) = 8",
            note="X_opt = 773 on 8960 chips (F = 30,000) rounded, Y the rest; the remark "
            "'(BS = 2M needs DCN)' is the premise, not a result",
        ),
        num(
            "recipe_bs_1m",
            "train-mlp-fsdp-tp-3d",
            lambda r: (
                r.value(dsolved(r, "B/N", "at-optimum-max", "X")) < r.value(r.parse("B/N"), N=8192)
            ),
            set={"B": 1e6, "F": 30000},
            rmodel=None,
            expect=True,
            note="the corpus's derived check: the revised training chapter floor "
            "108 < 1e6/8192 = 122",
        ),
    ),
    "train-pods-10-pods-llama3-70b": entry(
        num("chips", "train-pods-10-pods", lambda r: r.value(devices(r))),
        num("per_pod_batch", "train-pods-10-pods", lambda r: r.value(r.parse("B/P"), B=40e6)),
        num(
            "training_days",
            "train-pods-10-pods",
            lambda r: r.value(r.totals["t_math_s"] * 15e12 / size_symbol("B") / 86400, B=40e6),
            note="15e12 tokens in steps of 40M at 100% MFU (the book's 'about 2 days'; 3.5 at 50%)",
        ),
    ),
    "train-per-layer-cost-table-dp": entry(
        *cost_table("train-mlp-dp"),
    ),
    "train-per-layer-cost-table-fsdp": entry(
        *cost_table("train-mlp-fsdp"),
    ),
    "train-per-layer-cost-table-tp": entry(
        *cost_table("train-mlp-tp"),
    ),
    "train-per-layer-cost-table-fsdp-tp": entry(
        *cost_table(
            "train-mlp-fsdp-tp",
            "4*B*D/X + 8*D*F/Y",
            "the book's table says 8BD/X + 8DF/Y; its own algorithm (AllGather_Y dOut, "
            "ReduceScatter_Y dIn, the In gather shared with the forward pass) gives "
            "4BD/X: the corpus's recomputation",
        ),
    ),
    "train-q3b-llama2-13b-pure-fsdp": entry(
        num(
            "sequences_per_batch",
            "train-q3-llama2-13b-fsdp-memory",
            lambda r: r.value(r.parse("B/T"), B=3 * 2**20),
            note="the book's 96 reads 3M as 3 * 2^20 tokens (3e6 / 32768 = 91.6)",
        ),
        num(
            "total_hbm",
            "train-q3-llama2-13b-fsdp-memory",
            lambda r: r.chip.hbm_bytes * r.value(devices(r), N=4096),
        ),
        num(
            "checkpoint_activations",
            "train-q3-llama2-13b-fsdp-memory",
            lambda r: r.value(sum(arr(r, n).bytes_total for n in ("ck1", "ck2", "ck3"))),
        ),
        num(
            "total_memory",
            "train-q3-llama2-13b-fsdp-memory",
            lambda r: r.value(sum(a.bytes_total for a in r.cost.arrays)),
        ),
        num(
            "memory_per_chip",
            "train-q3-llama2-13b-fsdp-memory",
            lambda r: r.value(r.totals["memory_per_device_bytes"], N=4096),
        ),
        num(
            "min_batch_fsdp",
            "train-mlp-fsdp-3axes",
            lambda r: r.value(dsolved(r, "B")),
            set={"X": 4096},
            rmodel="book",
            note=f"X = 4096 = 16^3 over the three axes of a 16x16x16 slice; {BOOK_ACC}",
        ),
        num(
            "pure_fsdp_ok",
            "train-mlp-fsdp-3axes",
            lambda r: holds_at(r, dcond(r), B=3e6),
            set={"X": 4096},
            rmodel="book",
        ),
    ),
    "train-q3c-llama2-13b-mixed-000": entry(
        num(
            "mixed_min_batch_per_chip",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(dsolved(r, "B/N", "at-optimum-sum", "X")),
            set={"F": 13824},
            rmodel="book",
            note=BOOK_ACC,
        ),
        num(
            "verdict",
            "train-mlp-fsdp-tp-3d",
            lambda r: (
                r.value(dsolved(r, "B/N", "at-optimum-sum", "X"))
                > r.value(dsolved(_compile("train-mlp-fsdp-3axes", "book", None, ()), "B/X"))
            ),
            set={"F": 13824},
            rmodel=None,
            expect=True,
            note="transcribed: the mixed floor (940) is above pure FSDP's (850); the suggested "
            "4-chip TP subrings are not compared",
        ),
    ),
    "train-q3c-llama2-13b-mixed-004": entry(
        num(
            "mixed_min_batch_per_chip",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(dsolved(r, "B/N", "at-optimum-max", "X")),
            set={"F": 13824},
            rmodel="book",
            note=BOOK_ACC,
        ),
        num(
            "actual_batch_per_chip",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(r.parse("B/N"), B=3e6, N=4096),
        ),
        num(
            "x_opt",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(optimum(r, "max"), N=4096),
            set={"F": 13824, "B": 3e6},
            rmodel="book",
            note="the text's sqrt((F/B)...) is a typo; it evaluates sqrt(B/F * 2 * N)",
        ),
        num(
            "chosen",
            "train-mlp-fsdp-tp-3d",
            lambda r: split(r, "{x}-way DP (FSDP) x {y}-way TP", 4096, "max"),
            set={"F": 13824, "B": 3e6},
            rmodel=None,
        ),
        num(
            "step_time",
            "train-q3-llama2-13b-step",
            lambda r: r.value(r.totals["t_math_s"], N=4096) / 0.4,
            set={"C": 4.6e14},
            note="T_math at 40% MFU, the text's C = 4.6e14",
        ),
    ),
    "llama3-70b-fsdp-only-sequence-limit": entry(
        num(
            "sequences",
            "llama3-70b-sequence-batch",
            lambda r: r.value(size_symbol("K")) if r.value(r.parse("K*T")) == 4 * 2**20 else None,
            note="K sequences of T tokens, K T = 4 * 2^20",
        ),
        num(
            "max_dp_degree",
            "llama3-70b-sequence-batch",
            lambda r: max(
                n
                for n in (512, 1024, 2048, 4096, 8960)
                if error_code(variant("llama3-70b-sequence-batch", ("mesh X=1024", f"mesh X={n}")))
                is None
            ),
            note="the largest X the program accepts: K_X needs X to divide K (S004 beyond)",
        ),
        num(
            "possible",
            "llama3-70b-sequence-batch",
            lambda r: (
                error_code(variant("llama3-70b-sequence-batch", ("mesh X=1024", "mesh X=8960")))
                is None
            ),
            note="on 8960 chips the batch's 1024 sequences cannot be split (S004)",
        ),
    ),
    "llama3-70b-fsdp-with-sequence-parallel": entry(
        num(
            "per_chip_batch",
            "train-mlp-fsdp-3axes",
            lambda r: r.value(r.parse("B/X"), B=4 * 2**20, X=8960),
            note="tokens over chips: sequence parallelism shards the token dim itself",
        ),
        num(
            "threshold",
            "train-mlp-fsdp-3axes",
            lambda r: r.value(dsolved(r, "B/X")),
            rmodel="book",
            note=BOOK_ACC,
        ),
        num(
            "compute_bound",
            "train-mlp-fsdp-3axes",
            lambda r: holds_at(r, dcond(r), B=4 * 2**20, X=8960),
            rmodel="book",
        ),
    ),
    "llama3-70b-mixed-fsdp-tp": entry(
        num(
            "min_batch_per_chip",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(dsolved(r, "B/N", "at-optimum-sum", "X")),
            set={"F": 28672},
            rmodel="book",
            note=BOOK_ACC,
        ),
        num(
            "per_chip_batch",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(r.parse("B/N"), B=4 * 2**20, N=8960),
            note="the 4M batch as 4 * 2^20 tokens",
        ),
        num(
            "x_opt",
            "train-mlp-fsdp-tp-3d",
            lambda r: r.value(optimum(r), N=8960),
            set={"F": 28672, "B": 4.19e6},
            rmodel="book",
            note=BOOK_ACC,
        ),
        num(
            "chosen",
            "train-mlp-fsdp-tp-3d",
            lambda r: split(r, "{x}-way FSDP and {y}-way model parallelism", 8960),
            set={"F": 28672, "B": 4.19e6},
            rmodel=None,
            note="2048 x 4 = 8192 of the 8960 chips (the corpus's caveat)",
        ),
    ),
    # ---- transformer-count -----------------------------------------------------------------------
    "tfm-mlp-train-flops-params": entry(
        *[
            sym(
                "train_flops_per_matmul",
                "tfm-block",
                lambda r, w=w: flops(weight_einsums(r, w)),
                note=f"{w}: forward, input gradient, weight gradient",
            )
            for w in FFW
        ],
        sym(
            "train_flops",
            "tfm-block",
            lambda r: flops(weight_einsums(r, *FFW)),
            note="the gate's elementwise ops are not matmuls",
        ),
        sym("params", "tfm-block", lambda r: elements(r, *FFW)),
    ),
    "tfm-attention-projection-flops-params": entry(
        sym(
            "train_flops",
            "tfm-block",
            lambda r: selfattn(flops(weight_einsums(r, *ATTN))),
            subs={"N": "K*G"},
            note="N = K G query heads; keys from the same tokens (S = T)",
        ),
        sym("params", "tfm-block", lambda r: elements(r, *ATTN), subs={"N": "K*G"}),
        sym(
            "mha_summary",
            "tfm-block",
            lambda r: tuple(
                mha(r, x)
                for x in (
                    elements(r, *ATTN),
                    flops(weight_einsums(r, *ATTN) + attention_einsums(r)),
                )
            ),
            expect=("4*D*K*H", "24*B*T*D*K*H + 12*B*T**2*K*H"),
            note="transcribed with N = K (MHA: G = 1) and S = T",
        ),
    ),
    "tfm-dot-product-attention-flops": entry(
        sym(
            "qk_train_flops",
            "tfm-block",
            lambda r: flops([e for e in einsums(r) if "logits[" in e.src + e.dst]),
            note="Q K^T forward and its two gradients",
        ),
        sym(
            "total_train_flops",
            "tfm-block",
            lambda r: flops(attention_einsums(r)),
            subs={"N": "K*G"},
        ),
        sym(
            "softmax",
            "tfm-block",
            lambda r: sp.Add(*[c.flops for c in r.ops if c.op == "exp"]),
            proportional=True,
            expect="B*T*S*K*G",
            note="transcribed O(BTSN), N = K G: the exponential, once "
            "forward and once in the backward pass (elementwise counts are conventions)",
        ),
    ),
    "tfm-6nd-rule": entry(
        sym(
            "total_flops",
            "tfm-block",
            lambda r: (
                selfattn(flops(weight_einsums(r)))
                - 6 * size_symbol("B") * size_symbol("T") * elements(r, *r.program.params)
            ),
            subs={"L": 1},
            note="one block (L = 1): the weights' matmuls against 6 x tokens "
            "x parameters, with N = K G and S = T",
        ),
        sym(
            "unembedding",
            "tfm-unembedding",
            lambda r: (flops(weight_einsums(r)), elements(r, "W_U")),
            expect=("6*B*T*D*V", "D*V"),
            note="transcribed: 6BTDV FLOPs for DV parameters",
        ),
    ),
    "tfm-attention-vs-matmul-ratio": entry(
        sym(
            "ratio",
            "tfm-block",
            lambda r: mha(r, flops(attention_einsums(r)) / flops(weight_einsums(r))),
            subs={"N": "K"},
            note="MHA (G = 1, N = K), self-attention (S = T)",
        ),
        sym(
            "ratio",
            "tfm-block",
            lambda r: mha(r, flops(attention_einsums(r)) / flops(weight_einsums(r))).subs(
                {
                    size_symbol("F"): 4 * size_symbol("D"),
                    size_symbol("H"): size_symbol("D") / size_symbol("K"),
                }
            ),
            expect="T/(8*D)",
            note="with F = 4D and N H = D",
        ),
        sym(
            "dominant_when",
            "tfm-block",
            lambda r: size_symbol("T") / attention_threshold(r),
            against="condition",
            note="T solved from attention FLOPs > the weights' (F = 4D, N H = D), as T / threshold",
        ),
        num("threshold_D_8192", "tfm-block", lambda r: r.value(attention_threshold(r), D=8192)),
        num(
            "threshold_gemma27b",
            "tfm-block",
            lambda r: r.value(attention_threshold(r), D=4608),
            note="8 x 4608 = 36,864; the book's 'around 32k' is 13% low (within its 0.15)",
        ),
    ),
    "tfm-q1-params-and-kv-per-token": entry(
        num(
            "total_params",
            "tfm-param-count",
            lambda r: r.value(elements(r, *FFW, *ATTN, "norm", "embed", "unembed")),
            set=Q1,
            note="the book evaluates with 4e3 and 16e3 for 4096 and 16384 (16e9; the corpus "
            "caveat), within its 0.1",
        ),
        num(
            "attention_fraction",
            "tfm-param-count",
            lambda r: r.value(elements(r, *ATTN) / elements(r, *ATTN, *FFW)),
            set=Q1,
        ),
        num(
            "kv_bytes_per_token",
            "tfm-param-count",
            lambda r: r.value(arr(r, "kv").bytes_total),
            set=Q1,
        ),
    ),
    "tfm-q5-attention-equals-projections": entry(
        sym(
            "condition",
            "tfm-block",
            lambda r: mha(r, flops(weight_einsums(r, *ATTN)) / flops(attention_einsums(r))),
            against="condition",
            subs={"N": "K"},
            note="Eq(lhs, rhs) as lhs / rhs: projection over attention FLOPs (MHA, S = T)",
        ),
        num(
            "T_equal",
            "tfm-block",
            lambda r: r.value(
                sp.solve(
                    sp.Eq(
                        *[
                            mha(r, flops(x))
                            for x in (attention_einsums(r), weight_einsums(r, *ATTN))
                        ]
                    ),
                    size_symbol("T"),
                )[0],
                D=4096,
            ),
        ),
    ),
    "train-q1-llama2-13b-params": entry(
        num("ffw_params", "tfm-param-count", lambda r: r.value(elements(r, *FFW)), set=LLAMA2),
        num(
            "attention_params", "tfm-param-count", lambda r: r.value(elements(r, *ATTN)), set=LLAMA2
        ),
        num(
            "vocab_params",
            "tfm-param-count",
            lambda r: r.value(elements(r, "embed", "unembed")),
            set=LLAMA2,
            only_recomputed="the book's 0.3e9 is 2 x 32000 x 5120 = 0.328e9 (it sums 0.39e9)",
        ),
        num(
            "total_params",
            "tfm-param-count",
            lambda r: r.value(elements(r, *FFW, *ATTN, "embed", "unembed")),
            set=LLAMA2,
            note="no norms (the book's count)",
        ),
        *card_checks("llama2-13b", LLAMA2, "the book's 0.3e9 is 0.328e9"),
    ),
    "llama3-70b-param-count": entry(
        num("ffw_params", "tfm-param-count", lambda r: r.value(elements(r, *FFW)), set=LLAMA3),
        num(
            "vocab_params",
            "tfm-param-count",
            lambda r: r.value(elements(r, "embed", "unembed")),
            set=LLAMA3,
        ),
        num(
            "attention_params", "tfm-param-count", lambda r: r.value(elements(r, *ATTN)), set=LLAMA3
        ),
        num(
            "total_params",
            "tfm-param-count",
            lambda r: r.value(elements(r, *FFW, *ATTN, "embed", "unembed")),
            set=LLAMA3,
            note="no norms (the book's count)",
        ),
        *card_checks("llama3-70b", LLAMA3),
    ),
}


# ---- running a check ----------------------------------------------------------------------------
def expected_item(pid: str, item: str) -> dict:
    problem = CORPUS[pid]
    if item.startswith("inputs."):
        node: Any = problem
        for key in item.split("."):
            node = node[key]
        return {"name": item, "value": node}
    matches = [e for e in problem["expected"] if e["name"] == item]
    assert matches, f"{pid}: no corpus item {item!r}"
    return matches[0]


def _ours(check: Check, model: str) -> Any:
    return check.get(compiled(check, model))


def _subs_value(r: Report, v: Any) -> Any:
    if callable(v):
        return v(r)
    if isinstance(v, str):
        return r.parse(v)
    return sp.sympify(v)


def _theirs(r: Report, check: Check, text: str) -> sp.Expr:
    """The corpus's formula over our names; a condition `lhs > rhs` (or `Eq(lhs, rhs)`)
    becomes lhs / rhs."""
    expr = r.parse(text)  # `Eq(lhs, rhs)` stays unevaluated
    if isinstance(expr, sp.Rel):
        expr = expr.lhs / expr.rhs
    return expr.subs(
        {r.parse(k): _subs_value(r, v) for k, v in check.subs.items()}, simultaneous=True
    )


def _close(got: Any, want: Any, rel: float) -> bool:
    if isinstance(want, Range):
        return got is not None and want.low <= got <= want.high
    if isinstance(want, bool) or isinstance(got, bool) or isinstance(want, str):
        return got == want
    if isinstance(want, (list, tuple)):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(want)
            and all(_close(g, w, rel) for g, w in zip(got, want, strict=True))
        )
    if isinstance(want, dict):
        return got == want
    if isinstance(want, (int, float)):
        return got is not None and math.isclose(
            float(got), float(want), rel_tol=rel, abs_tol=0 if want else 1e-12
        )
    return got == want


def run_symbolic(pid: str, check: Check) -> list[str]:
    item = expected_item(pid, check.item)
    r = compiled(check, check.model)
    ours = check.get(r)
    texts = (
        check.expect if check.expect is not None else item.get(check.against, item.get("condition"))
    )
    pairs = zip(ours, texts, strict=True) if isinstance(texts, tuple) else [(ours, texts)]
    sizes = {k: v for k, v in r.environment().items() if k.is_integer}
    problems = []
    for mine, text in pairs:
        theirs = _theirs(r, check, text).subs(sizes)
        mine = sp.sympify(mine).subs(sizes)
        if check.limit is not None:
            ok = sp.limit(sp.simplify(mine / theirs), r.parse(check.limit), oo) == 1
        elif check.proportional:
            names = {s.name for s in r.parse(text).free_symbols}
            ok = not ({s.name for s in sp.simplify(mine / theirs).free_symbols} & names)
        else:
            ok = same(mine, theirs)
        if not ok:
            problems.append(f"{check.item} [{check.model}]: ours {mine} vs {text} -> {theirs}")
    return problems


def run_numeric(pid: str, check: Check) -> list[str]:
    item = expected_item(pid, check.item)
    tolerance = CORPUS[pid].get("tolerance") or 0
    problems = []
    compared = False
    want = check.expect if check.expect is not None else item.get("value")
    if want is not None and not check.only_recomputed:
        compared = True
        got = _ours(check, check.model)
        rel = tolerance or EXACT_REL
        if not _close(got, want, rel):
            problems.append(
                f"{check.item} [{check.model}]: ours {got!r} vs book {want!r} (rel {rel})"
            )
    recomputed = check.recomputed if check.recomputed is not None else item.get("recomputed")
    if check.rmodel is not None and recomputed is not None:
        compared = True
        got = _ours(check, check.rmodel)
        if not _close(got, recomputed, RECOMPUTED_REL):
            problems.append(
                f"{check.item} [{check.rmodel}]: ours {got!r} vs recomputed {recomputed!r}"
            )
    assert compared, f"{pid}: {check.item}: nothing to compare"
    return problems


def run_check(pid: str, check: Check) -> list[str]:
    try:
        return run_symbolic(pid, check) if check.symbolic else run_numeric(pid, check)
    except Exception as exc:  # a failed lookup or compile is a failed known check
        if check.known:
            return [f"{check.item}: {type(exc).__name__}: {exc}".splitlines()[0]]
        raise


RESULTS: dict[str, str] = {}
"""What test_entry found for each entry it ran to the end: pass, skip or xfail."""


def status(pid: str) -> str:
    """What the table expects of an entry."""
    e = ENTRIES[pid]
    return "skip" if isinstance(e, str) else "xfail" if e.known else "pass"


def _param(pid: str):
    e = ENTRIES.get(pid)
    marks = []
    if isinstance(e, Entry) and e.known:
        marks.append(
            pytest.mark.xfail(
                strict=True, raises=KnownDiscrepancy, reason="; ".join(dict.fromkeys(e.known))
            )
        )
    return pytest.param(pid, marks=marks, id=pid)


def test_every_entry_of_the_five_kinds_is_in_the_table():
    assert set(ENTRIES) == set(CORPUS)
    assert len(CORPUS) == 95


def test_every_program_compiles_and_is_used():
    """Each tests/book program compiles in both models (K001, memory over HBM, is only a
    warning: the training-scale programs declare whole batches) and some check reads it."""
    used = {c.program for e in ENTRIES.values() if isinstance(e, Entry) for c in e.checks}
    for path in sorted(BOOK.glob("*.shard")):
        assert path.stem in used, f"{path.name} is not used by any check"
        for model in ("book", "exact"):
            _compile(path.stem, model, None, ())


@pytest.mark.parametrize("pid", [_param(pid) for pid in CORPUS])
def test_entry(pid: str):
    e = ENTRIES[pid]
    if isinstance(e, str):
        RESULTS[pid] = "skip"
        pytest.skip(e)
    assert e.checks, pid
    names = {x["name"] for x in CORPUS[pid]["expected"]}
    covered = {c.item for c in e.checks} | set(e.unchecked)
    assert names <= covered, f"{pid}: items neither checked nor listed: {names - covered}"
    known: list[str] = []
    for check in e.checks:
        problems = run_check(pid, check)
        if check.known:
            assert problems, f"{pid}: {check.item} now passes; remove `known` ({check.known})"
            known.extend(problems)
        else:
            assert not problems, "\n".join(problems)
    RESULTS[pid] = "xfail" if known else "pass"
    if known:
        raise KnownDiscrepancy("\n".join(known))


def test_summary():
    """The counts, asserted, and docs/book-corpus.md in step with the table. When the entries
    ran first (the whole module), the counts are what they did; alone, what the table expects."""
    ran = len(RESULTS) == len(CORPUS)
    if ran:
        assert RESULTS == {p: status(p) for p in CORPUS}
    counts = {s: sum(status(p) == s for p in CORPUS) for s in ("pass", "skip", "xfail")}
    skipped_collectives = {
        p for p in CORPUS if CORPUS[p]["kind"] == "collective-time" and status(p) == "skip"
    }
    # Every collective-time entry is compiled (the point-to-point ones with Send).
    assert skipped_collectives == set()
    doc = {
        m[1]: m[2]
        for m in re.finditer(
            r"^\| `([a-z0-9-]+)` \| [a-z-]+ \| (\w+) \|", DOC.read_text(encoding="utf-8"), re.M
        )
    }
    assert doc == {p: status(p) for p in CORPUS}
    print(
        f"\nbook corpus: {counts['pass']} passed, {counts['skip']} skipped, "
        f"{counts['xfail']} known failures (of {len(CORPUS)})"
        + ("" if ran else " [expected by the table; run the whole module for results]")
    )
    assert sum(counts.values()) == len(CORPUS) == 95
