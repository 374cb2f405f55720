"""The `derive-cost` pass: SymPy formulas for FLOPs, bytes and times of every op and in total.

Formulas and their sources are in docs/cost-model.md. Hardware quantities stay symbols
(C, W_hbm, W_ici, t_hop); numbers come later, when a report evaluates against a chip.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import sympy as sp

from shardc.hardware.levels import LEVEL_NAMES
from shardc.lang.dtypes import promote
from shardc.lang.layout import DimSharding, Layout, format_axes
from shardc.lang.send import format_send
from shardc.lang.syntax import BINARY_FLOPS, ELEMENTWISE_FUNCTIONS
from shardc.passes.conditions import separate, vanishes
from shardc.passes.context import Context
from shardc.passes.graph import ops_in_order
from shardc.passes.ir import (
    Collective,
    CompiledProgram,
    Einsum,
    Elementwise,
    Input,
    LocalSlice,
    Op,
    Reduction,
    Topology,
    Value,
)
from shardc.passes.layout_cost import (
    global_elements,
    local_bytes,
    local_elements,
    step_bytes,
    transfer_time,
)
from shardc.passes.memo import CROSSOVER, memoized, typed
from shardc.passes.memory import kept_activations
from shardc.passes.reshard import Step
from shardc.passes.schedule import classify
from shardc.passes.send_cost import send_time
from shardc.passes.sizes import known_sizes
from shardc.passes.symbols import HardwareSymbols, as_expr, count_expr, size_symbol, times_count

if TYPE_CHECKING:
    from shardc.hardware import Chip
    from shardc.passes.fusion import Fusion

ZERO = sp.Integer(0)


@dataclass(frozen=True, slots=True)
class OpCost:
    """Costs of one op; every number is a SymPy expression."""

    index: int
    line: int
    kind: str  # "einsum" | "collective" | "elementwise"
    op: str
    axes: tuple[str, ...]
    array: str
    src: str
    dst: str
    reason: str
    # Every figure not set is zero: a collective does no FLOPs, an einsum moves no bytes.
    flops: sp.Expr = ZERO
    flops_per_device: sp.Expr = ZERO
    hbm_bytes: sp.Expr = ZERO
    comm_bytes: sp.Expr = ZERO
    time: sp.Expr = ZERO
    t_math: sp.Expr = ZERO
    t_hbm: sp.Expr = ZERO
    t_bandwidth: sp.Expr = ZERO
    t_latency: sp.Expr = ZERO
    levels: tuple[tuple[str, sp.Expr], ...] = ()
    """Collectives: time on each network level (ici, nvlink, pcie, ib, dcn)."""
    level_bandwidths: tuple[tuple[str, sp.Expr], ...] = ()
    crossover_bytes: sp.Expr | None = None
    """Collectives: the V at which the latency and bandwidth terms are equal."""
    overlap: str = ""
    """Collectives off the critical path: "prefetch" (a parameter's gather) or "async" (a
    gradient reduction); "" otherwise (passes/schedule.py)."""
    count: sp.Expr = sp.Integer(1)
    """How many times the op runs (the product of its `repeat` counts); every other figure is
    per run, and the program's totals multiply by it."""
    times: tuple[int, ...] = ()
    """The lines of the `repeat` blocks it runs in, outermost first."""
    fused_into: int | None = None
    """The op (index) whose kernel this op runs in (`fuse-elementwise`): its HBM bytes and time
    are counted there, and here are zero. None: not fused, or the group's root."""
    fusion: str = ""
    """On a fused group's root: XLA's fusion kind, "loop", "input" (a reduction) or "output"
    (a matmul); "" otherwise."""
    expected: sp.Expr | None = None
    """The calibrated expectation of `time` (`_expected`); None: the same as `time` (no
    calibration, a collective, or an op that costs nothing). Read it as `t_expected`."""

    @property
    def t_expected(self) -> sp.Expr:
        return self.time if self.expected is None else self.expected


@dataclass(frozen=True, slots=True)
class ArrayCost:
    name: str
    dtype: str
    layout: str
    bytes_per_device: sp.Expr
    bytes_total: sp.Expr
    count: sp.Expr = sp.Integer(1)
    """Instances: an array made inside `repeat L { }` exists once per iteration; the byte
    figures are per instance."""


@dataclass(frozen=True, slots=True)
class ConditionCost:
    """A named inequality; `relation` is a SymPy relational."""

    name: str
    text: str
    relation: sp.Basic


@dataclass(frozen=True, slots=True)
class BlockCost:
    """A `repeat` block: its figures for one iteration and in total (`count` iterations)."""

    line: int
    text: str
    count: sp.Expr
    per_iteration: dict[str, sp.Expr]
    total: dict[str, sp.Expr]


@dataclass(frozen=True, slots=True)
class ProgramCost:
    program: CompiledProgram
    model: str
    ops: tuple[OpCost, ...]
    arrays: tuple[ArrayCost, ...]
    totals: dict[str, sp.Expr]
    derive_conditions: Callable[[], tuple[ConditionCost, ...]]
    """The compute-bound conditions, derived on first use (`conditions`): simplifying them is
    the costliest SymPy work of a compile, and `plan`, `sweep` and `Report.at` read only
    totals."""
    symbols: HardwareSymbols
    blocks: tuple[BlockCost, ...] = ()
    recomputed: tuple[int, ...] = ()
    """Ops the backward pass runs again under --remat (charged twice in the totals)."""
    matmul_precision: str = "default"
    """`--matmul-precision`: which rate `C_f32` takes (`Chip.matmul_rate`)."""
    _conditions: list[tuple[ConditionCost, ...]] = field(
        default_factory=list, repr=False, compare=False
    )

    @property
    def conditions(self) -> tuple[ConditionCost, ...]:
        if not self._conditions:
            self._conditions.append(self.derive_conditions())
        return self._conditions[0]


BLOCK_FIGURES = (
    "flops",
    "flops_per_device",
    "hbm_bytes",
    "comm_bytes",
    "t_math_s",
    "t_hbm_s",
    "t_comms_s",
    "t_compute_s",
)
"""What a report gives per iteration and in total for each `repeat` block."""


def summed(terms: list[tuple[Any, Any]]) -> sp.Expr:
    """`sum(x * count)`, each distinct term multiplied once: a program repeats a few formulas
    thousands of times, and SymPy's `Add` of n terms costs far more than counting them.
    The result is the same expression (`Add` collects equal terms into coefficients).

    >>> B = sp.Symbol("B")
    >>> summed([(2 * B, 1), (2 * B, 1), (B, 3)]) == sp.Add(2 * B, 2 * B, 3 * B)
    True
    """
    from collections import Counter

    return sp.Add(
        *[x * count * k if k > 1 else x * count for (x, count), k in Counter(terms).items()]
    )


def derive_cost(
    program: CompiledProgram,
    ctx: Context,
    fusion: Fusion | None = None,
    memo: dict[tuple[Hashable, ...], OpCost | None] | None = None,
    *,
    chip: Chip | None = None,
    bindings: Mapping[str, float] = MappingProxyType({}),
    lean: bool = False,
    explain: bool = True,
    sums: bool = True,
) -> ProgramCost:
    """The `derive-cost` pass: every op's FLOPs, bytes and times as SymPy formulas, and the
    program's totals; with `fusion`, each fused group's HBM bytes counted once, at its root.
    `memo` keeps each op shape's formulas for the next program costed in the same context (the
    whole-program search costs many lowerings of one program). `chip` (`Unit.chip`) gives the
    calibration and the rates; `bindings` (`Unit.bindings`) the mesh sizes a Send's distances
    need. `lean`: only what the whole-program search compares (each op's figures, T_math,
    T_hbm and T_comms, of which it takes T_lower and T_upper), without the ops' texts, the
    arrays, the other totals and the blocks (`driver.objective.light`). `explain`
    (`passes.pipeline.DeriveCost.explain`): each collective's crossover size. `sums=False`
    with `lean`: not even those three (a search for the scheduled step reads only the ops)."""
    syms = HardwareSymbols(frozenset(n for n, _ in program.dims) | frozenset(program.mesh_axes))
    _rate_assumptions(program, ctx, chip)
    mesh = program.mesh_axes
    n_devices = sp.Mul(*[size_symbol(a) for a in mesh]) if mesh else sp.Integer(1)
    costs: list[OpCost] = []
    calibrated = chip is not None and getattr(chip, "calibration", None) is not None
    # by (an einsum?, T_math, T_hbm): ops repeat them
    expected_memo: dict[tuple[str, sp.Expr, sp.Expr], sp.Expr | None] = {}
    cal = getattr(chip, "calibration", None)
    # the calibrated network levels, and `alpha:<level>` for those that give their own latency
    network = frozenset(f.level for f in cal.network) if cal is not None else frozenset()
    network |= (
        frozenset(f"alpha:{f.level}" for f in cal.network if f.latency_s is not None)
        if cal is not None
        else frozenset()
    )
    network |= (
        frozenset(f"ranks:{f.level}" for f in cal.network if f.half_ranks is not None)
        if cal is not None
        else frozenset()
    )
    if cal is not None and cal.clock is not None:
        network |= {"power-cap"}
    if cal is not None and cal.exposed is not None:
        network |= {"exposed-math"}
    if cal is not None and cal.attention is not None:
        network |= {"attention"}
    # Programs repeat op shapes (a layer after a layer): formulas depend only on layouts,
    # dtypes and axes, so each shape is derived once and its expressions reused.
    memo = {} if memo is None else memo
    overlap = classify(program)
    for index, op in ops_in_order(program):
        key = _shape_key(op)
        changes: dict[str, Any] = {}  # one copy per op: three `replace`s were a fifth of the pass
        if key is not None and key in memo:
            c = memo[key]
            if c is not None and lean:
                changes.update(index=index, line=op.span.line)
            elif c is not None:
                changes.update(
                    index=index,
                    line=op.span.line,
                    array=_array_of(op),
                    src=_src_text(op, mesh),
                    dst=op.out.format(mesh),
                    reason=_reason(op),
                )
        else:
            c = _op_cost(
                index, op, ctx, syms, mesh, program.mesh, program.topology, bindings, explain
            )
            if c is not None and calibrated:
                c = dataclasses.replace(c, expected=_expected(c, syms, expected_memo, network))
            if key is not None:
                memo[key] = c
        if c is not None:
            if c.kind == "collective":
                changes["overlap"] = overlap.get(index, "")
            if op.times:
                changes.update(count=times_count(op.times), times=tuple(t.line for t in op.times))
            if lean and key is not None and changes:
                # the search's candidates share most ops at the same places: each placed copy
                # is made once (`replace` was a fifth of a candidate's costing)
                placed = ("placed", key, *changes.items())
                hit = memo.get(placed)
                if hit is None:
                    hit = memo[placed] = dataclasses.replace(c, **changes)
                costs.append(hit)
                continue
            costs.append(dataclasses.replace(c, **changes) if changes else c)
    made = dict(program.array_times)
    block: dict[
        tuple[Layout, str], tuple[sp.Expr, sp.Expr]
    ] = {}  # per (layout, dtype): arrays repeat them

    def sizes(v: Value) -> tuple[sp.Expr, sp.Expr]:
        key = (v.layout, v.dtype)
        if key not in block:
            b = local_bytes(v.layout, v.dtype, size_symbol)
            block[key] = (b, b * n_devices)
        return block[key]

    arrays = tuple(
        ArrayCost(v.array, v.dtype, v.format(mesh), *sizes(v), times_count(made.get(v.array, ())))
        for v in (() if lean else program.arrays)
    )
    aliases = dict(program.aliases)

    core: frozenset[int] = frozenset()  # the flash kernel's ops (priced at eta_attn)
    if ctx.attention == "flash" and program.backward_line is not None:
        plain, costs = costs, _flash(costs, program, syms)
        core = frozenset(c.index for c, d in zip(plain, costs, strict=True) if c is not d)
    if fusion is not None and fusion.groups:
        from shardc.passes.fusion_cost import fused_costs

        costs = fused_costs(costs, program, fusion, syms, ctx.attention == "flash")
    if calibrated and (ctx.attention == "flash" or (fusion is not None and fusion.groups)):
        costs = _with_expected(costs, syms, expected_memo, network, core)
    # Under --remat the backward pass runs forward compute ops again: they are charged twice.
    redo = kept_activations(program, ctx.remat, ctx.attention)[1]
    again = [c for c in costs if c.index in set(redo)]
    charged = costs + again

    def total(field: str) -> sp.Expr:
        return summed([(getattr(c, field), c.count) for c in charged]) if costs else ZERO

    if lean and not sums:
        return ProgramCost(
            program,
            ctx.model,
            tuple(costs),
            arrays,
            {},
            lambda: (),
            syms,
            (),
            redo,
            ctx.options.matmul_precision,
        )
    t_math, t_hbm = total("t_math"), total("t_hbm")
    t_comms = summed([(c.time, c.count) for c in charged if c.kind == "collective"])
    if lean:
        return ProgramCost(
            program,
            ctx.model,
            tuple(costs),
            arrays,
            {"t_math_s": t_math, "t_hbm_s": t_hbm, "t_comms_s": t_comms},
            lambda: (),
            syms,
            (),
            redo,
            ctx.options.matmul_precision,
        )
    totals = {
        "flops": total("flops"),
        "flops_per_device": total("flops_per_device"),
        "hbm_bytes": total("hbm_bytes"),
        "comm_bytes": total("comm_bytes"),
        "t_math_s": t_math,
        "t_hbm_s": t_hbm,
        "t_comms_s": t_comms,
        "t_lower_s": sp.Max(t_math, t_hbm, t_comms, evaluate=False),
        "t_upper_s": t_math + t_hbm + t_comms,
        # An alias (`B = A`) names blocks already counted under A: storage is counted once.
        "memory_per_device_bytes": summed(
            [(a.bytes_per_device, a.count) for a in arrays if a.name not in aliases]
        )
        if arrays
        else ZERO,
    }
    level_terms: dict[str, list[tuple[sp.Expr, sp.Expr]]] = {}
    bw_terms: dict[str, list[tuple[sp.Expr, sp.Expr]]] = {}
    for c in charged:
        for lv, x in c.levels:
            level_terms.setdefault(lv, []).append((x, c.count))
        for lv, x in c.level_bandwidths:
            bw_terms.setdefault(lv, []).append((x, c.count))
    # One Add per level: adding term by term re-flattens the sum each time (quadratic).
    by_level = {lv: summed(xs) for lv, xs in level_terms.items()}
    bw_by_level = {lv: summed(xs) for lv, xs in bw_terms.items()}
    totals.update({f"t_comms_{lv}_s": x for lv, x in by_level.items()})
    t_compute = summed([(c.time, c.count) for c in charged if c.kind != "collective"])
    t_critical = summed(
        [(c.time, c.count) for c in charged if c.kind == "collective" and not c.overlap]
    )
    totals.update(
        {
            "t_compute_s": t_compute,
            "t_step_max_s": sp.Max(t_compute, t_comms, evaluate=False),
            "t_step_sum_s": t_compute + t_comms,
            "t_comms_critical_s": t_critical,
        }
    )
    totals["t_expected_s"] = _expected_total(charged, totals, syms, calibrated)
    if again:
        totals["t_recompute_s"] = summed([(c.time, c.count) for c in again])
        totals["recompute_flops_per_device"] = summed(
            [(c.flops_per_device, c.count) for c in again]
        )

    def conditions() -> tuple[ConditionCost, ...]:
        # `charged`: the collectives run again count here as in T_comms and T_math
        mesh_sizes = {size_symbol(n): v for n, v in known_sizes(program.mesh, bindings).items()}
        return _conditions(program, charged, t_math, t_hbm, bw_by_level, syms, mesh_sizes)

    return ProgramCost(
        program,
        ctx.model,
        tuple(costs),
        arrays,
        totals,
        conditions,
        syms,
        _blocks(program, charged),
        redo,
        ctx.options.matmul_precision,
    )


def _rate_assumptions(program: CompiledProgram, ctx: Context, chip: Chip | None) -> None:
    """H030: a product whose dtype the chip file gives no rate for runs at another dtype's
    rate (`Chip.matmul_rate`); warn once per dtype, at its first product, naming the rate."""
    if chip is None:
        return
    said: set[str] = set()
    for op in program.ops:
        if isinstance(op, Einsum):
            dtype = promote(op.lhs.dtype, op.rhs.dtype)
            if dtype in said:
                continue
            said.add(dtype)
            rate = chip.matmul_rate(dtype, ctx.options.matmul_precision)
            if rate.assumption is not None:
                ctx.diagnostics.warning(
                    "H030",
                    rate.assumption,
                    op.span,
                    notes=(
                        f"{chip.name}'s chip file lists rates for "
                        f"{', '.join(chip.flops)}; {dtype} products are timed at "
                        f"{rate.value:.4g} FLOP/s",
                    ),
                )


def _with_expected(
    costs: list[OpCost],
    syms: HardwareSymbols,
    memo: dict[tuple[str, sp.Expr, sp.Expr], sp.Expr | None],
    network: frozenset[str] = frozenset(),
    core: frozenset[int] = frozenset(),
) -> list[OpCost]:
    """Each op's expected time again once `--attention flash` or fusion changed its roofline
    figures; an op they left alone keeps its own (the same object: no copy). The products of
    `core` (the flash kernel's ops) run at eta_attn where the calibration gives it."""
    out = []
    for c in costs:
        e = _expected(c, syms, memo, network, c.index in core)
        out.append(c if e is c.expected else dataclasses.replace(c, expected=e))
    return out


def _expected(
    c: OpCost,
    syms: HardwareSymbols,
    memo: dict[tuple[str, sp.Expr, sp.Expr], sp.Expr | None],
    network: frozenset[str] = frozenset(),
    in_kernel: bool = False,
) -> sp.Expr | None:
    """An op's expected time (docs/cost-model.md, "Expected time"): a launch, then the slower
    of its math at eta_mxu of the peak and its HBM traffic at eta_hbm of W_hbm. On a chip
    whose calibration gives its clocks ("power-cap" in `network`), the math runs at the boost
    clock (k_boost times faster) under the power cap: the op takes at least its math at the
    power-limited clock, `max(t_call + max(T_math / (eta_mxu k_boost), T_hbm / eta_hbm),
    T_math / eta_mxu)` (the launch gap, drawing no math power, is repaid by a faster clock).
    Where it gives `c_expose` ("exposed-math"), a memory-bound product's traffic takes `T_hbm /
    eta_hbm + c_expose x` its math (the share its pipeline stages leave exposed). A product
    inside the flash-attention kernel (`in_kernel`) runs at eta_attn instead of eta_mxu where
    the calibration gives it ("attention": a published kernel measurement). A collective
    pays each calibrated level of `network` at its achievable bus bandwidth
    (`expected_collective`). None (the roofline's time) for a collective on no calibrated
    level and for an op that costs nothing (a slice, or an op fused into another's kernel: the
    kernel pays once)."""
    if c.kind == "collective":
        return expected_collective(c, syms, network) if network else None
    if c.t_math == 0 and c.t_hbm == 0:
        return None
    attn = in_kernel and c.kind == "einsum" and "attention" in network
    key = ("attention" if attn else "einsum" if c.kind == "einsum" else "", c.t_math, c.t_hbm)
    if key not in memo:
        hbm = c.t_hbm / syms.eta_hbm
        math = c.t_math / (syms.eta_attn if attn else syms.eta_mxu)
        fast = math / syms.k_boost if "power-cap" in network else math
        if "exposed-math" in network and c.kind == "einsum":  # a product's pipeline stages
            hbm = hbm + syms.c_expose * fast  # leave c_expose of its math exposed
        if c.t_math == 0:
            memo[key] = syms.t_call + c.t_hbm / syms.eta_hbm
        elif "power-cap" in network:  # the calibration gives its clocks
            memo[key] = sp.Max(
                syms.t_call + sp.Max(fast, hbm, evaluate=False), math, evaluate=False
            )
        else:
            memo[key] = syms.t_call + sp.Max(math, hbm, evaluate=False)
    return memo[key]


def expected_collective(
    c: OpCost, syms: HardwareSymbols, network: frozenset[str]
) -> sp.Expr | None:
    """A collective's expected time (docs/cost-model.md, "Calibrated collectives"): each level's
    roofline time with its peak bandwidth W_<level> replaced by the achievable bus bandwidth
    W_<level> * eta_<level> * n / (n + n_half_<level>), n the bytes per rank (the op's V, the
    size nccl-tests reports), the half size scaled by the group over the group it was
    measured at where that is larger (`ranks:<level>`: a ring of N ranks takes N - 1 steps,
    each paying its latency), and, where the calibration gives one (`alpha:<level>` in
    `network`), its latency by max(alpha_<level>, the chip's); levels without a calibration
    keep their roofline time. Each level's time falls with its bandwidth and rises with its
    latency, eta <= 1, so it is never below the roofline. None when no level is calibrated."""
    n = c.comm_bytes
    if n == 0 or not any(lv in network for lv, _ in c.levels):
        return None
    parts = []
    group = sp.Mul(*[size_symbol(a) for a in c.axes])
    for lv, x in c.levels:
        if lv in network:
            half = syms.n_half(lv)
            if f"ranks:{lv}" in network:
                half = half * sp.Max(1, group / syms.ranks(lv))
            eff = syms.eta_net(lv) * n / (n + half)
            swap = {syms.w(lv): syms.w(lv) * eff}
            if f"alpha:{lv}" in network:
                swap[syms.t(lv)] = sp.Max(syms.alpha(lv), syms.t(lv))
            x = x.xreplace(swap)
        parts.append(x)
    return sp.Add(*parts)


def _expected_total(
    charged: list[OpCost], totals: dict[str, sp.Expr], syms: HardwareSymbols, calibrated: bool
) -> sp.Expr:
    """The program's expected time: its ops one after another (a device runs its kernels in
    turn), the collectives that nothing overlaps added, at least the whole communication time
    and at least one program call (t_dispatch). Never below T_lower: each op's expected time is
    at least its math and its HBM time, and the sum of maxima is at least the maximum of sums.
    Collectives count at their expected time (`expected_collective`). Without a calibration
    it is T_lower."""
    if not calibrated:
        return totals["t_lower_s"]
    compute = summed([(c.t_expected, c.count) for c in charged if c.kind != "collective"])
    comms = [c for c in charged if c.kind == "collective"]
    if all(c.expected is None for c in comms):  # no calibrated level: the roofline's sums
        critical, whole = totals["t_comms_critical_s"], totals["t_comms_s"]
    else:
        critical = summed([(c.t_expected, c.count) for c in comms if not c.overlap])
        whole = summed([(c.t_expected, c.count) for c in comms])
    serial = compute + critical
    terms = [syms.t_dispatch, serial]
    if critical != whole:
        terms.append(whole)
    return sp.Max(*terms, evaluate=False)


def _conditions(
    program: CompiledProgram,
    costs: list[OpCost],
    t_math: sp.Expr,
    t_hbm: sp.Expr,
    bw_by_level: dict[str, sp.Expr],
    syms: HardwareSymbols,
    mesh_sizes: Mapping[sp.Symbol, int] = MappingProxyType({}),
) -> tuple[ConditionCost, ...]:
    """The report's conditions: compute against HBM, against communication (the whole step,
    the backward pass, each network level), each as `program part > hardware ratio`. A side
    that is 0 at the mesh's known sizes (`mesh_sizes`: the InfiniBand part of a collective
    whose X is 1) gives no condition (`passes.conditions.vanishes`)."""
    conditions: list[ConditionCost] = []

    def nonzero(x: sp.Expr) -> bool:
        return not vanishes(x, mesh_sizes)

    if t_math != 0 and nonzero(t_hbm):
        rel = separate(t_math, t_hbm, syms.is_hardware)
        conditions.append(
            ConditionCost(
                "compute-vs-hbm", "compute-bound rather than HBM-bound (T_math > T_hbm)", rel
            )
        )
    t_comms_bw = summed([(c.t_bandwidth, c.count) for c in costs if c.kind == "collective"])
    if t_math != 0 and nonzero(t_comms_bw):
        rel = separate(t_math, t_comms_bw, syms.is_hardware)
        conditions.append(
            ConditionCost(
                "compute-vs-comms",
                "compute-bound rather than communication-bound (T_math > T_comms, bandwidth terms)",
                rel,
            )
        )
    if program.backward_line is not None:
        bwd = [c for c in costs if c.line == program.backward_line]
        m_b = summed([(c.t_math, c.count) for c in bwd])
        c_b = summed([(c.t_bandwidth, c.count) for c in bwd if c.kind == "collective"])
        if m_b != 0 and nonzero(c_b):
            conditions.append(
                ConditionCost(
                    "backward-compute-vs-comms",
                    "the backward pass compute-bound (its T_math > its "
                    "T_comms, bandwidth terms; the training chapter states DP and FSDP this way)",
                    separate(m_b, c_b, syms.is_hardware),
                )
            )
    if t_math != 0 and len(bw_by_level) > 1:
        for lv, bw in bw_by_level.items():
            if nonzero(bw):
                conditions.append(
                    ConditionCost(
                        f"compute-vs-{lv}",
                        f"compute-bound over the {LEVEL_NAMES[lv]} part alone "
                        f"(T_math > T_comms on {lv}, bandwidth terms)",
                        separate(t_math, bw, syms.is_hardware),
                    )
                )
    return tuple(conditions)


def _blocks(program: CompiledProgram, costs: list[OpCost]) -> tuple[BlockCost, ...]:
    """Per-iteration and total figures of each `repeat` block (a layer, and the L layers)."""
    out = []
    for block in program.repeats:
        inside = [c for c in costs if block.line in c.times]
        n = count_expr(block)
        per: dict[str, sp.Expr] = {}
        for key in BLOCK_FIGURES:
            terms = []
            for c in inside:
                value = _figure(c, key)
                if value != 0:
                    terms.append(value * sp.cancel(c.count / n))
            per[key] = sp.Add(*terms)
        out.append(BlockCost(block.line, block.text, n, per, {k: v * n for k, v in per.items()}))
    return tuple(out)


def _figure(c: OpCost, key: str) -> sp.Expr:
    match key:
        case "t_math_s" | "t_hbm_s":
            return getattr(c, key[:-2])
        case "t_comms_s":
            return c.time if c.kind == "collective" else ZERO
        case "t_compute_s":
            return c.time if c.kind != "collective" else ZERO
    return getattr(c, key)


def _flash(costs: list[OpCost], program: CompiledProgram, syms: HardwareSymbols) -> list[OpCost]:
    """`--attention flash`: the attention core (the scores, the probabilities and their
    gradients) stays on chip, so the ops that make or read it move only their other operands
    through HBM (Dao et al. 2022, "FlashAttention", section 3.2: O(N^2 d^2 / M) HBM accesses
    against O(N d + N^2) for the standard algorithm, here counted as N d)."""
    from shardc.passes.memory import attention_core

    assert program.backward_line is not None
    core = attention_core(program, program.backward_line, backward=True)
    out = []
    for c in costs:
        op = program.ops[c.index]
        values = (
            (op.lhs, op.rhs, op.out)
            if isinstance(op, Einsum)
            else (*op.args, op.out)
            if isinstance(op, Elementwise)
            else (op.src, op.out)
            if isinstance(op, Reduction)
            else ()
        )
        if not any(v.id in core for v in values):
            out.append(c)
            continue
        hbm = sum(
            (local_bytes(v.layout, v.dtype, size_symbol) for v in values if v.id not in core), ZERO
        )
        t_hbm = hbm / syms.w_hbm
        time = sp.Max(c.t_math, t_hbm, evaluate=False) if c.kind == "einsum" else t_hbm
        out.append(dataclasses.replace(c, hbm_bytes=hbm, t_hbm=t_hbm, time=time))
    return out


def _op_cost(
    index: int,
    op: Op,
    ctx: Context,
    syms: HardwareSymbols,
    mesh: tuple[str, ...],
    program_mesh: tuple[tuple[str, int | None], ...] = (),
    topology: Topology | None = None,
    bindings: Mapping[str, float] = MappingProxyType({}),
    explain: bool = True,
) -> OpCost | None:
    line = op.span.line
    match op:
        case Input():
            return None
        case Einsum(out=out, lhs=lhs, rhs=rhs):
            dtype = promote(lhs.dtype, rhs.dtype)
            every: dict[str, tuple[str, ...]] = {}
            for v in (lhs, rhs):
                for d in v.layout.dims:
                    every.setdefault(d.dim, d.axes)
            full = Layout(tuple(DimSharding(d, a) for d, a in every.items()))
            flops = 2 * global_elements(full, size_symbol)
            fpd = 2 * local_elements(full, size_symbol)
            hbm = sum((local_bytes(v.layout, v.dtype, size_symbol) for v in (lhs, rhs, out)), ZERO)
            src = _src_text(op, mesh)
            t_math = fpd / syms.flops(dtype)
            t_hbm = hbm / syms.w_hbm
            return OpCost(
                index,
                line,
                "einsum",
                "einsum",
                (),
                out.array,
                src,
                out.format(mesh),
                op.case,
                flops=flops,
                flops_per_device=fpd,
                hbm_bytes=hbm,
                time=sp.Max(t_math, t_hbm, evaluate=False),
                t_math=t_math,
                t_hbm=t_hbm,
            )
        case Collective(op=kind, out=out, src=src, axes=axes, dim=dim):
            step = Step(kind, axes, dim, src.layout, out.layout)
            moved = step_bytes(step, src.dtype, size_symbol)
            known = dict(program_mesh)
            if all(known.get(a) == 1 for a in axes):
                moved = ZERO  # every axis has one device: nothing moves
            if kind == "Send":  # point-to-point: distances need the axes' sizes
                t = send_time(
                    moved,
                    op.send,
                    size_symbol,
                    ctx.model,
                    topology,
                    syms.links(),
                    _known_size(program_mesh, bindings),
                )
            else:
                t = transfer_time(
                    kind,
                    moved,
                    axes,
                    src.layout,
                    out.layout,
                    size_symbol,
                    ctx.model,
                    topology,
                    syms.links(),
                    _known_size(program_mesh, bindings),
                )
            bw, lat = as_expr(t.bandwidth), as_expr(t.latency)
            crossover = _crossover(lat, moved, bw) if bw != 0 and moved != 0 and explain else None
            name = (
                format_send(op.send)
                if kind == "Send"
                else f"{kind}(max)"
                if op.combine == "max"
                else kind
            )
            return OpCost(
                index,
                line,
                "collective",
                name,
                axes,
                src.array,
                src.format(mesh),
                out.format(mesh),
                op.reason,
                comm_bytes=as_expr(moved),
                time=as_expr(t.time),
                t_bandwidth=bw,
                t_latency=lat,
                levels=tuple((lv, as_expr(x)) for lv, x in t.levels),
                level_bandwidths=tuple((lv, as_expr(x)) for lv, x in t.bandwidths),
                crossover_bytes=crossover,
            )
        case LocalSlice(out=out, src=src):
            return OpCost(
                index,
                line,
                "elementwise",
                "slice",
                (),
                src.array,
                src.format(mesh),
                out.format(mesh),
                op.reason,
            )
        case Reduction(kind=kind, out=out, src=src, dims=dims):
            # one FLOP per element reduced (a broadcast copies: none); HBM-bound like
            # elementwise work
            flops = ZERO if kind == "broadcast" else global_elements(src.layout, size_symbol)
            fpd = ZERO if kind == "broadcast" else local_elements(src.layout, size_symbol)
            hbm = local_bytes(src.layout, src.dtype, size_symbol) + local_bytes(
                out.layout, out.dtype, size_symbol
            )
            t_hbm = hbm / syms.w_hbm
            return OpCost(
                index,
                line,
                "elementwise",
                f"{kind}_{format_axes(dims)}",
                (),
                out.array,
                src.format(mesh),
                out.format(mesh),
                "",
                flops=flops,
                flops_per_device=fpd,
                hbm_bytes=hbm,
                time=t_hbm,
                t_math=ZERO,
                t_hbm=t_hbm,
            )
        case Elementwise(fn=fn, out=out, args=args):
            per = ELEMENTWISE_FUNCTIONS.get(fn, BINARY_FLOPS)
            flops = per * global_elements(out.layout, size_symbol)
            fpd = per * local_elements(out.layout, size_symbol)
            hbm = sum((local_bytes(v.layout, v.dtype, size_symbol) for v in (*args, out)), ZERO)
            # C is the matrix units' peak; elementwise work runs beside them and is HBM-bound, so
            # its FLOPs are reported but not charged to T_math (the book counts matmul FLOPs).
            t_math = ZERO
            t_hbm = hbm / syms.w_hbm
            src_text = _src_text(op, mesh)
            return OpCost(
                index,
                line,
                "elementwise",
                fn,
                (),
                out.array,
                src_text,
                out.format(mesh),
                "",
                flops=flops,
                flops_per_device=fpd,
                hbm_bytes=hbm,
                time=t_hbm,
                t_math=t_math,
                t_hbm=t_hbm,
            )
    raise AssertionError(op)


@memoized(CROSSOVER, lambda lat, moved, bw: (typed(lat), typed(moved), typed(bw)))
def _crossover(lat: sp.Expr, moved: sp.Expr, bw: sp.Expr) -> sp.Expr:
    """The bytes at which a collective's latency equals its bandwidth time. A `cancel`, the
    slowest part of costing a collective, and the same few formulas come back in every
    candidate a plan compiles."""
    return sp.cancel(lat * moved / bw)


def _shape_key(op: Op) -> tuple[Hashable, ...] | None:
    """What an op's formulas depend on: everything but the names."""
    match op:
        case Einsum(out=out, lhs=lhs, rhs=rhs, contract=contract):
            return (
                "einsum",
                lhs.layout,
                rhs.layout,
                out.layout,
                lhs.dtype,
                rhs.dtype,
                out.dtype,
                contract,
                op.case,
            )
        case Collective(op=kind, out=out, src=src, axes=axes, dim=dim):
            return (
                "collective",
                kind,
                src.layout,
                out.layout,
                src.dtype,
                axes,
                dim,
                op.send,
                op.combine,
            )
        case Reduction(kind=kind, out=out, src=src, dims=dims):
            return ("reduction", kind, src.layout, out.layout, src.dtype, dims)
        case Elementwise(fn=fn, out=out, args=args):
            return (
                "elementwise",
                fn,
                out.layout,
                out.dtype,
                tuple((a.layout, a.dtype) for a in args),
            )
    return None


def _known_size(
    program_mesh: Iterable[tuple[str, int | None]], bindings: Mapping[str, float]
) -> Callable[[str], int | None]:
    """Mesh axis sizes where declared or bound, else None: a Send's distances depend on them."""
    return known_sizes(program_mesh, bindings).get


def _array_of(op: Op) -> str:
    return op.src.array if isinstance(op, (Collective, LocalSlice)) else op.out.array


def _reason(op: Op) -> str:
    return (
        op.reason
        if isinstance(op, (Collective, LocalSlice))
        else (op.case if isinstance(op, Einsum) else "")
    )


def _src_text(op: Op, mesh: tuple[str, ...]) -> str:
    match op:
        case Einsum(lhs=lhs, rhs=rhs, contract=contract):
            return f"{lhs.format(mesh)} ·_{format_axes(contract)} {rhs.format(mesh)}"
        case Collective(src=src) | LocalSlice(src=src) | Reduction(src=src):
            return src.format(mesh)
        case Elementwise(fn=fn, args=args):
            return (
                f" {fn} ".join(a.format(mesh) for a in args)
                if len(args) > 1
                else (f"{fn}({args[0].format(mesh)})")
            )
    return ""
