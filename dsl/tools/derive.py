"""Symbolic derivation over a report: the compute-bound conditions of a step, solved for a
variable, and the optimum of a free mesh size (the training chapter, the revised training chapter).

Two accountings. `book` is the training chapter's: the pass with the most communication per FLOP
(the forward pass for TP and FSDP + TP, the backward pass for DP), every ICI axis priced as a full
ring (the book's W_ici, both directions); it gives B/X > C/W_ici for DP and FSDP, F > Y C/W_ici
for TP and X_opt = sqrt(B/F * M_X/M_Y * N). `exact` is the whole step as compiled, on the
topology as resolved. Communication over several axis groups is summed (the book) or overlapped,
T_comms = max over the groups (the revised training chapter); both conditions are given, labelled.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sympy as sp

from shardc.passes.conditions import separate, vanishes
from shardc.passes.cost_model import collective_time
from shardc.passes.ir import gradient_name
from shardc.passes.sizes import known_sizes
from shardc.passes.symbols import as_expr, size_symbol
from shardc.tools.derive_solve import (
    Optimum,
    balance_axis,
    clear_roots,
    devices_symbol,
    nonnegative,
    optimize_axis,
)

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.passes.derive_cost import OpCost
    from shardc.passes.ir import Topology

OVERLAPS = ("sum", "max")

SCHEMA = "shardc.derive/1"
"""The `schema` of `shardc derive --format json`, described by
`shardc/driver/schemas/derive.schema.json`."""


@dataclass(frozen=True, slots=True)
class Condition:
    """A named compute-bound condition, `program quantity > hardware ratio`."""

    name: str
    text: str
    relation: sp.Rel


@dataclass(frozen=True, slots=True)
class Comm:
    """One collective's bandwidth term in an accounting: per level and in total."""

    axes: tuple[str, ...]
    total: sp.Expr
    levels: tuple[tuple[str, sp.Expr], ...]


@dataclass(frozen=True, slots=True)
class Pass:
    """A part of the step: its matmul time and its collectives."""

    name: str  # "forward" | "backward" | "step"
    math: sp.Expr
    comms: tuple[Comm, ...]

    @property
    def t_comms(self) -> sp.Expr:
        return sp.Add(*[c.total for c in self.comms])

    def groups(self, mesh: Sequence[str]) -> dict[tuple[str, ...], sp.Expr]:
        """Communication by the set of mesh axes it runs over (mesh order)."""
        out: dict[tuple[str, ...], list[sp.Expr]] = {}
        for c in self.comms:
            key = tuple(a for a in mesh if a in c.axes)
            out.setdefault(key, []).append(c.total)
        order = sorted(out, key=lambda k: [mesh.index(a) for a in k])
        return {k: sp.Add(*out[k]) for k in order if sp.Add(*out[k]) != 0}


@dataclass(frozen=True, slots=True)
class Derivation:
    """What `shardc derive` prints: conditions, optima, and notes on the accounting."""

    report: Report
    accounting: Pass
    """The pass the conditions and optima are taken over (`book`: the binding pass)."""
    conditions: tuple[Condition, ...]
    optima: tuple[Optimum, ...] = ()
    notes: tuple[str, ...] = ()
    devices_value: float | None = None


# ---- accountings -----------------------------------------------------------------------------
def book_topology(topo: Topology | None) -> Topology | None:
    """The book's assumption: every physical ICI axis a full ring (the sharding chapter's
    V/W_ici)."""
    if topo is None:
        return None
    return dataclasses.replace(
        topo,
        physical=tuple(
            dataclasses.replace(p, wrap=True, why="the book's accounting: a full ring")
            for p in topo.physical
        ),
    )


def _count(c: OpCost) -> sp.Expr:
    return getattr(c, "count", sp.Integer(1))


def _comm(report: Report, c: OpCost, topo: Topology | None, model: str) -> Comm:
    n = _count(c)
    if model == "exact":
        return Comm(c.axes, c.t_bandwidth * n, tuple((lv, x * n) for lv, x in c.level_bandwidths))
    t = collective_time(
        c.op, c.comm_bytes, c.axes, size_symbol, "book", topo, report.cost.symbols.links()
    )
    return Comm(
        c.axes, as_expr(t.bandwidth) * n, tuple((lv, as_expr(x) * n) for lv, x in t.bandwidths)
    )


def passes(report: Report, backward_line: int | None, model: str = "book") -> list[Pass]:
    """The step's passes (forward, backward; or the whole program) with their matmul times and
    collectives; `book` prices every collective on full rings, `exact` as compiled."""
    topo = book_topology(report.program.topology) if model == "book" else None

    def one(name: str, ops: Iterable[OpCost]) -> Pass:
        ops = list(ops)
        math_t = sp.Add(*[c.t_math * _count(c) for c in ops])
        comms = tuple(_comm(report, c, topo, model) for c in ops if c.kind == "collective")
        return Pass(name, math_t, comms)

    if backward_line is None:
        return [one("step", report.ops)]
    return [
        one("forward", (c for c in report.ops if c.line != backward_line)),
        one("backward", (c for c in report.ops if c.line == backward_line)),
    ]


def binding(parts: Sequence[Pass]) -> tuple[Pass, list[Pass]] | None:
    """The pass with the most communication per FLOP for every size, and the passes that tie
    with it; None when that depends on the sizes."""
    live = [p for p in parts if p.math != 0]
    ratios = [(p, sp.cancel(p.t_comms / p.math)) for p in live]
    for p, r in ratios:
        if all(nonnegative(r - q) for _, q in ratios):
            return p, [o for o, q in ratios if o is not p and sp.simplify(r - q) == 0]
    return None


def whole_step(parts: Sequence[Pass]) -> Pass:
    return Pass("step", sp.Add(*[p.math for p in parts]), tuple(c for p in parts for c in p.comms))


# ---- conditions and optima -------------------------------------------------------------------
def _label(axes: Sequence[str]) -> str:
    return ", ".join(axes) if axes else "no axis"


def mesh_groups(groups: dict[tuple[str, ...], sp.Expr]) -> str:
    """`X and Y`: the axis groups of a pass's communication."""
    names = ["".join(k) for k in groups]
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def conditions_of(p: Pass, report: Report, overlaps: Sequence[str], what: str) -> list[Condition]:
    """T_math > T_comms of a pass: summed (the book) and, with several axis groups, overlapped (the
    revised training chapter) as one condition per group; and one condition per network level when
    there are several. A part that moves nothing at the mesh's known sizes (over an axis of 1)
    gives no condition (`passes.conditions.vanishes`)."""
    is_hw = report.cost.symbols.is_hardware
    sizes = {
        size_symbol(n): v for n, v in known_sizes(report.program.mesh, report.bindings).items()
    }
    if p.math == 0 or vanishes(p.t_comms, sizes):
        return []
    mesh = report.program.mesh_axes
    groups = p.groups(mesh)
    out: list[Condition] = []
    if "sum" in overlaps or len(groups) < 2:
        extra = (
            f"; {mesh_groups(groups)} communication summed (the book)" if len(groups) > 1 else ""
        )
        out.append(
            Condition(
                "compute-bound", f"compute-bound, {what}{extra}", separate(p.math, p.t_comms, is_hw)
            )
        )
    if "max" in overlaps and len(groups) > 1:
        for axes, t in groups.items():
            if vanishes(t, sizes):
                continue
            out.append(
                Condition(
                    f"compute-bound-max-{''.join(axes)}",
                    f"compute-bound, {what}; communication overlapped (the revised training "
                    f"chapter: T_comms = max over axis groups), the part over {_label(axes)}",
                    separate(p.math, t, is_hw),
                )
            )
    levels: dict[str, list[sp.Expr]] = {}
    for c in p.comms:
        for lv, x in c.levels:
            levels.setdefault(lv, []).append(x)
    if len(levels) > 1:
        for lv, xs in levels.items():
            if not vanishes(sp.Add(*xs), sizes):
                out.append(
                    Condition(
                        f"compute-bound-{lv}",
                        f"compute-bound over {lv} alone, {what}",
                        separate(p.math, sp.Add(*xs), is_hw),
                    )
                )
    return out


def at_optimum(p: Pass, report: Report, opt: Optimum, devices: float | None = None) -> Condition:
    """T_math > T_comms at the optimum (the book: summed; the revised training chapter: the equal
    groups' max)."""
    syms = {s.name: s for s in p.math.free_symbols | p.t_comms.free_symbols}
    x, y = syms[opt.var], syms[opt.partner]
    sub = {x: opt.expr, y: opt.devices / opt.expr}
    comms = (
        p.t_comms
        if opt.overlap == "sum"
        else next(iter(p.groups(report.program.mesh_axes).values()))
    )
    math_t = sp.simplify(p.math.subs(sub))
    comms_t = sp.simplify(comms.subs(sub))
    rel = clear_roots(separate(math_t, comms_t, report.cost.symbols.is_hardware))
    how = (
        "summed (the book)" if opt.overlap == "sum" else "overlapped (the revised training chapter)"
    )
    return Condition(
        f"at-optimum-{opt.overlap}",
        f"compute-bound at the optimum {opt.var}_opt ({opt.var} * {opt.partner} = "
        f"{opt.devices}{'' if devices is None else f' = {devices:g}'}), "
        f"communication {how}",
        rel,
    )


# ---- the whole derivation ------------------------------------------------------------------------
def topology_notes(report: Report) -> list[str]:
    """ICI axes that are not rings in the program's own topology (the book takes rings)."""
    topo = report.program.topology
    if topo is None:
        return []
    out = []
    for link in topo.links:
        if link.level != "ici":
            continue
        for p in link.physical or (link.axis,):
            pa = topo.phys(p)
            if not pa.wrap and (pa.length is None or pa.length >= 3):
                out.append(
                    f"{link.axis}: an ICI line of {pa.length} ({pa.why}); the book's "
                    "accounting prices it as a full ring (--cost-model exact keeps the line)"
                )
    return out


def infer_backward_line(report: Report) -> int | None:
    """The line of `backward` in a compiled program: the one it carries, or for gradients
    written by hand, where a parameter's gradient is made."""
    if report.program.backward_line is not None:
        return report.program.backward_line
    grads = {gradient_name(p) for p in report.program.params}
    return next((op.span.line for op in report.program.ops if op.out.array in grads), None)


def derive(
    report: Report,
    backward_line: int | None | str = "infer",
    *,
    overlaps: Sequence[str] = OVERLAPS,
    optimize: str | None = None,
    partner: str | None = None,
    devices: str | float | None = None,
) -> Derivation:
    """The conditions and optima of a compiled program in its report's model's accounting.

    `book`: the pass with the most communication per FLOP, every ICI axis a full ring;
    `exact`: the whole step as compiled. The report's own conditions follow (whole step,
    compute vs HBM, per level). `devices` is a number or a name (default N). `backward_line`
    (the `backward` statement's line) is inferred from the parameters' gradients by default.
    """
    model = report.model
    if backward_line == "infer":
        backward_line = infer_backward_line(report)
    parts = passes(report, backward_line, model)  # type: ignore[arg-type]
    notes: list[str] = []
    conds: list[Condition] = []
    if model == "book":
        found = binding(parts)
        if found is None:
            # Which pass binds depends on the sizes: each pass's condition, and the whole step
            # (book-priced) for the optimum.
            notes.append(
                "no pass has the most communication per FLOP for every size: each "
                "pass's condition is given"
            )
            for q in parts:
                conds.extend(
                    dataclasses.replace(c, name=f"{c.name}-{q.name}")
                    for c in conditions_of(
                        q,
                        report,
                        overlaps,
                        f"book accounting: the {q.name} pass; ICI axes as full rings",
                    )
                )
            found = (whole_step(parts), [])
        p, ties = found
        if conds:
            what = ""
        elif p.name == "step":
            what = "book accounting (ICI axes as full rings)"
        else:
            tie = f"; the {' and '.join(t.name for t in ties)} pass has as much" if ties else ""
            what = (
                f"book accounting (the training chapter): the {p.name} pass, the most "
                f"communication per FLOP{tie}; ICI axes as full rings"
            )
        notes.extend(topology_notes(report))
    else:
        p = whole_step(parts)
        what = "the whole step as compiled (exact model, topology as resolved)"
    if what:
        conds.extend(conditions_of(p, report, overlaps, what))
    for c in report.cost.conditions:  # on the roofline: --on expected restates all below
        name = {"compute-vs-comms": "step-compute-vs-comms"}.get(c.name, c.name)
        text = (
            c.text
            if c.name != "compute-vs-comms"
            else (
                f"compute-bound, the whole step as compiled ({model} model, topology as resolved; "
                "T_math > T_comms, bandwidth terms)"
            )
        )
        if model == "exact" and c.name == "compute-vs-comms":
            continue  # the accounting's own sum condition is this one
        conds.append(Condition(name, text, c.relation))
    optima: list[Optimum] = []
    dev_value: float | None = None
    if optimize is not None:
        if partner is None:
            raise ValueError("--optimize needs the axis it trades devices with")
        taken = [n for n, _ in (*report.program.dims, *report.program.mesh)]
        if isinstance(devices, str) and devices.strip().lower() in NOT_NUMBERS:
            raise ValueError(
                f"devices={devices.strip()!r} is not a number of devices: give a "
                "positive whole number or a name for the count"
            )
        if isinstance(devices, str) and not _is_number(devices):
            n_sym = size_symbol(devices)
        else:
            n_sym = devices_symbol(taken)
            dev_value = None
            if devices is not None:
                from shardc.lang.numeric import real, whole

                # The one conversion every count takes: a positive whole number (NumberError,
                # a ValueError, for nan, inf, 0 or 3.5), never a NaN in the optimum.
                dev_value = float(whole(real(devices, "devices"), "devices"))
        for overlap in overlaps:
            if overlap == "sum":
                opt = optimize_axis(p.t_comms, optimize, partner, n_sym)
            else:
                opt = balance_axis(
                    list(p.groups(report.program.mesh_axes).values()), optimize, partner, n_sym
                )
            if opt is None:
                continue
            optima.append(opt)
            conds.append(at_optimum(p, report, opt, dev_value))
        if not optima:
            raise ValueError(
                f"--optimize {optimize}: no interior optimum of {optimize} (with "
                f"{optimize} * {partner} = "
                f"{n_sym}) in the communication time"
            )
    if report.options.get("on") == "expected":
        # The roofline's conditions restated on the calibrated rates (--on expected).
        from shardc.passes.symbols import on_expected

        conds = [
            dataclasses.replace(c, relation=on_expected(c.relation, report.cost.symbols))
            for c in conds
        ]
        notes.append(
            "conditions on T_expected's rates: C is C*eta_mxu and W_hbm is "
            "W_hbm*eta_hbm (the chip's calibration); the network keeps its rates"
        )
    return Derivation(report, p, tuple(conds), tuple(optima), tuple(notes), dev_value)


NOT_NUMBERS = ("nan", "inf", "infinity")
"""Names a reader takes for a float's NaN or infinity (`--devices nan`): refused as the
device count's name, so no derivation prints `X * Y = nan`."""


def _is_number(text: str) -> bool:
    from shardc.lang.numeric import NumberError, parse_decimal

    try:
        parse_decimal(text)
    except NumberError:
        return False
    return True


def value(d: Derivation, expr: sp.Expr) -> float | None:
    """A number for `expr` from the report's bindings, with the devices symbol bound."""
    names = {s.name for s in as_expr(expr).free_symbols}
    bound = {
        s.name: d.devices_value
        for o in d.optima
        for s in o.devices.free_symbols
        if d.devices_value is not None and s.name in names
    }
    return d.report.value(expr, **bound)


def derive_program(
    source_or_path,
    hw: str | None = None,
    model: str = "book",
    set: dict[str, float] | None = None,
    **kw,
) -> Derivation:
    """Compile a program and derive its conditions (the Python side of `shardc derive`).

    >>> d = derive_program("mesh X\\ndim B, D, F\\nIn: bf16[B_X, D]\\nparam W: bf16[D, F]\\n"
    ...                    "Out[B_X, F] = In ·_D W\\nbackward\\n")
    >>> d.conditions[0].relation
    B/X > C/W_ici
    """
    from shardc.driver import api
    from shardc.driver.api import as_source

    source = as_source(source_or_path)
    report = api.compile(source, hw=hw, model=model, set=set)
    return derive(report, report.program.backward_line, **kw)
