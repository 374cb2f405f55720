"""Solving derived conditions for one size (`--solve-for`): SymPy `solve` under a CPU budget
(`shardc.lang.input_limits.SOLVE_SECONDS`), roots cleared, the answer as `var > expr` or
`var < expr`."""

from __future__ import annotations

import math
import signal
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sympy as sp

from shardc.lang.input_limits import SOLVE_SECONDS
from shardc.passes.symbols import as_expr, size_symbol

if TYPE_CHECKING:
    pass


@dataclass(frozen=True, slots=True)
class Solved:
    var: str
    rel: str  # ">" or "<"
    expr: sp.Expr


class _OutOfTime(Exception):
    """SymPy's `solve` ran past `SOLVE_SECONDS` (raised from the SIGPROF handler)."""


_budget_depth = 0
_armed = False
"""Whether the alarm still means "out of time": cleared first thing when a budget ends, so a
late repeat of the alarm does nothing."""


@contextmanager
def solve_budget(seconds: float | None = None) -> Iterator[None]:
    """Raise `_OutOfTime` inside the block once `seconds` (default `SOLVE_SECONDS`) of this
    process's CPU time have passed (so the answer does not depend on the machine's load).

    Uses SIGPROF, so only in the main thread (elsewhere the block runs without a budget); the
    previous handler and timer are restored afterwards. Nested budgets share the outer one.
    """
    global _budget_depth, _armed
    if (
        _budget_depth
        or threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
    ):
        _budget_depth += 1
        try:
            yield
        finally:
            _budget_depth -= 1
        return

    if seconds is None:
        seconds = SOLVE_SECONDS

    def alarm(signum, frame):
        if _armed:
            raise _OutOfTime

    old_handler = signal.signal(signal.SIGPROF, alarm)
    _armed = True
    # The alarm repeats every 50 ms of CPU time until the block ends: an _OutOfTime raised
    # where Python ignores exceptions (a garbage-collector callback, a __del__) is raised again.
    old_delay, old_interval = signal.setitimer(signal.ITIMER_PROF, seconds, 0.05)
    _budget_depth += 1
    try:
        yield
    finally:
        _armed = False
        _budget_depth -= 1
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old_handler)
        if old_delay > 0:  # someone else's timer: give back what is left of it
            signal.setitimer(signal.ITIMER_PROF, max(old_delay - seconds, 1e-3), old_interval)


def budgeted(fn):
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


@budgeted
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
    if not isinstance(roots, list):  # solve answers a list for one unknown; anything else: none
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


@budgeted
def solve_for(
    rel: sp.Basic, target: str | sp.Expr, names: dict[str, sp.Symbol] | None = None
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


def nonnegative(expr: sp.Expr) -> bool:
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
        if not any(
            isinstance(p, sp.Pow) and p.exp.is_Rational and p.exp.q > 1
            for p in sp.preorder_traversal(lhs)
        ):
            break
        lhs, rhs = sp.powsimp(lhs**2), sp.powsimp(rhs**2)
    return sp.StrictGreaterThan(lhs, rhs, evaluate=False)


# ---- optimal axis sizes ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Optimum:
    var: str
    expr: sp.Expr
    partner: str
    devices: sp.Expr
    overlap: str = "sum"


@budgeted
def optimize_axis(t_comms: sp.Expr, var: str, partner: str, devices: sp.Expr) -> Optimum | None:
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
    roots = [
        r
        for r in roots
        if r.is_positive or (r.is_real is not False and not r.is_zero and not r.is_negative)
    ]
    if not roots:
        return None
    return Optimum(var, sp.factor_terms(sp.simplify(roots[0])), partner, devices)


@budgeted
def balance_axis(
    groups: Sequence[sp.Expr], var: str, partner: str, devices: sp.Expr
) -> Optimum | None:
    """The revised training chapter's optimum of max(T_a, T_b): the `var` at which the two groups
    take equal time (one grows with var, the other shrinks)."""
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


def round_power_of_two(value: float, devices: float | None) -> int:
    """The power of two nearest `value` in log scale, between 1 and `devices`.

    >>> round_power_of_two(1618.0, 8960), round_power_of_two(0.3, 8)
    (2048, 1)
    """
    k = max(0, round(math.log2(value))) if value > 0 else 0
    best = 2**k
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
