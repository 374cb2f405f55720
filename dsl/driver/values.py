"""Numbers from a report's formulas: the one route from a formula (or a total's name, or a
formula's text) to a number, `value(report, expr, **bindings)`. Every number of a report is
computed at once by one walk over its formulas (`shardc.driver.evaluate`, the numbers
`sympy.lambdify` would give).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import sympy as sp

from shardc.driver.document import OP_FIELDS
from shardc.driver.evaluate import UNSUPPORTED, evaluate
from shardc.driver.formulas import code_printer
from shardc.lang.dtypes import NAMES as DTYPE_NAMES
from shardc.passes.memo import REPORT_FUNCTIONS, REPORT_VALUES
from shardc.passes.sizes import known_sizes
from shardc.passes.symbolic_plans import free_symbols
from shardc.passes.symbols import as_expr, hardware_values, size_symbol

if TYPE_CHECKING:
    from shardc.driver.report import Report

_UNSEEN: Any = object()


def environment(r: Report) -> dict[sp.Symbol, float]:
    """Numbers for every bound symbol: sizes, chip figures, then --set overrides (a copy)."""
    if r.memo.env is None:
        sizes = known_sizes((*r.program.dims, *r.program.mesh), r.bindings)
        env: dict[sp.Symbol, float] = {size_symbol(n): float(v) for n, v in sizes.items()}
        syms = r.cost.symbols
        if r.chip is not None:
            env.update(hardware_values(r.chip, syms, r.cost.matmul_precision))
        hw_by_name = {s.name: s for s in syms.all_for(set(DTYPE_NAMES))}
        for name, v in r.bindings.items():
            if name in hw_by_name or name not in sizes:
                env[hw_by_name.get(name, size_symbol(name))] = float(v)
        r.memo.env = env
    return dict(r.memo.env)


def evaluate_all(r: Report, exprs: list[sp.Expr]) -> None:
    """Every formula's value under the environment, computed by one walk over those no earlier
    report has evaluated under the same values (`passes.memo.REPORT_VALUES`: `Report.at`, the
    regions and a recompile evaluate the same formulas again)."""
    env = environment(r)
    cache = r.memo.values
    ready: list[sp.Expr] = []
    keys: list[tuple] = []
    # Distinct objects first (by id, no SymPy hash), then distinct formulas: a report lists
    # the same few objects tens of thousands of times.
    for e in dict.fromkeys({id(e): e for e in exprs}.values()):
        if e in cache:
            continue
        free = free_symbols(e)
        if not free <= env.keys():
            cache[e] = None
            continue
        key = (e, frozenset((s, env[s]) for s in free))
        seen = REPORT_VALUES.get(key, _UNSEEN)
        if seen is not _UNSEEN:
            cache[e] = seen
        else:
            ready.append(e)
            keys.append(key)
    if not ready:
        return
    # The walk gives lambdify's numbers bit for bit (shardc.driver.evaluate); a formula with a
    # node it does not know goes through lambdify.
    walked = evaluate(ready, env)
    rest = [(e, k) for e, k, v in zip(ready, keys, walked, strict=True) if v is UNSUPPORTED]
    for e, key, v in zip(ready, keys, walked, strict=True):
        if v is not UNSUPPORTED:
            cache[e] = REPORT_VALUES[key] = finite(v)
    if rest:
        _lambdify_all(r, [e for e, _ in rest], [k for _, k in rest], env)


def _lambdify_all(
    r: Report, ready: list[sp.Expr], keys: list[tuple], env: dict[sp.Symbol, float]
) -> None:
    """`ready`'s values through one generated function (kept for the same formulas)."""
    args = sorted({s for e in ready for s in free_symbols(e)}, key=lambda s: s.name)
    # The same formulas under other values (a plan's candidates, a size edited in a notebook):
    # the generated function is kept, keyed by the formulas.
    fkey = (tuple(ready), tuple(args))
    fn = REPORT_FUNCTIONS.get(fkey)
    if fn is None:
        fn = REPORT_FUNCTIONS[fkey] = sp.lambdify(
            args, ready, modules="math", printer=code_printer()
        )
    try:
        values = fn(*[env[a] for a in args])
    except ZeroDivisionError:
        # A formula divides by a cost that is 0 at these sizes (a ratio over the communication
        # of a mesh axis of one device): it has no number; the others do.
        values = [_divided(e, args, env) for e in ready]
    for e, key, v in zip(ready, keys, values, strict=True):
        r.memo.values[e] = REPORT_VALUES[key] = finite(v)


def names(r: Report) -> dict[str, sp.Symbol]:
    """Every name a binding or a formula may use: the program's dims and mesh axes, the names
    its formulas use, and the hardware figures (`C`, `W_ici`, `t_hop`, ...)."""
    if r.memo.names is None:
        out = {s.name: s for s in r.cost.symbols.all_for(set(DTYPE_NAMES))}
        for n, _ in (*r.program.dims, *r.program.mesh):
            out.setdefault(n, size_symbol(n))
        for e in r.totals.values():
            for s in as_expr(e).free_symbols:
                out.setdefault(s.name, s)
        r.memo.names = out
    return r.memo.names


def symbol(r: Report, name: str) -> sp.Symbol:
    """The symbol a name stands for in this report: a hardware figure, else a size."""
    hw = {s.name: s for s in r.cost.symbols.all_for(set(DTYPE_NAMES))}
    return hw.get(name, size_symbol(name))


def formula(r: Report, name_or_text: str) -> sp.Expr:
    """The formula of a total (`t_comms_s`) or of a formula's text over the report's names
    (`t_math_s / t_comms_s`, `2*B*D`): `KeyError` naming what is unknown,
    `shardc.driver.user_expr.ExprError` for text that is not a formula."""
    from shardc.driver.user_expr import formula as parse

    if name_or_text in r.totals:
        return as_expr(r.totals[name_or_text])
    known = names(r)
    expr = parse(name_or_text, lambda n: symbol(r, n))
    # A total's name inside a formula stands for the total (`t_math_s / t_comms_s`).
    totals = {
        s: as_expr(r.totals[s.name])
        for s in expr.free_symbols
        if s.name in r.totals and s.name not in known
    }
    bad = sorted({s.name for s in expr.free_symbols} - known.keys() - r.totals.keys())
    if bad:
        raise KeyError(
            f"unknown quantity {', '.join(map(repr, bad))} in {name_or_text!r}; "
            f"totals are {', '.join(r.totals)}; names are {', '.join(sorted(known))}"
        )
    return expr.xreplace(totals) if totals else expr


def override_env(
    r: Report, overrides: Mapping[str, float], own: tuple[sp.Symbol, ...] = ()
) -> dict[sp.Symbol, float]:
    """The environment with `overrides` bound, each name checked (`KeyError`, `ValueError`)."""
    from shardc.driver.mesh_limits import check_mesh_bindings

    env = environment(r)
    known = names(r)
    if own:  # a formula may bring names of its own (derive's N)
        known = {**{s.name: s for s in own}, **known}
    for k, v in overrides.items():
        if k not in known:
            raise KeyError(f"unknown name {k!r} to bind; names are {', '.join(sorted(known))}")
        env[known[k]] = binding(k, v)
    check_mesh_bindings(r, overrides)
    return env


def function(r: Report, expr: sp.Expr) -> tuple[tuple[sp.Symbol, ...], Callable[..., Any]]:
    """`expr` compiled once (`sp.lambdify` over numpy) with its arguments, sorted by name."""
    expr = as_expr(expr)
    hit = r.memo.functions.get(expr)
    if hit is None:
        args = tuple(sorted(expr.free_symbols, key=lambda s: s.name))
        hit = r.memo.functions[expr] = (args, sp.lambdify(args, expr, modules=["math", "numpy"]))
    return hit


def value(r: Report, expr: sp.Expr | str | float | int, **bindings: float) -> float | None:
    """An expression, a total's name or a formula's text, evaluated with the report's bindings
    and `bindings` on top, by the report's plans; None where a symbol has no number.
    `Report.value` is `points.value`, which asks a compile at the point where plans depend on
    the sizes bound."""
    if isinstance(expr, str):
        expr = formula(r, expr)
    expr = as_expr(expr)
    if bindings:
        args, fn = function(r, expr)
        env = override_env(r, bindings, args)
        if any(a not in env for a in args):
            return None
        return finite(fn(*[env[s] for s in args]))
    if expr not in r.memo.values:
        evaluate_all(r, [expr])
    return r.memo.values[expr]


def all_expressions(r: Report, conditions: bool = True) -> list[sp.Expr]:
    """Every formula of the report (`conditions=False`: not the conditions' sides, which are
    derived on first use)."""
    out: list[sp.Expr] = []
    for c in r.ops:
        out.extend(getattr(c, f) for _, f in OP_FIELDS)
        out.extend((c.t_bandwidth, c.t_latency))
    out.extend(r.totals.values())
    for a in r.cost.arrays:
        out.extend((a.bytes_per_device, a.bytes_total, a.count))
    for cond in r.conditions if conditions else ():
        out.extend((cond.relation.lhs, cond.relation.rhs))
    if r.memory is not None:
        m = r.memory
        out.extend((m.parameters, m.gradients, m.optimizer, m.activations, m.total))
    for c in r.ops:
        out.extend(x for _, x in c.levels)
        out.append(c.count)
        if c.crossover_bytes is not None:
            out.append(c.crossover_bytes)
    for b in r.cost.blocks:
        out.append(b.count)
        out.extend(b.per_iteration.values())
        out.extend(b.total.values())
    return [as_expr(e) for e in out]


def any_unfinite(r: Report) -> bool:
    """Whether a formula evaluated so far has a number for every symbol but no finite value
    (an overflow); the cheap first check of K003, before naming the formula."""
    env = environment(r).keys()
    return any(
        v is None and free_symbols(e) and free_symbols(e) <= env for e, v in r.memo.values.items()
    )


def binding(name: str, v: Any) -> float:
    """A keyword of `value`/`at` as a float, through the checked conversions every number of a
    report goes through (`shardc.lang.numeric`): a hardware figure in a chip figure's range
    (`C=0` would divide by zero), except that a latency (`t_hop`, `t_dcn`, ...) may be 0, which
    only drops the latency terms; anything else a size's point, above 0 to 2**63 - 1.
    `TypeError` or `ValueError` naming the keyword."""
    from shardc.lang.numeric import NumberError, figure, positive, real
    from shardc.passes.validate import is_hardware_name

    try:
        if is_hardware_name(name):
            if name.startswith("t_") and real(v, name) == 0:
                return 0.0
            return figure(v, f"hardware figure {name!r}")
        return positive(v, name)
    except NumberError as exc:  # a ValueError already: raised as one, without the chain
        raise ValueError(str(exc)) from None


def _divided(e: sp.Expr, args: list[sp.Symbol], env: dict[sp.Symbol, float]) -> float | None:
    """One formula's value, None where it divides by zero."""
    try:
        return sp.lambdify(args, e, modules="math", printer=code_printer())(*[env[a] for a in args])
    except ZeroDivisionError:
        return None


def finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


__all__ = [
    "all_expressions",
    "any_unfinite",
    "binding",
    "environment",
    "evaluate_all",
    "finite",
    "formula",
    "function",
    "names",
    "override_env",
    "symbol",
    "value",
]
