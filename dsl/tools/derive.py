"""Symbolic derivation over a report: the compute-bound conditions of a step, solved for a
variable, and the optimum of a free mesh size (000 part 4, 004).

Two accountings. `book` is 000 part 4's: the pass with the most communication per FLOP (the
forward pass for TP and FSDP + TP, the backward pass for DP), every ICI axis priced as a full
ring (the book's W_ici, both directions); it gives B/X > C/W_ici for DP and FSDP, F > Y C/W_ici
for TP and X_opt = sqrt(B/F * M_X/M_Y * N). `exact` is the whole step as compiled, on the
topology as resolved. Communication over several axis groups is summed (000) or overlapped,
T_comms = max over the groups (004); both conditions are given, labelled.
"""

from __future__ import annotations

import dataclasses
import math
import signal
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sympy as sp

from shardc.lang.limits import SOLVE_SECONDS
from shardc.passes.conditions import separate
from shardc.passes.cost_model import collective_time
from shardc.passes.ir import gradient_name
from shardc.passes.symbols import as_expr, size_symbol

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.passes.derive_cost import OpCost
    from shardc.passes.ir import Topology

OVERLAPS = ("sum", "max")


@dataclass(frozen=True, slots=True)
class Solved:
    var: str
    rel: str  # ">" or "<"
    expr: sp.Expr


@dataclass(frozen=True, slots=True)
class Optimum:
    var: str
    expr: sp.Expr
    partner: str
    devices: sp.Expr
    overlap: str = "sum"


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


# ---- solving ---------------------------------------------------------------------------------
class _OutOfTime(Exception):
    """SymPy's `solve` ran past `SOLVE_SECONDS` (raised from the SIGALRM handler)."""


_budget_depth = 0


@contextmanager
def solve_budget(seconds: float | None = None) -> Iterator[None]:
    """Raise `_OutOfTime` inside the block once `seconds` (default `SOLVE_SECONDS`) of
    wall-clock time have passed.

    Uses SIGALRM, so only in the main thread (elsewhere the block runs without a budget); the
    previous handler and timer are restored afterwards. Nested budgets share the outer one.
    """
    global _budget_depth
    if (_budget_depth or threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "setitimer")):
        _budget_depth += 1
        try:
            yield
        finally:
            _budget_depth -= 1
        return

    if seconds is None:
        seconds = SOLVE_SECONDS

    def alarm(signum, frame):
        raise _OutOfTime

    old_handler = signal.signal(signal.SIGALRM, alarm)
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    _budget_depth += 1
    try:
        yield
    finally:
        _budget_depth -= 1
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_delay > 0:  # someone else's timer: give back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(old_delay - seconds, 1e-3), old_interval)


def _budgeted(fn):
    """`fn` under `solve_budget`; None (no closed form) when it runs out of time."""
    import functools

    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            with solve_budget():
                return fn(*args, **kwargs)
        except _OutOfTime:
            return None

    return run


def _symbol(rel: sp.Basic, name: str) -> sp.Symbol | None:
    for s in rel.free_symbols:
        if s.name == name:
            return s
    return None


@_budgeted
def solve_condition(rel: sp.Basic, var: str) -> Solved | None:
    """`lhs > rhs` as `var > threshold` (or `<`), where the relation is monotone in var.

    >>> x, c = sp.symbols("X C", positive=True)
    >>> solve_condition(sp.StrictGreaterThan(100 / x, c), "X")
    Solved(var='X', rel='<', expr=100/C)
    """
    x = _symbol(rel, var)
    if x is None:
        return None
    f = sp.together(rel.lhs - rel.rhs)
    try:
        roots = sp.solve(sp.Eq(sp.numer(f), 0), x)
    except NotImplementedError:
        return None
    roots = [r for r in roots if not (r.is_negative or r.is_zero) and r.is_real is not False]
    if len(roots) != 1:
        return None
    root = sp.factor_terms(sp.simplify(roots[0]))
    sign = sp.simplify(sp.diff(f, x).subs(x, root))
    if sign.is_positive:
        return Solved(var, ">", root)
    if sign.is_negative:
        return Solved(var, "<", root)
    # Monotone but undecided symbolically: test a point above the root.
    probe = f.subs(x, 2 * root)
    if probe.is_positive:
        return Solved(var, ">", root)
    if probe.is_negative:
        return Solved(var, "<", root)
    return None


@_budgeted
def solve_for(rel: sp.Basic, target: str | sp.Expr, names: dict[str, sp.Symbol] | None = None
              ) -> Solved | None:
    """`rel` solved for a symbol or a monomial of them (`B/X`, the per-device batch): one of
    the monomial's symbols is eliminated (B = u X) and the relation solved for u. A text target
    is parsed by `shardc.user_expr` (names not in the relation or `names` are sizes). None when
    there is no closed form, or SymPy finds none within `SOLVE_SECONDS`.

    >>> b, x, c = (sp.Symbol(n, positive=True) for n in "BXC")
    >>> solve_for(sp.StrictGreaterThan(b / x, c), "B/X").expr
    C
    """
    if isinstance(target, sp.Symbol):
        target = target.name
    if isinstance(target, str) and target.isidentifier():
        return solve_condition(rel, target)
    by_name = {s.name: s for s in rel.free_symbols} | dict(names or {})
    if isinstance(target, str):
        from shardc.driver.user_expr import number_formula

        target = number_formula(target, lambda n: by_name.get(n, size_symbol(n)))
    target = as_expr(target)
    label = str(target)
    u = sp.Symbol("_u", positive=True)
    for s in sorted(target.free_symbols & rel.free_symbols, key=lambda s: s.name):
        sols = [e for e in sp.solve(sp.Eq(target, u), s) if e.is_positive is not False]
        if len(sols) != 1:
            continue
        solved = solve_condition(rel.subs(s, sols[0]), "_u")
        if solved is not None and not solved.expr.free_symbols & target.free_symbols:
            return Solved(label, solved.rel, solved.expr)
    return None


def _nonnegative(expr: sp.Expr) -> bool:
    """Provably >= 0 over positive symbols (sizes and hardware figures)."""
    e = sp.factor(sp.together(expr))
    if e == 0 or e.is_nonnegative:
        return True
    num, den = sp.fraction(e)
    if not (den.is_positive or den.is_nonnegative):
        return False
    terms = sp.Add.make_args(sp.expand(num))
    return all(t.is_nonnegative for t in terms)


def clear_roots(rel: sp.Rel) -> sp.Rel:
    """`sqrt(B*F/N)/2 > C/W` as `B*F/(4*N) > C**2/W**2`: both sides squared while the program
    side is a product of powers with square roots (both sides are positive); left as is
    otherwise."""
    lhs, rhs = rel.lhs, rel.rhs
    if any(isinstance(f, sp.Add) for f in sp.preorder_traversal(lhs)):
        return rel
    for _ in range(3):
        if not any(isinstance(p, sp.Pow) and p.exp.is_Rational and p.exp.q > 1
                   for p in sp.preorder_traversal(lhs)):
            break
        lhs, rhs = sp.powsimp(lhs ** 2), sp.powsimp(rhs ** 2)
    return sp.StrictGreaterThan(lhs, rhs, evaluate=False)


# ---- accountings -----------------------------------------------------------------------------
def book_topology(topo: Topology | None) -> Topology | None:
    """The book's assumption: every physical ICI axis a full ring (002's V/W_ici)."""
    if topo is None:
        return None
    return dataclasses.replace(topo, physical=tuple(
        dataclasses.replace(p, wrap=True, why="the book's accounting: a full ring")
        for p in topo.physical))


def _count(c: OpCost) -> sp.Expr:
    return getattr(c, "count", sp.Integer(1))


def _comm(report: Report, c: OpCost, topo: Topology | None, model: str) -> Comm:
    n = _count(c)
    if model == "exact":
        return Comm(c.axes, c.t_bandwidth * n, tuple((lv, x * n) for lv, x in
                                                     c.level_bandwidths))
    t = collective_time(c.op, c.comm_bytes, c.axes, size_symbol, "book", topo,
                        report.cost.symbols.links())
    return Comm(c.axes, as_expr(t.bandwidth) * n,
                tuple((lv, as_expr(x) * n) for lv, x in t.bandwidths))


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
    return [one("forward", (c for c in report.ops if c.line != backward_line)),
            one("backward", (c for c in report.ops if c.line == backward_line))]


def binding(parts: Sequence[Pass]) -> tuple[Pass, list[Pass]] | None:
    """The pass with the most communication per FLOP for every size, and the passes that tie
    with it; None when that depends on the sizes."""
    live = [p for p in parts if p.math != 0]
    ratios = [(p, sp.cancel(p.t_comms / p.math)) for p in live]
    for p, r in ratios:
        if all(_nonnegative(r - q) for _, q in ratios):
            return p, [o for o, q in ratios if o is not p and sp.simplify(r - q) == 0]
    return None


def whole_step(parts: Sequence[Pass]) -> Pass:
    return Pass("step", sp.Add(*[p.math for p in parts]),
                tuple(c for p in parts for c in p.comms))


# ---- conditions and optima -------------------------------------------------------------------
def _label(axes: Sequence[str]) -> str:
    return ", ".join(axes) if axes else "no axis"


def mesh_groups(groups: dict[tuple[str, ...], sp.Expr]) -> str:
    """`X and Y`: the axis groups of a pass's communication."""
    names = ["".join(k) for k in groups]
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def conditions_of(p: Pass, report: Report, overlaps: Sequence[str], what: str
                  ) -> list[Condition]:
    """T_math > T_comms of a pass: summed (000) and, with several axis groups, overlapped (004)
    as one condition per group; and one condition per network level when there are several."""
    is_hw = report.cost.symbols.is_hardware
    if p.math == 0 or p.t_comms == 0:
        return []
    mesh = report.program.mesh_axes
    groups = p.groups(mesh)
    out: list[Condition] = []
    if "sum" in overlaps or len(groups) < 2:
        extra = f"; {mesh_groups(groups)} communication summed (000)" if len(
            groups) > 1 else ""
        out.append(Condition("compute-bound", f"compute-bound, {what}{extra}",
                             separate(p.math, p.t_comms, is_hw)))
    if "max" in overlaps and len(groups) > 1:
        for axes, t in groups.items():
            out.append(Condition(
                f"compute-bound-max-{''.join(axes)}",
                f"compute-bound, {what}; communication overlapped (004: T_comms = max over "
                f"axis groups), the part over {_label(axes)}",
                separate(p.math, t, is_hw)))
    levels: dict[str, list[sp.Expr]] = {}
    for c in p.comms:
        for lv, x in c.levels:
            levels.setdefault(lv, []).append(x)
    if len(levels) > 1:
        for lv, xs in levels.items():
            if sp.Add(*xs) != 0:
                out.append(Condition(f"compute-bound-{lv}",
                                     f"compute-bound over {lv} alone, {what}",
                                     separate(p.math, sp.Add(*xs), is_hw)))
    return out


@_budgeted
def optimize_axis(t_comms: sp.Expr, var: str, partner: str, devices: sp.Expr
                  ) -> Optimum | None:
    """The `var` minimizing `t_comms` with `var * partner = devices` (partner = devices/var)."""
    x = next((s for s in t_comms.free_symbols if s.name == var), None)
    y = next((s for s in t_comms.free_symbols if s.name == partner), None)
    if x is None or y is None:
        return None
    f = sp.together(t_comms.subs(y, devices / x))
    try:
        roots = sp.solve(sp.Eq(sp.numer(sp.together(sp.diff(f, x))), 0), x)
    except NotImplementedError:
        return None
    roots = [r for r in roots if r.is_positive or (r.is_real is not False and not r.is_zero
                                                     and not r.is_negative)]
    if not roots:
        return None
    return Optimum(var, sp.factor_terms(sp.simplify(roots[0])), partner, devices)


@_budgeted
def balance_axis(groups: Sequence[sp.Expr], var: str, partner: str, devices: sp.Expr
                 ) -> Optimum | None:
    """004's optimum of max(T_a, T_b): the `var` at which the two groups take equal time (one
    grows with var, the other shrinks)."""
    if len(groups) != 2:
        return None
    syms = {s.name: s for g in groups for s in g.free_symbols}
    x, y = syms.get(var), syms.get(partner)
    if x is None or y is None:
        return None
    a, b = (sp.together(g.subs(y, devices / x)) for g in groups)
    try:
        roots = sp.solve(sp.Eq(sp.numer(sp.together(a - b)), 0), x)
    except NotImplementedError:
        return None
    roots = [r for r in roots if r.is_positive]
    if len(roots) != 1:
        return None
    return Optimum(var, sp.factor_terms(sp.simplify(roots[0])), partner, devices, "max")


def at_optimum(p: Pass, report: Report, opt: Optimum, devices: float | None = None
               ) -> Condition:
    """T_math > T_comms at the optimum (000: summed; 004: the equal groups' max)."""
    syms = {s.name: s for s in p.math.free_symbols | p.t_comms.free_symbols}
    x, y = syms[opt.var], syms[opt.partner]
    sub = {x: opt.expr, y: opt.devices / opt.expr}
    comms = p.t_comms if opt.overlap == "sum" else next(iter(
        p.groups(report.program.mesh_axes).values()))
    math_t = sp.simplify(p.math.subs(sub))
    comms_t = sp.simplify(comms.subs(sub))
    rel = clear_roots(separate(math_t, comms_t, report.cost.symbols.is_hardware))
    how = "summed (000)" if opt.overlap == "sum" else "overlapped (004)"
    return Condition(f"at-optimum-{opt.overlap}",
                     f"compute-bound at the optimum {opt.var}_opt ({opt.var} * {opt.partner} = "
                     f"{opt.devices}{'' if devices is None else f' = {devices:g}'}), "
                     f"communication {how}", rel)


def round_power_of_two(value: float, devices: float | None) -> int:
    """The power of two nearest `value` in log scale, between 1 and `devices`.

    >>> round_power_of_two(1618.0, 8960), round_power_of_two(0.3, 8)
    (2048, 1)
    """
    k = max(0, round(math.log2(value))) if value > 0 else 0
    best = 2 ** k
    if devices is not None and devices >= 1:
        best = min(best, 2 ** int(math.log2(devices)))
    return max(1, best)


def partner_power_of_two(rounded: int, devices: float | None) -> int | None:
    """The largest power of two the partner axis can take beside `rounded` devices.

    >>> partner_power_of_two(2048, 8960)
    4
    """
    if devices is None or devices < rounded:
        return None
    return 2 ** int(math.log2(devices / rounded))


def devices_symbol(taken: Iterable[str] = (), name: str = "N") -> sp.Symbol:
    """The symbol for the devices two axes share (`N`; `N_dev` if the program uses N)."""
    return size_symbol(name if name not in set(taken) else f"{name}_dev")


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
                out.append(f"{link.axis}: an ICI line of {pa.length} ({pa.why}); the book's "
                           "accounting prices it as a full ring (--model exact keeps the line)")
    return out


def infer_backward_line(report: Report) -> int | None:
    """The line of `backward` in a compiled program: the one it carries, or for gradients
    written by hand, where a parameter's gradient is made."""
    if report.program.backward_line is not None:
        return report.program.backward_line
    grads = {gradient_name(p) for p in report.program.params}
    return next((op.span.line for op in report.program.ops if op.out.array in grads), None)


def derive(report: Report, backward_line: int | None | str = "infer", *,
           overlaps: Sequence[str] = OVERLAPS,
           optimize: str | None = None, partner: str | None = None,
           devices: str | float | None = None) -> Derivation:
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
            notes.append("no pass has the most communication per FLOP for every size: each "
                         "pass's condition is given")
            for q in parts:
                conds.extend(dataclasses.replace(c, name=f"{c.name}-{q.name}") for c in
                             conditions_of(q, report, overlaps, f"book accounting: the {q.name} "
                                           "pass; ICI axes as full rings"))
            found = (whole_step(parts), [])
        p, ties = found
        if conds:
            what = ""
        elif p.name == "step":
            what = "book accounting (ICI axes as full rings)"
        else:
            tie = (f"; the {' and '.join(t.name for t in ties)} pass has as much"
                   if ties else "")
            what = (f"book accounting (000 part 4): the {p.name} pass, the most communication "
                    f"per FLOP{tie}; ICI axes as full rings")
        notes.extend(topology_notes(report))
    else:
        p = whole_step(parts)
        what = "the whole step as compiled (exact model, topology as resolved)"
    if what:
        conds.extend(conditions_of(p, report, overlaps, what))
    for c in report.conditions:
        name = {"compute-vs-comms": "step-compute-vs-comms"}.get(c.name, c.name)
        text = c.text if c.name != "compute-vs-comms" else (
            f"compute-bound, the whole step as compiled ({model} model, topology as resolved; "
            "T_math > T_comms, bandwidth terms)")
        if model == "exact" and c.name == "compute-vs-comms":
            continue  # the accounting's own sum condition is this one
        conds.append(Condition(name, text, c.relation))
    optima: list[Optimum] = []
    dev_value: float | None = None
    if optimize is not None:
        if partner is None:
            raise ValueError("--optimize needs the axis it trades devices with")
        taken = [n for n, _ in (*report.program.dims, *report.program.mesh)]
        if isinstance(devices, str) and not _is_number(devices):
            n_sym = size_symbol(devices)
        else:
            n_sym = devices_symbol(taken)
            dev_value = None
            if devices is not None:
                from shardc.lang.numeric import parse_number

                dev_value = parse_number(devices) if isinstance(devices, str) else float(devices)
        for overlap in overlaps:
            if overlap == "sum":
                opt = optimize_axis(p.t_comms, optimize, partner, n_sym)
            else:
                opt = balance_axis(list(p.groups(report.program.mesh_axes).values()),
                                   optimize, partner, n_sym)
            if opt is None:
                continue
            optima.append(opt)
            conds.append(at_optimum(p, report, opt, dev_value))
        if not optima:
            raise ValueError(f"--optimize {optimize}: no interior optimum of {optimize} (with "
                             f"{optimize} * {partner} = "
                             f"{n_sym}) in the communication time")
    return Derivation(report, p, tuple(conds), tuple(optima), tuple(notes), dev_value)


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
    bound = {s.name: d.devices_value for o in d.optima for s in o.devices.free_symbols
             if d.devices_value is not None and s.name in names}
    return d.report.value(expr, **bound)


def derive_program(source_or_path, hw: str | None = None, model: str = "book",
                   set: dict[str, float] | None = None, **kw) -> Derivation:
    """Compile a program and derive its conditions (the Python side of `shardc derive`).

    >>> d = derive_program("mesh X\\ndim B, D, F\\nIn: bf16[B_X, D]\\nparam W: bf16[D, F]\\n"
    ...                    "Out[B_X, F] = In ·_D W\\nbackward\\n")
    >>> d.conditions[0].relation
    B/X > C/W_ici
    """
    from shardc.driver import api
    from shardc.driver.api import as_source

    source = as_source(source_or_path)
    report = api.compile(source, hw=hw, model=model, set=set)  # type: ignore[arg-type]
    return derive(report, report.program.backward_line, **kw)
